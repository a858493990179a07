"""Content identity of the files a component reads, so that a model replaced at the same path is
never taken for the old one.

The score cache (:mod:`bitextforge.cache.scores`) and the resume check of sharded runs
(:func:`bitextforge.pipeline.shards.input_fingerprint`) both call :func:`component_identity`: every path a
component declares with :meth:`bitextforge.Component.input_paths` (lists and mappings of paths
included) enters as the identity of what is there now:

- a file: ``sha256:<hex>`` of its bytes;
- a directory (a model folder): ``dir:<hex>``, the SHA-256 of the sorted list of the relative
  path and SHA-256 of every file inside, recursively (symbolic links followed, each directory
  once); names starting with ``.`` are left out, as they are temporary files of a write in
  progress (a CTranslate2 conversion's ``.ct2-*``) or version-control folders;
- a declared path that does not exist: ``absent``; a key whose value is None is left out;
- the settings file a trainer writes beside a declared file (``<path>.json``), when there is one,
  under ``<key>.json``;
- a file or directory that cannot be read through (permissions): ``unreadable:`` and its own
  size, times, inode and device.

Hashing a large model on every run would cost seconds to minutes, so each file's hash is
remembered in a small SQLite sidecar, ``identities.sqlite`` beside the score caches
(``$BITEXTFORGE_CACHE`` or ``~/.cache/bitextforge``), under its absolute path together with its
size, modification time, change time, inode and device. The remembered hash is used only while all
five are unchanged; any difference (a retrained model written in place or renamed over the old
one, a copy, ``touch``) hashes the file again. A file changed within the last two seconds is
hashed every time and not remembered, since a rewrite within the file system's timestamp
resolution could leave all five unchanged. A sidecar that cannot be written (a read-only cache
directory) only costs time: the files are then hashed on every run.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path
from typing import Any, Iterable

from . import cache_root
from ..components.paths import flatten

ABSENT = "absent"
#: a file modified this recently (seconds) is not remembered: its timestamps might not change
#: when it is rewritten again
RACY_SECONDS = 2.0


def sidecar_path() -> Path:
    """Where remembered file hashes live (beside the score caches)."""
    return cache_root() / "identities.sqlite"


def declared_paths(component_cls, config) -> list[tuple[str, str]]:
    """``(key, path)`` for every path ``component_cls.input_paths(config)`` declares, nested
    lists and mappings flattened (``tests[0][1]``, ``files.train``); None values left out."""
    return [(key, str(value)) for key, value in flatten(component_cls.input_paths(config))
            if value is not None]


#: the suffix of the settings file a trainer writes beside a model (``lm.bin.json``: KenLM's
#: tokenisation and lowercasing, a classifier's features): it changes the scores as much as the
#: model does
SETTINGS_SUFFIX = ".json"


def component_identity(component) -> dict[str, str]:
    """The identity of every path a built component declares, by its key in ``with:``, and of
    the settings file beside each declared file (``<path>.json``, under ``<key>.json``) where
    there is one: a sidecar edited between two runs changes the scores as a new model does."""
    paths = declared_paths(type(component), component.config)
    if not paths:
        return {}
    with _Sidecar() as sidecar:
        out = {}
        for key, path in paths:
            p = Path(path).expanduser()
            out[key] = _identity(p, sidecar)
            settings = p.with_name(p.name + SETTINGS_SUFFIX)
            if p.suffix != SETTINGS_SUFFIX and settings.is_file():
                out[key + SETTINGS_SUFFIX] = _identity(settings, sidecar)
        return out


def path_identity(path: str | os.PathLike, announce=None) -> str:
    """The identity of one file or directory (``absent`` when there is nothing at ``path``);
    ``announce(file, size)``, if given, is called before each file that is read to be hashed
    (one whose hash is not remembered), so that a caller can say why a large file takes time."""
    with _Sidecar() as sidecar:
        sidecar.announce = announce
        return _identity(Path(path).expanduser(), sidecar)


def _identity(path: Path, sidecar: "_Sidecar") -> str:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ABSENT
    try:
        if stat.S_ISDIR(st.st_mode):
            h = hashlib.sha256()
            for rel, digest in _tree(path, sidecar, set()):
                h.update(f"{rel}\0{digest}\n".encode())
            return "dir:" + h.hexdigest()
        return "sha256:" + _file_hash(path, st, sidecar)
    except OSError:
        # something inside cannot be read (permissions): the component reports it if it needs
        # it; the identity falls back to what can be seen of the path itself
        return "unreadable:" + ":".join(map(str, _signature(st)))


def _tree(root: Path, sidecar: "_Sidecar", seen: set, prefix: str = "") -> Iterable[tuple[str, str]]:
    """``(relative path, hash)`` of every file under ``root``, in sorted order."""
    st = os.stat(root)
    if (st.st_dev, st.st_ino) in seen:  # a link back up the tree
        return
    seen.add((st.st_dev, st.st_ino))
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        try:
            est = os.stat(entry.path)
        except FileNotFoundError:  # a dangling link: nothing is read through it
            continue
        rel = prefix + entry.name
        if stat.S_ISDIR(est.st_mode):
            yield from _tree(Path(entry.path), sidecar, seen, rel + "/")
        else:
            yield rel, _file_hash(Path(entry.path), est, sidecar)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a file's bytes (read in 1 MiB blocks), remembered nowhere."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _signature(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def _file_hash(path: Path, st: os.stat_result, sidecar: "_Sidecar") -> str:
    key = str(path.resolve())
    sig = _signature(st)
    known = sidecar.get(key, sig)
    if known is not None:
        return known
    if sidecar.announce is not None:
        sidecar.announce(path, st.st_size)
    digest = file_sha256(path)
    after = os.stat(path)
    # remember only a hash of bytes that stood still while they were read, and not too recently
    # written to be told apart from a rewrite by their timestamps
    newest = max(after.st_mtime_ns, after.st_ctime_ns) / 1e9
    if _signature(after) == sig and time.time() - newest > RACY_SECONDS:
        sidecar.put(key, sig, digest)
    return digest


class _Sidecar:
    """The remembered hashes; every failure to read or write it falls back to hashing."""

    def __init__(self):
        # imported here: only a run whose components declare files opens the sidecar, and a
        # short run's start-up should not pay for sqlite3
        import sqlite3

        self.sqlite3 = sqlite3
        self.db: sqlite3.Connection | None = None
        self.announce = None

    def __enter__(self) -> "_Sidecar":
        try:
            path = sidecar_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = self.sqlite3.connect(path, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS f (path TEXT PRIMARY KEY, size INT, "
                            "mtime_ns INT, ctime_ns INT, ino INT, dev INT, sha256 TEXT)")
        except (OSError, self.sqlite3.Error):
            self.close()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def get(self, path: str, sig: tuple) -> str | None:
        """The remembered hash of ``path`` if its stat signature is still ``sig``."""
        if self.db is None:
            return None
        try:
            row = self.db.execute("SELECT size, mtime_ns, ctime_ns, ino, dev, sha256 FROM f "
                                  "WHERE path = ?", (path,)).fetchone()
        except self.sqlite3.Error:
            return None
        return row[5] if row is not None and tuple(row[:5]) == sig else None

    def put(self, path: str, sig: tuple, digest: str) -> None:
        """Remember ``digest`` for ``path`` with stat signature ``sig``."""
        if self.db is None:
            return
        try:
            self.db.execute("INSERT OR REPLACE INTO f VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (path, *sig, digest))
            self.db.commit()
        except self.sqlite3.Error:
            pass

    def close(self) -> None:
        """Close the database, if open."""
        if self.db is not None:
            self.db.close()
            self.db = None
