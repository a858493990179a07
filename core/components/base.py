"""Base classes of the component kinds: Splitter, Paraphraser, Cleaner, Filter, Weighter,
Evaluator, and Trainer (which builds the models the others load, in a recipe's ``prepare:`` list).

Every component has a stable versioned ``name`` (``"length_ratio.v1"``) independent of its class
name, and a nested pydantic ``Config`` (``extra="forbid"``, every field described) that subclasses
its base's ``Config``. The framework validates the recipe's ``with:`` mapping against ``Config`` and
builds the component as ``cls(config)``; the component reads ``self.config``.

Everything the framework asks of a component is declared here, on the base classes: the lifecycle
(``close``, ``get_state``/``set_state``, ``manifest_info``), ``stateful``, ``releases_gil``,
``extra`` and ``extras()``, ``doctor()``, a Paraphraser's ``extra_columns`` and ``reads_side``, a
Cleaner's ``pure``, a Filter's ``cache_scores``, ``uncacheable()``, ``cache_key_columns()``,
``default_keep`` and ``explains``. Nothing is looked up by ``getattr``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field


class ComponentConfig(BaseModel):
    """Base of every component's ``Config``: unknown keys are refused, never ignored, and so are
    infinite and NaN numbers (a weight or score option of ``.inf`` turns every result into
    ``inf`` or ``nan``); an option that means "no bound" by infinity says so with
    ``Field(allow_inf_nan=True)``."""

    # defer_build: a Config's validator is built when it first validates, not when its plugin
    # module is imported; a run validates the few components its recipe names, and building all
    # ~70 at start-up took most of the plugins' loading time
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


class Component(ABC):
    """Common behaviour of all components: a versioned name, a typed config, a lifecycle.

    The method that does a kind's work (``score``, ``paraphrase``, ``train``, ...) is abstract:
    the registry refuses a class that does not implement it when its plugin registers it."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig
    #: the result for a row depends on earlier rows (e.g. duplicates): the component sees every
    #: batch in input order in one process (under Ray, in the driver) and its scores are never
    #: cached; :meth:`get_state` carries what it has seen across resumed shards
    stateful: ClassVar[bool] = False
    #: the component's heavy work (scoring, and loading a model it starts loading in
    #: ``__init__``) runs in native code that releases the GIL (Rust, C++, torch): the local runner
    #: gives its step a thread of its own, so reading and the steps around it go on meanwhile
    releases_gil: ClassVar[bool] = False
    #: the optional dependency group of the component's package that it imports
    #: (``pip install 'bitextforge[nmt]'``); None: the package's core install is enough. A
    #: component whose extra is not installed is still listed, and refused with one line naming
    #: the extra when a recipe uses it (:mod:`bitextforge.components.extras`)
    extra: ClassVar[str | None] = None
    #: whether what a paraphraser or generator writes comes from a trained model (True) or from
    #: rules or a dictionary (False); None: not said. A warning about degenerate or collapsed
    #: output blames training only for a learned component.
    learned: ClassVar[bool | None] = None

    def __init__(self, config: ComponentConfig | None = None):
        """Keep the validated ``config`` (the class's ``Config`` defaults when omitted)."""
        self.config = config if config is not None else self.Config()

    @classmethod
    def input_paths(cls, config: ComponentConfig) -> dict[str, str | None]:
        """Files and directories this component will read with ``config``, by their key in its
        ``with:`` mapping (``{"model": "models/lm.bin", "tests[0][0]": "test.de"}``). The framework
        checks them all before any work starts (``bitextforge validate`` too) and lists every
        missing one at once; a path that an earlier ``prepare:`` entry writes is fine. The content
        of each (of every file inside a directory; :mod:`bitextforge.cache.identity`) also enters a
        filter's score cache key and the resume check of sharded runs, so declare every file the
        results depend on. Leave out values that may name something else (a hub id, a column).
        Empty by default."""
        return {}

    @classmethod
    def preflight(cls, config: ComponentConfig,
                  output_dir: Path | None) -> list[tuple[str | None, str]]:
        """Problems with ``config`` that can be seen before any work starts but are not missing
        files (those :meth:`input_paths` covers): ``(key, message)`` pairs, ``key`` the option
        in the ``with:`` mapping the problem is about (None: the component as a whole), which the
        framework prefixes with the recipe key. For example a shared model directory holding
        models of other settings, which would otherwise be found only after the corpus was made.
        ``output_dir`` is the run's output directory (None when there is none, as for
        ``bitextforge score``). Asked before ``prepare:`` trains anything, and by ``bitextforge
        validate``. Empty by default."""
        return []

    @classmethod
    def extras(cls, config: ComponentConfig | None = None) -> tuple[str, ...]:
        """The extras of its package the component needs with ``config`` (None: whatever the
        options, as listings show it): ``extra`` by default; a component whose options choose a
        library (a second backend) adds that library's extra."""
        return (cls.extra,) if cls.extra else ()

    def close(self) -> None:
        """Release models, processes or files. Called once when the run ends."""

    def get_state(self) -> Any:
        """State that later batches depend on (e.g. pairs seen so far), saved with each finished
        shard so a resumed run continues exactly; None for stateless components."""
        return None

    def set_state(self, state: Any) -> None:
        """Restore what :meth:`get_state` returned."""

    def manifest_info(self) -> dict[str, Any]:
        """Extra facts for the run manifest (counts, model versions). Empty by default. A
        component that wraps another names it as ``wraps``, and the run's step table shows both
        (``segmented.v1(length_ratio.v1)``)."""
        return {}

    def log(self, message: str) -> None:
        """Report a message on the run's one channel (stderr, prefixed with the component name)."""
        from ..log import say

        say(self.name, message)

    def progress(self, items, total: int | None = None, unit: str = " items"):
        """Iterate ``items`` behind a progress bar named after the component (quiet runs: none)."""
        from ..log import progress

        return progress(items, self.name, total=total, unit=unit)

    @classmethod
    def doctor(cls) -> list[tuple[bool, str, str]]:
        """Check what the component needs outside Python (binaries, model files) for
        ``bitextforge doctor``: ``(ok, what, hint)`` per check, the hint saying how to get what is
        missing. Empty by default (nothing external)."""
        return []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.config!r}>"


class Paraphraser(Component):
    """Produces ranked paraphrase candidates for a batch of sentences.

    The framework calls :meth:`paraphrase` with the text of the column the recipe step ``read``s
    (the paraphrased ``side`` itself by default) and turns the candidates into new rows: variant 0
    is the original row, variants 1.. are the candidates in rank order, the other side is kept.
    """

    kind: ClassVar[str] = "paraphraser"
    #: names of the extra per-candidate columns a candidate's info dict may carry (written as
    #: columns of the output; an undeclared key is an error)
    extra_columns: ClassVar[tuple[str, ...]] = ()
    #: also pass the current text of the replaced side as ``side=[...]`` (back-translation reads
    #: src, replaces tgt, and drops candidates equal to the current tgt)
    reads_side: ClassVar[bool] = False

    class Config(ComponentConfig):
        """Paraphrasers take no common options."""

    @abstractmethod
    def paraphrase(self, sentences: list[str], side: list[str] | None = None) -> list[list[tuple]]:
        """Return, for each sentence, its candidates best first as ``(text, score)`` tuples.

        A tuple may carry a third element, a dict of extra per-candidate columns named in
        ``extra_columns`` (for example ``{"pivot": "de"}`` or ``{"nll": 0.83}``); the framework
        writes them as columns and appends a ``"provenance"`` entry, if any, to the row's
        ``origin``. ``side`` is given only when ``reads_side`` is true.
        """


class Generator(Component):
    """Writes the missing side of monolingual rows (a recipe's ``generate:`` step): translation
    of target-language text back into the source language (back-translation, Sennrich et al.
    2016) or of source text forward (self-training).

    The framework calls :meth:`generate` with the texts of the side a row has, for the rows whose
    other side is empty, and turns each candidate into a row: the first keeps the row's id as
    variant 0, further candidates of the same sentence follow as variants 1.. of that id. A
    sentence without a candidate is rejected with the step's name, never dropped silently.
    """

    kind: ClassVar[str] = "generator"
    #: extra per-candidate columns a candidate's info dict may carry (as for a Paraphraser)
    extra_columns: ClassVar[tuple[str, ...]] = ()

    class Config(ComponentConfig):
        """Generators take no common options."""

    @abstractmethod
    def generate(self, sentences: list[str]) -> list[list[tuple]]:
        """Return, for each sentence, its generated texts best first as ``(text, score)`` tuples
        (a third element may be a dict of ``extra_columns`` values)."""

    def describe(self) -> str:
        """One line saying how the rows were made (model, decoding), written to each generated
        row's ``generated_by`` column."""
        return self.name


class Splitter(Component):
    """Replaces each sentence pair by the pairs it splits into (a recipe's ``split:`` step).

    Pieces become separate originals with fresh ids; the row they came from is kept in
    ``source_id``. Runs before paraphrase and weight steps.
    """

    kind: ClassVar[str] = "splitter"

    class Config(ComponentConfig):
        """Splitters take no common options."""

    @abstractmethod
    def split(self, batch: Mapping[str, Sequence[Any]]) -> list[list[tuple[str, str]]]:
        """Return, for each row of ``batch``, its ``(src, tgt)`` pieces; an empty list or one
        piece keeps the row whole."""


class Cleaner(Component):
    """Changes the text of one side (a recipe's ``clean:`` step): repairs mojibake, decodes HTML,
    normalises punctuation or Unicode, unwraps quotes.

    The framework calls :meth:`clean` once per side the step cleans and records every row whose
    text changed (counts in the manifest, before and after in ``cleaned.tsv``).
    """

    kind: ClassVar[str] = "cleaner"
    #: the cleaned text depends on the text and the config alone: the framework cleans each
    #: distinct text of a batch once and remembers recent results across batches
    pure: ClassVar[bool] = True

    class Config(ComponentConfig):
        """Cleaners take no common options."""

    @abstractmethod
    def clean(self, texts: list[str], side: str) -> list[str]:
        """Return the cleaned text of every text of column ``side`` (``"src"`` or ``"tgt"``, so a
        cleaner with per-language rules knows which language it reads), in order."""


class Filter(Component):
    """Scores sentence pairs; the recipe's ``keep:`` decides which rows survive.

    Scoring and deciding are separate (as in OpusFilter's ``score``/``accept``), so thresholds can
    be tuned without rescoring. ``default_keep`` applies when a recipe step gives no ``keep``.
    """

    kind: ClassVar[str] = "filter"
    default_keep: ClassVar[dict[str, Any] | None] = None
    #: cache scores by row content, config and the content of the files :meth:`input_paths`
    #: declares, by default (worth it for expensive, pure filters; every built-in leaves it off);
    #: a recipe step's ``cache:`` overrides it, unless :meth:`uncacheable` gives a reason
    cache_scores: ClassVar[bool] = False
    #: :meth:`reason` names why a score rejects its row (a composite of rules: the rule that
    #: fired); the name is added to the row's ``rejected_by`` and counted per step
    explains: ClassVar[bool] = False

    class Config(ComponentConfig):
        """Filters take no common options."""

    @classmethod
    def uncacheable(cls, config: ComponentConfig) -> str | None:
        """Why scores with ``config`` cannot be cached, as a clause that follows "cannot be
        cached:" (``"it takes each row's neighbours from the other rows of its batch"``), or None
        when a row's score is a function of its own columns (with :meth:`cache_key_columns`) and
        the files :meth:`input_paths` declares alone. A recipe step asking to cache such scores is
        refused at validation with this reason, and ``cache_scores`` does not apply. By default a
        :attr:`stateful` filter's scores depend on earlier rows; a filter whose score depends on
        the other rows of its batch, on a corpus-wide statistic or on anything else the cache key
        leaves out says so here."""
        return "its scores depend on earlier rows" if cls.stateful else None

    @classmethod
    def cache_key_columns(cls, config: ComponentConfig) -> tuple[str, ...]:
        """Columns the score cache would leave out of a row's key (the bookkeeping ``id``,
        ``variant``, ``origin``, ``weight``) that a score with ``config`` depends on; they enter
        the key, so a cached score is only found again for the same values (``("id",)`` for a
        model cross-fitted by row id). None by default (an empty tuple)."""
        return ()

    def reason(self, score: float) -> str:
        """Why ``score`` rejected its row, in a word (only asked when :attr:`explains`)."""
        raise NotImplementedError

    @abstractmethod
    def score(self, batch: Mapping[str, Sequence[Any]]) -> Sequence[float]:
        """Return one float per row of ``batch`` (``batch["src"]``, ``batch["tgt"]`` are str lists)."""


class Weighter(Component):
    """Turns each group of rows (one original and its paraphrases) into weighted training rows."""

    kind: ClassVar[str] = "weighter"

    class Config(ComponentConfig):
        """Weighters take no common options."""

    @abstractmethod
    def weight(self, group: list[dict[str, Any]]) -> list[tuple[int, float]]:
        """Return ``(index into group, weight)`` pairs; indices may repeat (row replication).

        ``group`` holds the rows of one original, ranked: the original (variant 0) first when it
        survived the filters, then its paraphrases in rank order.
        """


@dataclass
class Report:
    """What an Evaluator returns: named numbers, optional per-item values and a short summary."""

    numbers: dict[str, float] = field(default_factory=dict)
    items: dict[str, list[float]] = field(default_factory=dict)
    summary: str = ""

    def to_dict(self, with_items: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; per-item values only when ``with_items`` (they can be long)."""
        out: dict[str, Any] = {"numbers": dict(self.numbers), "summary": self.summary}
        if with_items:
            out["items"] = {k: list(v) for k, v in self.items.items()}
        return out


class Evaluator(Component):
    """Reads the final corpus (and any references or labels named in its config) and reports."""

    kind: ClassVar[str] = "evaluator"

    class Config(ComponentConfig):
        """Evaluators take no common options."""

    @abstractmethod
    def evaluate(self, corpus) -> Report:
        """Return a :class:`Report` for ``corpus`` (a :class:`bitextforge.io.corpus.CorpusView`)."""


class Trainer(Component):
    """Builds a model file or directory that later steps load: an NMT model for
    ``backtranslate.v1``, a KenLM model for ``kenlm_perplexity.v1``, and so on.

    A recipe lists trainers under ``prepare:``; they run before the first line is read. The
    framework builds the trainer with ``output`` pointing at a temporary name beside the final one
    and moves every path of :meth:`outputs` into place only when :meth:`train` returns, so a killed
    training never leaves something that looks finished. A trainer whose outputs all exist is
    skipped (``force: true`` retrains), which makes a recipe that trains its own models cheap to
    run again; the options a model was trained with are kept beside it, and a recipe that asks
    for the same output with other options is refused instead of silently given the old model.
    """

    kind: ClassVar[str] = "trainer"
    #: the trainer continues a state that an interrupted training left in its ``output`` (a
    #: killed run's temporary output is then handed to the next run instead of removed)
    resumable: ClassVar[bool] = False
    #: options that say how the training runs, not what it learns (``threads`` and ``device``
    #: always count as such): a finished model is reused when only these differ from the
    #: options it was trained with, and refused when another option does
    run_options: ClassVar[frozenset[str]] = frozenset()

    class Config(ComponentConfig):
        """Every trainer writes to ``output``."""

        output: str = Field(description="Model file or directory to write.")

    @classmethod
    def describe_unfinished(cls, directory: Path) -> str | None:
        """For a :attr:`resumable` trainer: what an unfinished output ``directory`` holds, said
        for ``bitextforge status`` (the update its saved state continues from); None when it
        holds no state of this trainer."""
        return None

    def outputs(self) -> list[Path]:
        """Every path :meth:`train` writes (``output`` by default; add sidecar files)."""
        return [Path(self.config.output)]

    @abstractmethod
    def train(self) -> dict[str, Any]:
        """Build the outputs; return facts for the run manifest (sizes, minutes, scores)."""

