"""Score cache: a filter's scores keyed by the content of the row, the component's name and
configuration, and the content of every file the component reads, so rerunning a recipe with a
changed threshold does not recompute model scores, and a retrained model never returns old ones.

One SQLite file per (component, config, files) under ``$BITEXTFORGE_CACHE/scores`` (default
``~/.cache/bitextforge/scores``; converted models live beside it), named
``<component>-<digest>.sqlite``. The digest is the SHA-256 of

- the component's name,
- its configuration with every default written out (JSON, sorted keys): a changed ``with:``
  option is another file, so every row is computed again,
- the identity of each path the component declares with
  :meth:`bitextforge.Component.input_paths`, by its ``with:`` key: a file's SHA-256, a
  directory's hash over every file inside (see :mod:`bitextforge.cache.identity`, which remembers file
  hashes so a big model is not read again while its size, times and inode are unchanged). A model,
  table or dictionary replaced at the same path is therefore another file too. Paths a component
  reads without declaring them (and hub ids) enter by name only, through the configuration.

Within the file, a row's key hashes every text and value column it carries except bookkeeping
(``id``, ``variant``, ``origin``, ``weight``) and the step's own score column, so a filter that
reads a paraphraser's extra column (``nll``) is keyed on it too, and a changed row is computed
again while unchanged rows are looked up. A bookkeeping column the filter's score depends on
(:meth:`bitextforge.Filter.cache_key_columns`: ``id`` for a model cross-fitted by row id) enters
the key too. Only scores that are a function of the row and the declared files may be cached: a
filter whose score depends on earlier rows (``dedupe.v1``), on the other rows of its batch
(``margin``/``csls`` neighbours, batch IDF weights) or on anything else the key leaves out says why
in :meth:`bitextforge.Filter.uncacheable`, is never cached by default, and a step asking to cache
it is refused at validation.

The cache never shrinks by itself: every changed option or model is a new file. Opening a file
marks it used (its modification time), so :func:`cache_files` lists each file with its rows, size
and last use (``bitextforge cache info``) and :func:`prune` removes those unused for a number of
days (``bitextforge cache prune --older-than DAYS``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ..io.corpus import Batch, batch_len, take_rows
from . import cache_root
from .identity import component_identity

BOOKKEEPING = {"id", "variant", "origin", "weight"}


def cache_dir() -> Path:
    """Where score caches live."""
    return cache_root() / "scores"


def cache_key(component) -> str:
    """SHA-256 (hex) of a built component's name, configuration and declared input files'
    content identity: what one cache file holds scores of."""
    cfg = json.dumps(component.config.model_dump(mode="json"), sort_keys=True)
    files = json.dumps(component_identity(component), sort_keys=True)
    return hashlib.sha256(f"{component.name}\n{cfg}\n{files}".encode()).hexdigest()


class ScoreCache:
    """Cached scores of one filter component with one configuration."""

    def __init__(self, component, own_column: str, directory: Path | None = None):
        """Open (or create) the cache file of ``component``'s name, config and input files."""
        digest = cache_key(component)[:16]
        d = directory or cache_dir()
        d.mkdir(parents=True, exist_ok=True)
        self.path = d / f"{component.name}-{digest}.sqlite"
        # opened here, used by the thread that runs the step (the local runner may give steps
        # threads of their own), closed here: one thread at a time, never two at once
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS s (k BLOB PRIMARY KEY, v REAL)")
        # a rerun that only looks scores up writes nothing: the time marks the file's last use,
        # which is what prune goes by
        os.utime(self.path)
        self.own = own_column
        self.keyed = set(component.cache_key_columns(component.config))
        self.hits = 0
        self.misses = 0

    def _keys(self, batch: Batch) -> list[bytes]:
        cols = sorted(c for c in batch
                      if (c not in BOOKKEEPING or c in self.keyed) and c != self.own)
        values = [batch[c] for c in cols]
        head = "\x1f".join(cols)
        return [hashlib.blake2b("\x1e".join([head, *map(repr, row)]).encode(), digest_size=16).digest()
                for row in zip(*values)]

    def score(self, batch: Batch, compute) -> list[float]:
        """Scores for ``batch``: cached ones looked up, the rest computed with ``compute(sub)``."""
        n = batch_len(batch)
        keys = self._keys(batch)
        found: dict[bytes, float] = {}
        for i in range(0, n, 500):
            chunk = keys[i:i + 500]
            q = f"SELECT k, v FROM s WHERE k IN ({','.join('?' * len(chunk))})"
            found.update((k, float("nan") if v is None else v)  # SQLite stores NaN as NULL
                         for k, v in self.db.execute(q, chunk).fetchall())
        missing = [i for i, k in enumerate(keys) if k not in found]
        self.hits += n - len(missing)
        self.misses += len(missing)
        if missing:
            sub = take_rows(batch, missing) if len(missing) < n else batch
            computed = [float(x) for x in compute(sub)]
            if len(computed) != len(missing):
                return computed  # let the caller report the length mismatch
            self.db.executemany("INSERT OR REPLACE INTO s VALUES (?, ?)",
                                [(keys[i], v) for i, v in zip(missing, computed)])
            self.db.commit()
            for i, v in zip(missing, computed):
                found[keys[i]] = v
        return [found[k] for k in keys]

    def close(self) -> None:
        """Close the database."""
        self.db.close()


#: a score cache file's name: ``<component>-<16 hex digits>.sqlite``
CACHE_FILE = re.compile(r"(?P<component>.+)-(?P<digest>[0-9a-f]{16})\.sqlite")


@dataclass
class CacheFile:
    """One score cache file as ``bitextforge cache info`` shows it."""

    path: Path
    component: str
    #: scores it holds (None when the file cannot be read as a score cache)
    rows: int | None
    #: bytes, its SQLite write-ahead log and shared-memory files included
    size: int
    #: when a run last opened it (seconds since the epoch)
    used: float

    def parts(self) -> list[Path]:
        """The file and the SQLite files beside it that belong to it."""
        return [self.path, *(self.path.with_name(self.path.name + s) for s in ("-wal", "-shm"))]


def cache_files(directory: Path | None = None) -> list[CacheFile]:
    """The score cache files under ``directory`` (default :func:`cache_dir`), least recently
    used first; none when it does not exist."""
    d = directory or cache_dir()
    out = []
    for path in sorted(d.glob("*.sqlite")) if d.is_dir() else ():
        m = CACHE_FILE.fullmatch(path.name)
        if not m:
            continue
        try:
            # the main file's time alone: the -wal and -shm files change while a run reads
            f = CacheFile(path, m["component"], None, 0, path.stat().st_mtime)
        except FileNotFoundError:  # removed meanwhile (another prune)
            continue
        for part in f.parts():
            try:
                f.size += part.stat().st_size
            except FileNotFoundError:
                pass
        try:
            # mode=rw creates nothing; unlike mode=ro, its close removes the -wal and -shm files
            # opening made, so a listing leaves the directory as it found it
            with sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True) as db:
                f.rows = db.execute("SELECT count(*) FROM s").fetchone()[0]
            db.close()
        except sqlite3.Error:
            pass
        out.append(f)
    return sorted(out, key=lambda f: (f.used, f.path.name))


def prune(older_than_days: float, directory: Path | None = None, dry_run: bool = False,
          now: float | None = None) -> list[CacheFile]:
    """Remove the score cache files no run has opened in ``older_than_days`` days (with their
    SQLite companions); return them. ``dry_run``: only return them."""
    limit = (time.time() if now is None else now) - older_than_days * 86400
    old = [f for f in cache_files(directory) if f.used < limit]
    if not dry_run:
        for f in old:
            for part in f.parts():
                part.unlink(missing_ok=True)
    return old
