"""Sharded, resumable runs: the input is processed in shards of ``output.shard_size`` rows; each
finished shard's outputs and the state of every component are written atomically under
``<run dir>/.shards/NNNNN/`` with a ``DONE`` marker last. A rerun of the same recipe on the same
inputs into the same directory skips the finished shards (restoring component state such as
``dedupe.v1``'s seen pairs) and resumes with the next; when all shards are done they are merged into
the final files, and the folder is renamed to ``.shards-merged`` (one atomic step, after the final
files' renames) until the run's reports are written, then removed. A rerun after a kill during the
merge merges again from the shards; after the merge it only writes what is missing (manifest,
reports); neither processes a row again. A directory holding an unfinished run of a different
recipe, input or model is refused (:func:`input_fingerprint` says what counts), naming what
changed.

A run with a corpus-wide decision (``keep: top`` / ``words``) is sharded up to that step's first
pass; the selection and the steps after it write one last part, ``final/``, once every shard is
done (:mod:`~bitextforge.pipeline.selection`).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
from itertools import islice
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..io.corpus import AtomicFile, Batch, write_atomic
from ..errors import BitextforgeError, InputError
from ..cache.identity import component_identity

SHARD_DIR = ".shards"
#: the shard folder once its shards are merged into the final files (their names in ``MERGED``)
MERGED_DIR = ".shards-merged"
MERGED = "MERGED"
#: the last part of a run with a corpus-wide selection, written after every shard
FINAL = "final"
#: input files at least this large (bytes) have their hash remembered (beside the score caches)
REMEMBER_FROM = 64 << 20
#: input files at least this large (bytes) are announced while their content is hashed
LARGE_INPUT = 1 << 30


class Fingerprint(str):
    """The hex digest that identifies a run, carrying the ``parts`` it hashes (what each part
    is, ``"recipe"``, ``"input.src"``, ``"steps[2].with.model"``, to its identity) so that a
    refusal can name the parts that changed."""

    parts: dict[str, str]


def input_fingerprint(recipe, components: Sequence = ()) -> Fingerprint:
    """What a resumed run must share with the run it continues: the filled recipe, each input
    file's path and content, and the content identity of every file and directory each step's
    built component (``components``, in step order) declares with ``input_paths``
    (:func:`bitextforge.cache.identity.component_identity`, the same identity the score cache is keyed
    on), so a model retrained between the kill and the rerun is seen even at the same path, size
    and time.

    Input files count by content (a SHA-256; from :data:`REMEMBER_FROM` bytes on it is
    remembered beside the score caches while the file's size and times stand,
    :func:`~bitextforge.cache.identity.path_identity`), not by their
    modification time: data copied again or synced between the kill and the rerun, with the same
    bytes and new times, is the same input, and a long run continues rather than being refused.
    Hashing reads a file at about 0.7 GB/s: a file under 64 MB on every run (tens of
    milliseconds), a larger one on the first run only, said for files of a GB or more."""
    from ..recipe.load import input_specs
    from ..cache.identity import file_sha256, path_identity

    parts = {"recipe": json.dumps(recipe.filled(), sort_keys=True, default=str)}
    several = isinstance(recipe.input, list)
    files = [(f"input[{i}].{key}" if several else f"input.{key}", getattr(spec, key))
             for i, spec in enumerate(input_specs(recipe))
             for key in ("src", "tgt", "path") if getattr(spec, key)]
    for key, f in files:
        try:
            st = os.stat(f)
        except OSError as exc:
            raise InputError(f"{f}: {exc.strerror.lower() if exc.strerror else exc}") from None
        # a small file is hashed on every run (milliseconds), which spares a short run the
        # sidecar's sqlite3; a large one's hash is remembered there while the file stands
        ident = ("sha256:" + file_sha256(f) if st.st_size < REMEMBER_FROM
                 else path_identity(f, _announce_large))
        parts[key] = f"{os.path.abspath(f)}:{ident}"
    for i, comp in enumerate(components):
        for key, ident in component_identity(comp).items():
            parts[f"steps[{i}].with.{key}"] = ident
    fp = Fingerprint(hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest())
    fp.parts = parts
    return fp


def _announce_large(path, size: int) -> None:
    if size >= LARGE_INPUT:
        from ..log import say

        say("", f"{path}: reading its {size / 1e9:.1f} GB once to identify it by content, so "
                f"that a killed run can continue (remembered while the file stands)")


def _changed(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """The parts that differ (``the recipe`` for the recipe), in the order of ``new``."""
    keys = list(new) + [k for k in old if k not in new]
    return ["the recipe" if k == "recipe" else k for k in keys
            if old.get(k) != new.get(k) and not _same_legacy_input(old.get(k), new.get(k))]


def _same_legacy_input(old: str | None, new: str | None) -> bool:
    """True when ``old`` is an input part of a run started before inputs counted by content
    (``path:size:mtime_ns``), of the same path, and the file still has that size and time: the
    test such a run was started under, so that a run killed before an upgrade still continues."""
    if not old or not new:
        return False
    path, _, rest = old.rpartition(":")
    path, _, size = path.rpartition(":")
    if not (size.isdigit() and rest.isdigit()) or not new.startswith(path + ":sha256:"):
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_size, st.st_mtime_ns) == (int(size), int(rest))


class ShardStore:
    """The ``.shards`` folder of one run directory (``.shards-merged`` once merged)."""

    def __init__(self, out_dir: Path, fingerprint: str, restart: bool = False):
        """Open the folder, refusing one that belongs to a different unfinished run."""
        self.dir = out_dir / SHARD_DIR
        sealed = out_dir / MERGED_DIR
        parts = getattr(fingerprint, "parts", None)
        for d in (sealed, self.dir):
            if not d.exists():
                continue
            old, old_parts = saved_fingerprint(d)
            if old == fingerprint:
                continue
            comparable = isinstance(old_parts, dict) and bool(parts)
            changed = _changed(old_parts, parts) if comparable else []
            if comparable and not changed:
                # started when inputs counted by size and time, and its inputs are as they were
                _save_fingerprint(d / "run.json", fingerprint)
                continue
            if not restart:
                done = finished_shards(d)
                what = f"changed: {', '.join(changed)}; " if changed else ""
                raise BitextforgeError(
                    f"{out_dir}: holds an unfinished run of a different recipe, input or "
                    f"model ({what}{done} shard{'' if done == 1 else 's'} finished); to "
                    f"continue it, rerun with the recipe, input files and model files it "
                    f"started with (input files and the files its steps read are compared by "
                    f"content); to start again, rerun with "
                    f"--restart (discards it) or choose another output directory")
            shutil.rmtree(d)
        if sealed.exists():  # merged; killed before the manifest was written
            self.dir = sealed
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / "run.json"
        if not meta.exists():
            _save_fingerprint(meta, fingerprint)

    def shard_dir(self, k: int | str) -> Path:
        """Folder of shard ``k`` (or of the last part, :data:`FINAL`)."""
        return _shard_dir(self.dir, k)

    def finished(self) -> int:
        """Number of leading shards with a DONE marker."""
        return finished_shards(self.dir)

    def begin(self, k: int | str) -> Path:
        """An empty folder for shard ``k`` or the last part (a partial one from a killed run is
        discarded)."""
        d = self.shard_dir(k)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d

    def finish(self, k: int | str, state: dict[str, Any]) -> None:
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

    def final_state(self) -> dict[str, Any] | None:
        """The state saved when the last part (:data:`FINAL`) was finished, else None."""
        d = self.dir / FINAL
        if not (d / "DONE").exists():
            return None
        with open(d / "state.pkl", "rb") as fh:
            return pickle.load(fh)

    def merge(self, out_dir: Path, n: int, names: list[str], weights_needed: bool,
              final: bool = False) -> list[str]:
        """Concatenate every shard's files, then with ``final`` the last part's, into the final
        files (TSV headers once), unless a killed run got that far; then rename the folder to
        ``.shards-merged``, which records the merge as done. The shards stay until
        :meth:`remove`."""
        written = self._merged(out_dir)
        if written is None:
            parts = [self.shard_dir(k) for k in range(n)] + ([self.dir / FINAL] if final else [])
            written = self._concatenate(out_dir, parts, names, weights_needed)
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

    def _concatenate(self, out_dir: Path, parts: list[Path], names: list[str],
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
                    for k, part in enumerate(parts):
                        with open(part / name, "rb") as src:
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


def _save_fingerprint(meta: Path, fingerprint: str) -> None:
    record = {"fingerprint": str(fingerprint)}
    parts = getattr(fingerprint, "parts", None)
    if parts:
        record["parts"] = parts
    write_atomic(meta, json.dumps(record) + "\n")


def saved_fingerprint(d: Path) -> tuple[str | None, dict | None]:
    """The fingerprint a shard folder was started with, and its parts (None when unreadable)."""
    try:
        saved = json.loads((d / "run.json").read_text())
        return saved["fingerprint"], saved.get("parts")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, None


def _shard_dir(d: Path, k: int | str) -> Path:
    return d / (k if isinstance(k, str) else f"{k:05d}")


def finished_shards(d: Path) -> int:
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
