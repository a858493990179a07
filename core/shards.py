"""Sharded, resumable runs: the input is processed in shards of ``output.shard_size`` rows; each
finished shard's outputs and the state of every component are written atomically under
``<run dir>/.shards/NNNNN/`` with a ``DONE`` marker last. A rerun of the same recipe on the same
inputs into the same directory skips the finished shards (restoring component state such as
``dedupe.v1``'s seen pairs) and resumes with the next; when all shards are done they are merged into
the final files, and the folder is renamed to ``.shards-merged`` (one atomic step, after the final
files' renames) until the run's reports are written, then removed. A rerun after a kill during the
merge merges again from the shards; after the merge it only writes what is missing (manifest,
reports); neither processes a row again. A directory holding an unfinished run of a different
recipe or input is refused.

Runs whose decisions need the whole corpus (``keep: top`` / ``words``) are not sharded: they stream
in one pass as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

from .corpus import AtomicFile, Batch, write_atomic
from .errors import BitextforgeError, InputError

SHARD_DIR = ".shards"
#: the shard folder once its shards are merged into the final files (their names in ``MERGED``)
MERGED_DIR = ".shards-merged"
MERGED = "MERGED"


def input_fingerprint(recipe) -> str:
    """Hash of the filled recipe and each input file's path, size and modification time."""
    spec = recipe.input
    files = [spec.src, spec.tgt] if spec.format == "plain" else [spec.path]
    parts = [json.dumps(recipe.filled(), sort_keys=True, default=str)]
    for f in files:
        try:
            st = os.stat(f)
        except OSError as exc:
            raise InputError(f"{f}: {exc.strerror.lower() if exc.strerror else exc}") from None
        parts.append(f"{os.path.abspath(f)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class ShardStore:
    """The ``.shards`` folder of one run directory (``.shards-merged`` once merged)."""

    def __init__(self, out_dir: Path, fingerprint: str, restart: bool = False):
        """Open the folder, refusing one that belongs to a different unfinished run."""
        self.dir = out_dir / SHARD_DIR
        sealed = out_dir / MERGED_DIR
        for d in (sealed, self.dir):
            if d.exists() and _fingerprint_of(d) != fingerprint:
                if not restart:
                    done = _done(d)
                    raise BitextforgeError(
                        f"{out_dir}: holds an unfinished run of a different recipe or input "
                        f"({done} shard{'' if done == 1 else 's'} finished); to continue it, rerun "
                        f"with the recipe and input files it started with (unchanged, as their "
                        f"size and modification time are compared); to start again, rerun with "
                        f"--restart (discards it) or choose another output directory")
                shutil.rmtree(d)
        if sealed.exists():  # merged; killed before the manifest was written
            self.dir = sealed
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "run.json"
        if not meta.exists():
            write_atomic(meta, json.dumps({"fingerprint": fingerprint}) + "\n")

    def shard_dir(self, k: int) -> Path:
        """Folder of shard ``k``."""
        return _shard_dir(self.dir, k)

    def finished(self) -> int:
        """Number of leading shards with a DONE marker."""
        return _done(self.dir)

    def begin(self, k: int) -> Path:
        """An empty folder for shard ``k`` (a partial one from a killed run is discarded)."""
        d = self.shard_dir(k)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def finish(self, k: int, state: dict[str, Any]) -> None:
        """Record shard ``k``'s state, then its DONE marker (last, so a crash leaves it unfinished)."""
        d = self.shard_dir(k)
        f = AtomicFile(d / "state.pkl")
        f.fh.close()
        with open(f.tmp, "wb") as fh:
            pickle.dump(state, fh, protocol=pickle.HIGHEST_PROTOCOL)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(f.tmp, f.path)
        write_atomic(d / "DONE", "")

    def state(self, k: int) -> dict[str, Any]:
        """The state saved with shard ``k``."""
        with open(self.shard_dir(k) / "state.pkl", "rb") as fh:
            return pickle.load(fh)

    def merge(self, out_dir: Path, n: int, names: list[str], weights_needed: bool) -> list[str]:
        """Concatenate every shard's files into the final files (TSV headers once), unless a
        killed run got that far; then rename the folder to ``.shards-merged``, which records the
        merge as done. The shards stay until :meth:`remove`."""
        written = self._merged(out_dir)
        if written is None:
            written = self._concatenate(out_dir, n, names, weights_needed)
            write_atomic(self.dir / MERGED, json.dumps({"files": written}) + "\n")
        if self.dir.name == SHARD_DIR:
            sealed = out_dir / MERGED_DIR
            os.replace(self.dir, sealed)
            self.dir = sealed
        return written

    def _merged(self, out_dir: Path) -> list[str] | None:
        """The final files of a merge that finished (all still in ``out_dir``), else None."""
        try:
            files = json.loads((self.dir / MERGED).read_text())["files"]
        except (OSError, ValueError, KeyError):
            return None
        return files if all((out_dir / f).is_file() for f in files) else None

    def _concatenate(self, out_dir: Path, n: int, names: list[str],
                     weights_needed: bool) -> list[str]:
        written = []
        finals: list[AtomicFile] = []
        try:
            for name in names:
                if name == "corpus.weights" and not weights_needed:
                    continue
                final = AtomicFile(out_dir / name)
                finals.append(final)
                final.fh.close()
                with open(final.tmp, "wb") as dst:
                    for k in range(n):
                        with open(self.shard_dir(k) / name, "rb") as src:
                            if name.endswith(".tsv") and k > 0:
                                src.readline()
                            shutil.copyfileobj(src, dst, 1 << 20)
                    dst.flush()
                    os.fsync(dst.fileno())
            for final in finals:
                os.replace(final.tmp, final.path)
                written.append(final.path.name)
        except BaseException:
            for final in finals:
                final.tmp.unlink(missing_ok=True)
            raise
        return written

    def remove(self) -> None:
        """Remove the shard folder (the run's manifest is written, or nothing is worth resuming)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def _fingerprint_of(d: Path) -> str | None:
    try:
        return json.loads((d / "run.json").read_text())["fingerprint"]
    except (OSError, ValueError, KeyError):
        return None


def _shard_dir(d: Path, k: int) -> Path:
    return d / f"{k:05d}"


def _done(d: Path) -> int:
    """Number of leading shards in ``d`` with a DONE marker."""
    k = 0
    while (_shard_dir(d, k) / "DONE").exists():
        k += 1
    return k

def split_shards(batches: Iterator[Batch], batches_per_shard: int) -> Iterator[Iterator[Batch]]:
    """Group a stream of batches into consecutive shards of ``batches_per_shard`` batches."""
    it = iter(batches)
    while True:
        first = next(it, None)
        if first is None:
            return
        yield _chain_first(first, islice(it, batches_per_shard - 1))


def _chain_first(first: Batch, rest: Iterator[Batch]) -> Iterator[Batch]:
    yield first
    yield from rest
