"""The public surface of bitextforge: everything a plugin (and a benchmark) may import, and nothing
else. ``docs/plugins.md`` lists it; ``tests/test_architecture.py`` checks that the built-in
plugins import nothing but this module, the package's top level and their own package.

Names load on first use (PEP 562): ``from bitextforge.api import within_bounds`` imports the
module that holds ``within_bounds`` and no other, so a plugin that needs one helper does not make
``bitextforge --version`` or a run import numpy, torch or the web page's libraries. Where a name
lives inside the package may change; its name here does not.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: public name -> the module (relative to the package) that holds it, grouped as docs/plugins.md
#: lists them
_HOMES: dict[str, str] = {
    # writing components: the base classes, their Report, the hook marker, the errors
    **{name: "components.base" for name in (
        "Component", "ComponentConfig", "Splitter", "Paraphraser", "Cleaner", "Generator",
        "Filter", "Weighter", "Evaluator", "Trainer", "Report")},
    "hookimpl": "components.hookspecs",
    **{name: "errors" for name in (
        "BitextforgeError", "RecipeError", "InputError", "RegistryError", "ComponentError",
        "StepError")},
    # declaring what a component reads, finding components, naming an extra
    "local_model": "components.paths",
    "get_registry": "components.registry",
    "install_hint": "components.extras",
    # reading and writing text, corpora and batches
    **{name: "io.corpus" for name in (
        "text_lines", "read_lines", "iter_lines", "read_parallel", "read_tsv_pairs",
        "open_binary", "write_atomic", "AtomicFile", "TsvWriter", "CorpusView", "ReadStats",
        "take_rows")},
    **{name: "io.sample" for name in ("reservoir", "iter_tsv_pairs", "sample_tsv_pairs")},
    **{name: "text_facts" for name in ("text_facts", "token_counts")},
    # deciding as a recipe's keep: does
    "KeepSpec": "recipe.step_models",
    "within_bounds": "pipeline.decide",
    # messages, progress and long calls
    **{name: "log" for name in ("say", "progress", "phase")},
    # devices and precision
    **{name: "hardware" for name in (
        "Precision", "autocast", "cpu_has_bf16", "cpu_state_dict", "ct2_device", "device_field",
        "resolve_device", "resolve_precision", "visible_gpus")},
    # what a component keeps across runs and batches
    "cache_root": "cache",
    **{name: "cache.memo" for name in ("Int64Table", "TextScoreMemo")},
    # child processes
    **{name: "processes" for name in (
        "die_with_parent", "scratch_dir", "worker_pool", "stop_pool")},
    # recipes inside a component (an evaluator that trains and runs one)
    **{name: "recipe.load" for name in (
        "load_recipe", "parse_recipe", "recipe_data", "dump_yaml", "score_column")},
    "FilterStep": "recipe.step_models",
    "run_recipe": "run",
    "score_parsed": "pipeline.scoring",
    # commands: a trainer's own command, and running a trainer
    **{name: "cli.commands" for name in ("trainer_command", "run_trainer")},
    # testing a plugin: the pytest fixture and the module it builds from classes
    **{name: "testing" for name in ("bitextforge_plugin", "plugin_module")},
}

#: what ``from bitextforge.api import *`` takes: all but the testing helpers, which need pytest
__all__ = sorted(name for name, home in _HOMES.items() if home != "testing")


def __getattr__(name: str) -> Any:
    """Load a public name from the module that holds it (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"..{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, for ``dir()`` and completion."""
    return sorted(_HOMES)


if TYPE_CHECKING:  # what a type checker and an editor see; at run time names load on first use
    from .cache import cache_root  # noqa: F401
    from .cache.memo import Int64Table, TextScoreMemo  # noqa: F401
    from .cli.commands import run_trainer, trainer_command  # noqa: F401
    from .components.base import (Cleaner, Component, ComponentConfig, Evaluator,  # noqa: F401
                                  Filter, Generator, Paraphraser, Report, Splitter, Trainer,
                                  Weighter)
    from .components.extras import install_hint  # noqa: F401
    from .components.hookspecs import hookimpl  # noqa: F401
    from .components.paths import local_model  # noqa: F401
    from .components.registry import get_registry  # noqa: F401
    from .errors import (BitextforgeError, ComponentError, InputError, RecipeError,  # noqa: F401
                         RegistryError, StepError)
    from .hardware import (Precision, autocast, cpu_has_bf16, cpu_state_dict,  # noqa: F401
                           ct2_device, device_field, resolve_device, resolve_precision,
                           visible_gpus)
    from .io.corpus import (AtomicFile, CorpusView, ReadStats, TsvWriter,  # noqa: F401
                            iter_lines, open_binary, read_lines, read_parallel, read_tsv_pairs,
                            take_rows, text_lines, write_atomic)
    from .io.sample import iter_tsv_pairs, reservoir, sample_tsv_pairs  # noqa: F401
    from .log import phase, progress, say  # noqa: F401
    from .pipeline.decide import within_bounds  # noqa: F401
    from .pipeline.scoring import score_parsed  # noqa: F401
    from .processes import die_with_parent, scratch_dir, stop_pool, worker_pool  # noqa: F401
    from .recipe.load import (dump_yaml, load_recipe, parse_recipe,  # noqa: F401
                              recipe_data, score_column)
    from .recipe.step_models import FilterStep, KeepSpec  # noqa: F401
    from .run import run_recipe  # noqa: F401
    from .testing import bitextforge_plugin, plugin_module  # noqa: F401
    from .text_facts import text_facts, token_counts  # noqa: F401
