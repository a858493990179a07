"""HPSG paraphrasing with the English Resource Grammar: parse to MRS, generate every realization.

Implements section 4.1 of Nichols, Bond, Appling & Matsumoto, *Paraphrasing Training Data for
Statistical Machine Translation*: parse each English sentence with the ERG (robust root), take the
top-ranked MRS, generate every realization the grammar allows from it (strict root), rank them by
the generator's score, lowercase-dedupe, drop those identical to the input and return the top
n with their generation scores. Each paraphrase is labelled lexical, syntactic or both, as in the
paper's Figure 3. ACE runs through pydelphin (:mod:`bitextforge.plugins.erg.ace`).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import Field

from bitextforge import ComponentError, Paraphraser

from .ace import (AceSession, AceTimeout, ace_hint, ace_version, grammar_hint, resolve_ace,
                  resolve_grammar)

_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Lowercased word and punctuation tokens, for comparing a paraphrase with its input."""
    return _WORD.findall(text.lower())


def _shared_order_differs(a: list[str], b: list[str]) -> bool:
    common = Counter(a) & Counter(b)

    def shared(seq):
        left = Counter(common)
        out = []
        for t in seq:
            if left[t] > 0:
                left[t] -= 1
                out.append(t)
        return out

    return shared(a) != shared(b)


def _skeleton(node) -> tuple:
    """The syntactic constructions of an ERG derivation (rules named ``*_c``, and the root) as a
    nested tuple, with lexical entries and lexical rules collapsed to ``*``: two derivations with
    the same skeleton combine their words the same way."""
    from delphin.derivation import UDFNode

    kids = [d for d in node.daughters if isinstance(d, UDFNode)]
    if not kids:
        return ("*",)
    inner = tuple(_skeleton(d) for d in kids)
    name = node.entity or ""
    if name.endswith("_c") or node.is_root():
        return (name, inner)
    return inner[0] if len(inner) == 1 else ("", inner)


def change_label(original: str, paraphrase: str, original_derivation: str | None = None,
                 paraphrase_derivation: str | None = None) -> str:
    """``lexical``, ``syntactic``, ``both`` or ``none``, as in Nichols et al.'s Figure 3.

    With both ERG derivations (ACE reports them for parses and realizations), as in the paper:
    lexical = the multisets of lexical entries differ; syntactic = the parse trees differ in their
    constructions or in the order of the shared lexical entries. Without derivations, the same on
    the surface: lexical = the multisets of lowercased words differ; syntactic = the shared words
    come in another order (a moved adverb is syntactic, *everybody* -> *everyone* lexical).
    """
    if original_derivation and paraphrase_derivation:
        from delphin import derivation

        try:
            da = derivation.from_string(original_derivation)
            db = derivation.from_string(paraphrase_derivation)
        except Exception:  # unreadable derivation text: fall back to the surface strings
            da = db = None
        if da is not None:
            a = [p.entity for p in da.preterminals()]
            b = [p.entity for p in db.preterminals()]
            lexical = Counter(a) != Counter(b)
            syntactic = _skeleton(da) != _skeleton(db) or _shared_order_differs(a, b)
            return _label(lexical, syntactic)
    a, b = tokens(original), tokens(paraphrase)
    return _label(Counter(a) != Counter(b), _shared_order_differs(a, b))


def _label(lexical: bool, syntactic: bool) -> str:
    if lexical and syntactic:
        return "both"
    if lexical:
        return "lexical"
    if syntactic:
        return "syntactic"
    return "none"


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def rank_realizations(original: str, results: list[dict[str, Any]], n: int
                      ) -> tuple[list[tuple[str, float, str | None]], int]:
    """Realizations best first, lowercase-deduplicated, without the input; the top ``n``.

    ``results`` are pydelphin result dicts (``surface`` and, when ACE reports it, ``score`` or
    ``flags`` with ``ascore``; ACE's itsdb.c prints ``(:score . %f)`` per realization) and
    ``derivation``. Realizations are ordered by score (best first); a missing score becomes minus
    the rank, so ACE's order is kept. Returns the kept ``(text, score, derivation or None)``
    triples and the number of distinct paraphrases before the cut to ``n``.
    """
    scored = []
    for rank, res in enumerate(results):
        surface = (res.get("surface") or "").strip()
        if not surface:
            continue
        scored.append((surface, _score(res, rank), rank, res.get("derivation")))
    scored.sort(key=lambda x: (-x[1], x[2]))
    seen = {_norm(original)}
    out = []
    for surface, score, _, deriv in scored:
        key = _norm(surface)
        if key in seen:
            continue
        seen.add(key)
        out.append((surface, score, deriv))
    return out[:n], len(out)


def _score(res: dict[str, Any], rank: int) -> float:
    for key in ("score", "ascore"):
        if key in res:
            try:
                return float(res[key])
            except (TypeError, ValueError):
                pass
    flags = res.get("flags")
    if isinstance(flags, (list, tuple)):
        for item in flags:
            if isinstance(item, (list, tuple)) and len(item) == 2 and item[0] == ":ascore":
                return float(item[1])
    return -float(rank)


def check_mrs(m, level: str) -> str | None:
    """Why ``m`` (a pydelphin MRS) must not go to the generator, or None when it may.

    ``full`` is :func:`delphin.mrs.is_well_formed` (connected, intrinsic variable property,
    plausibly scoping); ``basic`` drops the scoping heuristic; ``off`` checks nothing. An
    ill-formed MRS can make ACE's generator search forever, hence the check before sending.
    """
    from delphin import mrs as M

    if level == "off":
        return None
    if not m.rels:
        return "empty MRS"
    if not M.is_connected(m):
        return "not connected"
    if not M.has_intrinsic_variable_property(m):
        return "intrinsic variable property violated"
    if level == "full" and not M.plausibly_scopes(m):
        return "does not plausibly scope"
    return None


class ErgParaphraser(Paraphraser):
    """Paraphrases English sentences by parsing them with the ERG and generating from the MRS.

    Nichols, Bond, Appling & Matsumoto, section 4.1: parse (robust root) -> top-ranked MRS ->
    well-formedness check -> generate (strict root) -> realizations in the generator's rank order,
    lowercase-deduplicated, the input itself dropped, top ``n`` with their scores. Needs ACE and a
    compiled ERG image (``bitextforge doctor`` says where to get them). The extra column
    ``change`` and the origin suffix label each paraphrase lexical, syntactic or both (Figure 3).
    The manifest reports parsed / generated / distinct-paraphrase / timeout / no-parse counts.
    """

    name = "erg.v1"
    learned = False  # a grammar, not a trained model, writes the text
    extra = "erg"
    extra_columns: ClassVar[tuple[str, ...]] = ("change",)

    class Config(Paraphraser.Config):
        """Options of erg.v1."""

        ace: str | None = Field(None, description="ACE executable; default: $BITEXTFORGE_ACE, "
                                "'ace' in ~/.config/bitextforge/erg.toml, then ace on PATH.")
        grammar: str | None = Field(None, description="Compiled ERG image (erg.dat) matching "
                                    "the ACE version; default: $BITEXTFORGE_ERG, 'grammar' in "
                                    "~/.config/bitextforge/erg.toml, then "
                                    "~/.local/share/bitextforge/erg.dat.")
        n: int = Field(8, ge=1, description="Paraphrases returned per sentence (the paper's n; "
                       "the expansion step decides how many rows to use).")
        parse_roots: list[str] = Field(["root_strict", "root_informal"], description="ACE -r "
                                       "roots for parsing; the ERG's root_informal is its robust "
                                       "root (the paper parses robustly).")
        generate_roots: list[str] = Field(["root_strict"], description="ACE -r roots for "
                                          "generation (the paper generates strictly).")
        parses: int = Field(1, ge=1, description="Parses ACE returns (-n); the top-ranked MRS is "
                            "used.")
        realizations: int = Field(50, ge=1, description="Realizations ACE returns per MRS (-n), "
                                  "before deduplication.")
        timeout: float = Field(20.0, gt=0, description="Seconds per sentence for parsing and "
                               "again for generating; a hung ACE is killed and restarted.")
        max_words: int = Field(40, ge=1, description="Sentences with more whitespace tokens are "
                               "not sent to ACE (the paper's SMT cleaning used 40).")
        wellformed: Literal["full", "basic", "off"] = Field("full", description="MRS check "
                                "before generating: full (delphin.mrs.is_well_formed), basic "
                                "(connected + intrinsic variables) or off.")
        max_chart_megabytes: int | None = Field(None, ge=1, description="ACE "
                                                "--max-chart-megabytes (ACE default 1200).")
        max_unpack_megabytes: int | None = Field(None, ge=1, description="ACE "
                                                 "--max-unpack-megabytes (ACE default 1500).")

    COUNTERS: ClassVar[tuple[str, ...]] = (
        "sentences", "too_long", "parsed", "no_parse", "ill_formed", "generated",
        "no_generation", "with_distinct_paraphrase", "parse_timeouts", "generate_timeouts",
        "paraphrases")

    @classmethod
    def doctor(cls) -> list[tuple[bool, str, str]]:
        """Is ACE runnable and is an ERG image present? With download instructions if not."""
        out = []
        try:
            ace = resolve_ace(None)
        except ComponentError as exc:
            return [(False, "ERG settings file", str(exc))]
        if ace.path is None:
            out.append((False, "ACE executable (not configured and not on PATH)", ace_hint()))
        else:
            try:
                version = ace_version(ace.path)
                out.append((True, f"ACE {version} at {ace.path} (from {ace.source})", ""))
            except ComponentError as exc:
                out.append((False, f"ACE at {ace.path} (from {ace.source}): {exc}", ace_hint()))
        gram = resolve_grammar(None)
        if gram.path is None:
            out.append((False, "ERG grammar image (not configured; no "
                        "~/.local/share/bitextforge/erg.dat)", grammar_hint()))
        else:
            ok = os.path.isfile(gram.path) and os.path.getsize(gram.path) > 0
            what = f"ERG grammar image {gram.path} (from {gram.source})"
            out.append((ok, what if ok else what + ": missing or empty", "" if ok else
                        grammar_hint()))
        return out

    @classmethod
    def input_paths(cls, config):
        """The grammar image when the recipe names one (``ace`` may be a command on PATH, and the
        defaults come from the environment, so neither is checked here)."""
        return {"grammar": config.grammar}

    def __init__(self, config=None):
        """Resolve and check the ACE and grammar paths; ACE itself starts on first use."""
        super().__init__(config)
        c = self.config
        ace = resolve_ace(c.ace)
        if ace.path is None:
            raise ComponentError("erg.v1: no ACE executable configured (option 'ace', "
                                 "$BITEXTFORGE_ACE, ~/.config/bitextforge/erg.toml or PATH); "
                                 "`bitextforge doctor` says where to download it")
        gram = resolve_grammar(c.grammar)
        if gram.path is None:
            raise ComponentError("erg.v1: no ERG grammar image configured (option 'grammar', "
                                 "$BITEXTFORGE_ERG, ~/.config/bitextforge/erg.toml or "
                                 "~/.local/share/bitextforge/erg.dat); `bitextforge doctor` says "
                                 "where to download it")
        if not os.path.isfile(gram.path):
            raise ComponentError(f"erg.v1: grammar image {gram.path} (from {gram.source}) does "
                                 f"not exist; run `bitextforge doctor` for where to get it")
        self.ace_path, self.grammar_path = ace.path, gram.path
        self.ace_version = ace_version(ace.path)
        limits = []
        if c.max_chart_megabytes:
            limits += ["--max-chart-megabytes", str(c.max_chart_megabytes)]
        if c.max_unpack_megabytes:
            limits += ["--max-unpack-megabytes", str(c.max_unpack_megabytes)]
        self.parser = AceSession("parse", gram.path, ace.path,
                                 ["-n", str(c.parses), "-r", " ".join(c.parse_roots), *limits],
                                 c.timeout)
        self.generator = AceSession("generate", gram.path, ace.path,
                                    ["-n", str(c.realizations), "-r",
                                     " ".join(c.generate_roots), *limits], c.timeout)
        self.counts = Counter({k: 0 for k in self.COUNTERS})
        self.last_derivation: str | None = None
        self.labels: Counter = Counter()
        self.distinct_at_least: Counter = Counter()

    def __getstate__(self):
        """Ship the component to another worker without its ACE processes (they restart there)."""
        state = dict(self.__dict__)
        for key in ("parser", "generator"):
            s = state[key]
            state[key] = AceSession(s.kind, s.grammar, s.executable, s.cmdargs, s.timeout)
        return state

    # -- the pipeline, one sentence at a time (ACE answers one item per request) --

    def parse_top(self, sentence: str):
        """The top-ranked MRS of ``sentence`` (a pydelphin MRS), or None; counts the outcome.

        The derivation of that parse, when ACE reports one, is kept in ``self.last_derivation``
        for the Figure 3 labels."""
        from delphin.codecs import simplemrs

        try:
            response = self.parser.interact(sentence)
        except AceTimeout:
            self.counts["parse_timeouts"] += 1
            return None
        results = response.get("results") or []
        mrs_text = results[0].get("mrs") if results else None
        self.last_derivation = results[0].get("derivation") if results else None
        if not mrs_text:
            self.counts["no_parse"] += 1
            return None
        try:
            m = simplemrs.decode(mrs_text)
        except Exception:  # pydelphin raises several error types for unreadable MRS text
            self.counts["no_parse"] += 1
            return None
        self.counts["parsed"] += 1
        return m

    def generate(self, m) -> list[dict[str, Any]] | None:
        """Realizations of MRS ``m`` (pydelphin result dicts), or None on ill-formed/timeout."""
        from delphin.codecs import simplemrs

        if check_mrs(m, self.config.wellformed) is not None:
            self.counts["ill_formed"] += 1
            return None
        try:
            response = self.generator.interact(simplemrs.encode(m))
        except AceTimeout:
            self.counts["generate_timeouts"] += 1
            return None
        return list(response.get("results") or [])

    def paraphrase_one(self, sentence: str) -> list[tuple]:
        """Candidates for one sentence, best first, each ``(text, score, {"change", provenance})``."""
        c = self.config
        self.counts["sentences"] += 1
        if not sentence.strip():
            self.counts["no_parse"] += 1
            return []
        if len(sentence.split()) > c.max_words:
            self.counts["too_long"] += 1
            return []
        m = self.parse_top(sentence)
        if m is None:
            return []
        results = self.generate(m)
        if not results:
            if results is not None:
                self.counts["no_generation"] += 1
            return []
        self.counts["generated"] += 1
        kept, distinct = rank_realizations(sentence, results, c.n)
        for k in range(1, min(distinct, 10) + 1):
            self.distinct_at_least[k] += 1
        if distinct:
            self.counts["with_distinct_paraphrase"] += 1
        out = []
        for text, score, deriv in kept:
            label = change_label(sentence, text, self.last_derivation, deriv)
            self.labels[label] += 1
            out.append((text, score, {"change": label, "provenance": label}))
        self.counts["paraphrases"] += len(out)
        return out

    def paraphrase(self, sentences: list[str]) -> list[list[tuple]]:
        """Paraphrase each sentence (see :meth:`paraphrase_one`)."""
        return [self.paraphrase_one(s) for s in sentences]

    def manifest_info(self) -> dict[str, Any]:
        """Counts and percentages comparable to the paper's (87.1% parsed, 83.4% generated,
        53.4% with a distinct paraphrase on Tanaka), plus paraphrase types (Figure 3)."""
        n = self.counts["sentences"]

        def pct(k):
            return round(100.0 * k / n, 1) if n else 0.0

        info: dict[str, Any] = {k: self.counts[k] for k in self.COUNTERS}
        info["timeouts"] = self.counts["parse_timeouts"] + self.counts["generate_timeouts"]
        info["percent"] = {k: pct(self.counts[k]) for k in (
            "parsed", "generated", "with_distinct_paraphrase", "no_parse", "too_long")}
        info["percent"]["timeouts"] = pct(info["timeouts"])
        info["distinct_at_least"] = {str(k): self.distinct_at_least[k] for k in
                                     sorted(self.distinct_at_least)}
        info["change"] = dict(sorted(self.labels.items()))
        info["ace"] = {"version": self.ace_version, "executable": self.ace_path,
                       "grammar": self.grammar_path,
                       "restarts": self.parser.restarts + self.generator.restarts}
        return info

    def close(self) -> None:
        """Stop both ACE processes."""
        self.parser.close()
        self.generator.close()
