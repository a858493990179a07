"""An example third-party bitextforge plugin: a Paraphraser, a Filter, a Trainer and a command.

It shows the whole contract: a versioned ``name``, a nested pydantic ``Config`` subclassing the
base's ``Config`` with described fields, batched methods, the declared extension points
(``cache_scores``, ``doctor()``), files read through the core reader, messages
through ``self.log``, and ``register_*`` hook implementations found through the ``bitextforge``
entry-point group: ``bitextforge train vocabulary.v1`` runs the trainer and
``bitextforge vocabulary-coverage`` is the plugin's own command.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field

import bitextforge
from bitextforge import Filter, Paraphraser, Trainer, text_lines, write_atomic

# (expanded, contracted) pairs; matched case-insensitively on word boundaries
_CONTRACTIONS = [
    ("do not", "don't"), ("does not", "doesn't"), ("did not", "didn't"), ("is not", "isn't"),
    ("are not", "aren't"), ("was not", "wasn't"), ("were not", "weren't"), ("cannot", "can't"),
    ("will not", "won't"), ("would not", "wouldn't"), ("could not", "couldn't"),
    ("should not", "shouldn't"), ("have not", "haven't"), ("has not", "hasn't"),
    ("it is", "it's"), ("that is", "that's"), ("there is", "there's"), ("I am", "I'm"),
    ("you are", "you're"), ("we are", "we're"), ("they are", "they're"), ("I will", "I'll"),
    ("we will", "we'll"), ("I have", "I've"), ("we have", "we've"), ("let us", "let's"),
]


def _compile(pairs, expand: bool):
    table = {}
    for long, short in pairs:
        src, dst = (short, long) if expand else (long, short)
        table[src.lower()] = dst
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True))
                         + r")\b", re.IGNORECASE)
    return pattern, table


def _keep_case(found: str, repl: str) -> str:
    return repl[0].upper() + repl[1:] if found[:1].isupper() else repl


class ContractionParaphraser(Paraphraser):
    """English paraphrases by contracting (``do not`` -> ``don't``) or expanding contractions.

    Returns up to two candidates per sentence: all contractions applied (score 1.0) and all
    expansions applied (score 0.9), each only when it differs from the input.
    """

    name = "contractions.v1"
    learned = False  # rules, not a trained model, write the text

    class Config(Paraphraser.Config):
        """Options of contractions.v1."""

        contract: bool = Field(True, description="Offer the contracted variant.")
        expand: bool = Field(True, description="Offer the expanded variant.")

    def __init__(self, config=None):
        """Compile the two rewrite patterns once."""
        super().__init__(config)
        self._contract = _compile(_CONTRACTIONS, expand=False)
        self._expand = _compile(_CONTRACTIONS, expand=True)

    @staticmethod
    def _apply(compiled, text: str) -> str:
        pattern, table = compiled
        return pattern.sub(lambda m: _keep_case(m.group(0), table[m.group(0).lower()]), text)

    def paraphrase(self, sentences):
        """Candidates per sentence, best first."""
        out = []
        for s in sentences:
            cands = []
            if "'" in s or " not" in s or " is" in s or " are" in s or " am" in s or " will" in s \
                    or " have" in s or "cannot" in s or "let us" in s.lower():
                if self.config.contract:
                    c = self._apply(self._contract, s)
                    if c != s:
                        cands.append((c, 1.0))
                if self.config.expand:
                    e = self._apply(self._expand, s)
                    if e != s and all(e != c for c, _ in cands):
                        cands.append((e, 0.9))
            out.append(cands)
        return out


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class NumberAgreementFilter(Filter):
    """Share of the numbers in a pair that occur on both sides (Jaccard of the two number sets).

    1.0 when neither side has a number. ``1.000`` and ``1,000`` count as the same number.
    """

    name = "number_agreement.v1"
    default_keep = {"min": 0.5}
    #: cheap and pure: no score cache unless a recipe step asks for one (``cache: true``)
    cache_scores = False

    class Config(Filter.Config):
        """Options of number_agreement.v1."""

        ignore_separators: bool = Field(True, description="Treat 1.000, 1,000 and 1000 alike.")

    def _numbers(self, text: str) -> set[str]:
        nums = _NUMBER.findall(text)
        if self.config.ignore_separators:
            nums = [n.replace(",", "").replace(".", "") for n in nums]
        return set(nums)

    def score(self, batch):
        """Jaccard similarity of the number sets of src and tgt."""
        out = []
        for s, t in zip(batch["src"], batch["tgt"]):
            a, b = self._numbers(s), self._numbers(t)
            union = a | b
            out.append(len(a & b) / len(union) if union else 1.0)
        return out


class VocabularyTrainer(Trainer):
    """Writes the distinct whitespace tokens of a text file, one per line, most frequent first
    (ties in alphabetical order); ``vocabulary-coverage`` then reports how much of a text the
    vocabulary covers."""

    name = "vocabulary.v1"

    class Config(Trainer.Config):
        """Options of vocabulary.v1."""

        text: str = Field(description="Text file to read, one sentence per line (.gz ok).")
        min_count: int = Field(1, ge=1, description="Leave out rarer tokens.")
        lowercase: bool = Field(False, description="Lowercase before counting.")

    @classmethod
    def doctor(cls):
        """Nothing external is needed; the check shows the format ``bitextforge doctor`` prints."""
        return [(True, "pure Python, no external tool", "")]

    def train(self):
        """Count the tokens and write the vocabulary."""
        c = self.config
        counts: dict[str, int] = {}
        for line in text_lines(c.text):
            for tok in (line.lower() if c.lowercase else line).split():
                counts[tok] = counts.get(tok, 0) + 1
        words = sorted((w for w, n in counts.items() if n >= c.min_count),
                       key=lambda w: (-counts[w], w))
        write_atomic(c.output, "".join(w + "\n" for w in words))
        self.log(f"{len(words)} tokens of {len(counts)} kept")
        return {"words": len(words)}


def coverage_command(parser):
    """``bitextforge vocabulary-coverage VOCAB TEXT``: share of TEXT's tokens in VOCAB."""
    parser.add_argument("vocabulary", help="a vocabulary file written by vocabulary.v1")
    parser.add_argument("text", help="text file to check (.gz ok)")

    def handler(args) -> int:
        vocab = set(text_lines(args.vocabulary))
        total = known = 0
        for line in text_lines(args.text):
            for tok in line.split():
                total += 1
                known += tok in vocab
        share = known / total if total else 0.0
        print(f"{known} of {total} tokens covered ({share:.1%}) by {Path(args.vocabulary).name}")
        return 0
    return handler


@bitextforge.hookimpl
def register_paraphrasers(register):
    """Register the example paraphraser."""
    register(ContractionParaphraser)


@bitextforge.hookimpl
def register_filters(register):
    """Register the example filter."""
    register(NumberAgreementFilter)


@bitextforge.hookimpl
def register_trainers(register):
    """Register the example trainer."""
    register(VocabularyTrainer)


@bitextforge.hookimpl
def register_commands(register):
    """Register the example command."""
    register("vocabulary-coverage", "share of a text's tokens in a vocabulary.v1 file",
             coverage_command)
