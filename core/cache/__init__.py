"""What a run keeps so that it does not compute twice: the score cache across runs
(:mod:`.scores`), the content identity of the files a component reads (:mod:`.identity`), and
in-run tables of keys and text scores (:mod:`.memo`).

Everything bitextforge keeps for the user across runs lives under one root,
:func:`cache_root`: the score caches, the remembered file hashes and the CTranslate2 conversions of
models."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The user cache of bitextforge: ``$BITEXTFORGE_CACHE``, else
    ``$XDG_CACHE_HOME/bitextforge`` (default ``~/.cache/bitextforge``)."""
    env = os.environ.get("BITEXTFORGE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "bitextforge"
