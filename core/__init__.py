"""bitextforge: make machine-translation training data bigger and cleaner.

A parallel corpus goes through a recipe of steps: paraphrase one side, filter pairs by scores,
weight what remains, evaluate; trainers build the models those steps load. The component kinds
are plugins registered through pluggy hooks (see :mod:`bitextforge.components.hookspecs`), which
take what they need of the package from its public surface, :mod:`bitextforge.api`. The methods
come from Wieting et al. 2017, Wieting & Gimpel 2018 (ParaNMT-50M), Nichols et al. (ERG
paraphrasing), Kim et al. (bilingual sentence embeddings) and Corbeil & Abdi Ghavidel (BET).
"""

__version__ = "0.1.0"

from .components.base import (Cleaner, ComponentConfig, Evaluator, Filter, Generator,  # noqa: E402
                         Paraphraser, Report, Splitter, Trainer, Weighter)
from .errors import (BitextforgeError, ComponentError, InputError, RecipeError,  # noqa: E402
                     RegistryError)
from .components.hookspecs import hookimpl  # noqa: E402

__all__ = [
    "__version__", "hookimpl", "Splitter", "Paraphraser", "Generator", "Cleaner", "Filter", "Weighter", "Evaluator", "Trainer", "Report",
    "ComponentConfig", "BitextforgeError", "RecipeError", "InputError", "RegistryError",
    "ComponentError", "text_lines", "read_lines", "write_atomic", "AtomicFile", "CorpusView",
]

#: helpers a plugin may use, exported here so that plugins do not depend on where the core keeps
#: them (core/io/corpus.py); loaded on first use, as that module imports numpy, which
#: ``bitextforge --version`` must not
_LAZY = {name: "io.corpus" for name in
         ("text_lines", "read_lines", "write_atomic", "AtomicFile", "CorpusView")}


def __getattr__(name: str):
    """Load a lazily exported helper (PEP 562)."""
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
