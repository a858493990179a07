"""The sink stage of a run: writes the packets it is given into the run directory, atomically,
and claims that directory for the run.

A run writes ``corpus.src``/``corpus.tgt`` (plain), ``corpus.tsv`` (every column),
``corpus.jsonl``, ``corpus.weights`` (Marian ``--data-weighting`` file, only when weights are not
all 1), ``rejected.tsv`` (each rejected row with the step and score that rejected it) and, when
the recipe has ``clean:`` steps, ``cleaned.tsv`` (every text a clean step changed). Every file is
written under a temporary name and renamed only when the run (or shard) succeeds. The
sink only writes: the driver (:mod:`~bitextforge.pipeline.driver`) runs the runner, shard by shard, and
feeds it the packets.

:class:`RunDir` claims the directory for the whole run: a directory that holds files but no
bitextforge run is refused (unless forced), a second run into it is refused while the first holds
its lock, and the temporary files a killed run left behind are removed.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from ..io.corpus import (AtomicFile, Batch, TsvWriter, batch_len, format_value, json_line_text,
                         plain_text, with_tags)
from ..errors import BitextforgeError
from .runners.stream import Packet
from .shards import MERGED_DIR, SHARD_DIR, saved_fingerprint
from .executors import Changed, Rejected

#: the columns of cleaned.tsv: one line per changed text of a row, in the order steps changed them
CLEANED_COLUMNS = ["step", "id", "variant", "column", "before", "after"]

#: the lock file a run holds (``fcntl.flock``) in its output directory while it runs
LOCK_FILE = ".bitextforge.lock"
#: the top-level files a run writes under a temporary name (``.NAME.XXXXXXXX.tmp``, see
#: :class:`~bitextforge.io.corpus.AtomicFile`): a killed run leaves them behind, the next run removes
#: them
RUN_FILES = ("corpus.src", "corpus.tgt", "corpus.tsv", "corpus.jsonl", "corpus.weights",
             "rejected.tsv", "cleaned.tsv", "recipe.filled.yaml", "signature.txt", "manifest.json",
             "report.html")


@dataclass
class Written:
    """What the sink wrote: file names, rows kept and rejected, and whether it was sharded."""

    files: list[str]
    rows: int
    rejected: int
    resumable: bool
    #: shards an earlier, stopped run of the same recipe had finished, which this run kept
    resumed_shards: int = 0
    #: what :meth:`Sink.finish` wrote of OpusTrainer's split and configuration (the manifest's)
    opustrainer: dict | None = None


class Outputs:
    """The output files of one run or shard, all written under temporary names until
    :meth:`commit`."""

    def __init__(self, out_dir: Path, formats: list[str], columns: list[str],
                 write_rejected: bool, keep_weights: bool = False, write_cleaned: bool = False):
        """Open the files of ``formats`` in ``out_dir``; ``keep_weights`` keeps
        ``corpus.weights`` even when every weight is 1 (a shard cannot know about the others);
        ``write_cleaned`` opens ``cleaned.tsv`` (a recipe with clean steps)."""
        self.dir = out_dir
        self.keep_weights = keep_weights
        self.files: list[AtomicFile] = []
        self.tsv = TsvWriter(out_dir / "corpus.tsv", columns) if "tsv" in formats else None
        self.plain = None
        if "plain" in formats:
            self.plain = (self._open("corpus.src"), self._open("corpus.tgt"))
        self.weights = self._open("corpus.weights") if self.plain else None
        self.jsonl = self._open("corpus.jsonl") if "jsonl" in formats else None
        reject_columns = columns + ["rejected_by", "rejected_score"]
        self.rejected = TsvWriter(out_dir / "rejected.tsv", reject_columns) if write_rejected else None
        self.cleaned = TsvWriter(out_dir / "cleaned.tsv", CLEANED_COLUMNS) if write_cleaned else None
        self.columns = columns
        self.all_one = True
        self.rows = 0
        self.rejected_rows = 0
        if self.tsv:
            self.files.append(self.tsv.file)
        if self.rejected:
            self.files.append(self.rejected.file)
        if self.cleaned:
            self.files.append(self.cleaned.file)

    def _open(self, name: str) -> AtomicFile:
        f = AtomicFile(self.dir / name)
        self.files.append(f)
        return f

    def write(self, batch: Batch) -> None:
        """Append kept rows (generated text with its tag in front, :func:`with_tags`)."""
        batch = with_tags(batch)
        self.rows += batch_len(batch)
        if self.tsv:
            self.tsv.write(batch)
        if self.plain:
            self.plain[0].write(plain_text(batch["src"]))
            self.plain[1].write(plain_text(batch["tgt"]))
            w = batch["weight"]
            if w.count(1.0) == len(w):  # the usual case: no formatting per row
                self.weights.write("1\n" * len(w))
            else:
                self.all_one = False
                self.weights.write("".join(format_value(x) + "\n" for x in w))
        if self.jsonl:
            names = [c for c in self.columns if c in batch]
            cols = [batch[c] for c in names]
            self.jsonl.write(json_line_text(
                "".join(json.dumps(dict(zip(names, r)), ensure_ascii=False) + "\n"
                        for r in zip(*cols))))

    def reject(self, rej: Rejected) -> None:
        """Append rejected rows with the step and score that rejected them."""
        n = batch_len(rej.batch)
        self.rejected_rows += n
        if self.rejected:
            batch = dict(with_tags(rej.batch))
            batch["rejected_by"] = ([rej.why] * n if rej.reasons is None else
                                    [f"{rej.why} ({r})" for r in rej.reasons])
            batch["rejected_score"] = rej.scores
            self.rejected.write(batch)

    def record_changes(self, ch: Changed) -> None:
        """Append the texts one clean step changed in one column, before and after."""
        if self.cleaned:
            n = len(ch.ids)
            self.cleaned.write({"step": [ch.step] * n, "id": ch.ids, "variant": ch.variants,
                                "column": [ch.column] * n, "before": ch.before,
                                "after": ch.after})

    def put(self, packet: Packet) -> None:
        """Write one packet of a runner: its rejected rows, its changes, then its kept rows."""
        for rej in packet.rejected:
            self.reject(rej)
        for ch in packet.changed:
            self.record_changes(ch)
        if packet.batch is not None:
            self.write(packet.batch)

    def commit(self) -> list[str]:
        """Move every file to its final name; return the names."""
        names = []
        for writer in (self.tsv, self.rejected, self.cleaned):
            if writer is not None:
                writer.finish()
        for f in self.files:
            if f is self.weights and self.all_one and not self.keep_weights:
                f.discard()
                continue
            names.append(f.commit().name)
        return names

    def discard(self) -> None:
        """Remove every temporary file."""
        for f in self.files:
            f.discard()


def check_writable(out_dir: Path) -> None:
    """Create ``out_dir`` and make sure a file can be written there, before any work."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise BitextforgeError(f"{out_dir}: output directory is not writable ({exc.strerror})") from None


class Sink:
    """The files of a run: opens the outputs of the whole run or of one shard, in the formats
    the recipe asks for."""

    def __init__(self, out_dir: Path, recipe, columns: list[str], cleans: bool = False):
        """Write ``recipe``'s outputs, with ``columns``, into ``out_dir``; ``cleans``: a step
        changes text (``cleaned.tsv`` is written)."""
        self.dir = out_dir
        self.columns = columns
        self.cleans = cleans
        self.write_rejected = recipe.output.write_rejected
        self.formats = list(recipe.output.formats)
        if recipe.evaluate and "tsv" not in self.formats:
            self.formats.append("tsv")  # evaluators read the corpus back from corpus.tsv

    def open(self, where: Path | None = None, keep_weights: bool = False) -> Outputs:
        """The output files in ``where`` (a shard's folder; the run directory by default)."""
        return Outputs(where or self.dir, self.formats, self.columns, self.write_rejected,
                       keep_weights, write_cleaned=self.cleans)

    def finish(self, written: Written, seed: int) -> Written:
        """Write the formats made from the finished corpus (``opustrainer``: its split by origin
        and configuration, shuffled with ``seed``); ``written`` with what they recorded."""
        if "opustrainer" not in self.formats:
            return written
        from ..io.opustrainer import write_opustrainer

        return replace(written, opustrainer=write_opustrainer(self.dir, seed))


class RunDir:
    """The output directory of a run, claimed for as long as the run lasts (a context manager).

    Entering it refuses a directory that holds files but no bitextforge run (unless ``force``),
    creates the directory, takes the lock (a second run into it is refused while the first runs)
    and removes the temporary files a killed run left behind. Leaving it releases the lock and
    removes the lock file, except after an error or a stop that left files (the lock file then
    marks the directory as a run's, for the rerun); after an error it removes the directory again
    when this run created it and left nothing in it.
    """

    def __init__(self, path: Path, force: bool = False):
        """Claim ``path``; ``force`` writes into a directory that holds files of something else."""
        self.path = path
        self.force = force
        self.created = False
        #: the directory held a run of bitextforge's when claimed: its files are this run's to
        #: replace, and those this run does not write again are removed (:meth:`remove_stale`)
        self.held_a_run = False
        self._fd: int | None = None

    def __enter__(self) -> "RunDir":
        self.created = not self.path.exists()
        self.held_a_run = not self.created and self.path.is_dir() and holds_run_marker(self.path)
        if not self.created and not self.force:
            refuse_foreign(self.path)
        check_writable(self.path)
        self._lock()
        try:
            remove_stale_temporaries(self.path)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        lock = self.path / LOCK_FILE
        try:
            # A run stopped before its manifest (SIGTERM or Ctrl-C during its evaluation, an
            # error) keeps the lock file: it is then the one mark that the directory holds a
            # bitextforge run (an unsharded run leaves only corpus files), so that the same
            # command continues it instead of being refused by refuse_foreign. Otherwise it is
            # removed while still held: a run that opened it meanwhile finds it replaced (_lock).
            if exc_type is None or not self._holds_more_than_the_lock():
                lock.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None
        if exc_type is not None and self.created:
            try:
                self.path.rmdir()  # only when empty: nothing of this run is left to resume
            except OSError:
                pass

    def remove_stale(self, written: list[str]) -> list[str]:
        """Remove the files an earlier run left in the directory that this finished run did not
        write again (``cleaned.tsv`` of a recipe that no longer cleans, the report of an
        evaluator no longer in it), so that every file in it is this run's. Only the names a run
        writes (:data:`RUN_FILES`, ``reports/*.json``) are touched, and only in a directory that
        held a bitextforge run: files of someone else's that ``--force`` wrote beside stay.
        ``written``: this run's files, relative to the directory. Returns what was removed."""
        if not self.held_a_run:
            return []
        keep = set(written)
        stale = [n for n in RUN_FILES if n not in keep and (self.path / n).is_file()]
        reports = self.path / "reports"
        if reports.is_dir():
            stale += [f"reports/{p.name}" for p in sorted(reports.glob("*.json"))
                      if f"reports/{p.name}" not in keep]
        for name in stale:
            (self.path / name).unlink(missing_ok=True)
        return stale

    def _holds_more_than_the_lock(self) -> bool:
        try:
            return any(p.name != LOCK_FILE for p in self.path.iterdir())
        except OSError:
            return False

    def _lock(self) -> None:
        lock = self.path / LOCK_FILE
        for _ in range(10):
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode("ascii", "replace").strip()
                os.close(fd)
                pid = f" (pid {holder})" if holder.isdigit() else ""
                raise BitextforgeError(
                    f"{self.path}: another bitextforge run is writing into this directory{pid}; "
                    f"wait for it to finish or choose another output directory") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(lock).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd = fd
                return
            # the run that held it finished and removed it after this one opened it: take the
            # new one
            os.close(fd)
        raise BitextforgeError(f"{self.path}: could not lock the output directory (other runs keep "
                               f"starting in it); choose another output directory")


def holds_run_marker(path: Path) -> bool:
    """Whether directory ``path`` holds a mark that only bitextforge writes: what tells a run's
    directory (finished, or stopped and continued by the same command) from someone else's files.

    A file is not taken for a mark by its name alone (a web app's ``manifest.json`` is common):
    the manifest must be a JSON object with the ``bitextforge`` and ``signature`` keys a run
    writes, a shard folder must hold the ``run.json`` fingerprint a run writes, and the lock file
    has a name of bitextforge's own."""
    if (path / LOCK_FILE).is_file() or _is_run_manifest(path / "manifest.json"):
        return True
    return any(saved_fingerprint(path / d)[0] is not None for d in (SHARD_DIR, MERGED_DIR))


def _is_run_manifest(file: Path) -> bool:
    """Whether ``file`` is a (small) JSON object with the keys a run's manifest has."""
    try:
        if not file.is_file() or file.stat().st_size > (64 << 20):
            return False
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "bitextforge" in data and "signature" in data


def refuse_foreign(path: Path) -> None:
    """Refuse an existing directory that holds files but no bitextforge run: a run overwrites its
    corpus files, which may be someone else's (``output.dir: ..``)."""
    if not path.is_dir():
        return  # a file: check_writable says why it cannot be the output directory
    try:
        names = sorted(p.name for p in path.iterdir())
    except OSError as exc:
        raise BitextforgeError(f"{path}: output directory is not readable "
                               f"({exc.strerror})") from None
    if not names or holds_run_marker(path):
        return
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise BitextforgeError(f"{path}: output directory is not empty and holds no bitextforge run "
                           f"({shown}); choose a new or empty directory, or rerun with --force "
                           f"to write into it anyway")


def remove_stale_temporaries(path: Path) -> None:
    """Remove the temporary files of :data:`RUN_FILES` that a killed run left in ``path`` (the
    caller holds the directory's lock, so no other run is writing them)."""
    for name in RUN_FILES:
        for tmp in path.glob(f".{name}.*.tmp"):
            tmp.unlink(missing_ok=True)
