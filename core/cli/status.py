"""``bitextforge status``: what run and model directories hold now, so that whoever runs long
recipes (hours of training, sessions that end, schedulers that stop jobs) sees what the same
command would do next without reading logs: a finished run, the finished shards of an unfinished
one, and every unfinished training a rerun continues, with the update it continues from (asked
of each resumable trainer, :meth:`bitextforge.Trainer.describe_unfinished`, so a plugin's
trainers are described as the built-in ones are)."""

from __future__ import annotations

import json
import re
from pathlib import Path

#: how deep below a given directory unfinished trainings are looked for (a run's
#: ``train_and_test/.model-seedN.tmp``, a model directory's ``models/.name.partial-PID``)
DEPTH = 4
_PARTIAL = re.compile(r"^\..+\.partial-(\d+)$")


def _run_lines(d: Path) -> list[str]:
    """The run in ``d``: finished (its manifest), or its shards so far."""
    from ..pipeline.shards import MERGED_DIR, SHARD_DIR, finished_shards
    from ..pipeline.sink import holds_run_marker

    lines = []
    shards, merged = d / SHARD_DIR, d / MERGED_DIR
    if shards.is_dir():
        done = finished_shards(shards)  # the leading finished shards, those a rerun keeps
        lines.append(f"{d}: unfinished run, {done} shard{'' if done == 1 else 's'} finished; "
                     f"the same command continues after them")
    elif merged.is_dir():
        lines.append(f"{d}: unfinished run, every shard merged into the final files; the same "
                     f"command writes what is missing (manifest, reports, evaluations)")
    elif (d / "manifest.json").is_file():
        try:
            m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
            out = m.get("output", {})
            lines.append(f"{d}: finished run of {m.get('recipe_file') or 'a recipe'}, started "
                         f"{m.get('started', '?')}, {float(m.get('seconds', 0)) / 60:.1f} min: "
                         f"{out.get('rows', '?'):,} rows kept, {out.get('rejected', '?'):,} "
                         f"rejected")
        except (ValueError, AttributeError, TypeError):
            lines.append(f"{d}: manifest.json cannot be read")
    elif any((d / f).is_file() for f in ("corpus.tsv", "corpus.src")):
        # a run decided over the whole corpus (keep: top) is not sharded: its rows are made
        # again, from the score cache where its steps cache, and its trainings continued
        if holds_run_marker(d):  # as refuse_foreign decides: here only the lock file can mark it
            lines.append(f"{d}: unfinished run, its corpus written but no manifest; the same "
                         f"command makes the corpus again (one pass, not resumable by shards) "
                         f"and continues from there")
        else:
            # what refuse_foreign sees: corpus files and no mark of a run (a run stopped
            # before 2026-11-30 removed its lock file, or the files are someone else's)
            lines.append(f"{d}: corpus files but no mark of a bitextforge run; a run refuses "
                         f"to write here: if a run of yours stopped here, the same command "
                         f"with --force continues it")
    return lines


def _trainings(root: Path, trainers: list) -> list[str]:
    """Every directory under ``root`` (``DEPTH`` levels, hidden ones included) that a resumable
    trainer recognises as its unfinished output, with what it holds."""
    from ..pipeline.shards import MERGED_DIR, SHARD_DIR
    from ..pipeline.prepare import pid_alive

    lines = []
    queue = [(root, 0)]
    while queue:
        d, depth = queue.pop(0)
        for cls in trainers:
            said = cls.describe_unfinished(d)
            if said:
                m = _PARTIAL.match(d.name)
                who = ""
                if m:
                    pid = int(m.group(1))
                    who = (f" (pid {pid}, which wrote it, is running)" if pid_alive(pid) else
                           " (left by a training that stopped)")
                lines.append(f"{d}: {said}{who}")
                break
        if depth < DEPTH:
            try:
                subs = sorted(e for e in d.iterdir() if e.is_dir() and not e.is_symlink())
            except OSError:
                continue
            queue += [(s, depth + 1) for s in subs if s.name not in (SHARD_DIR, MERGED_DIR)]
    return lines


def _absent(d: Path) -> str:
    """Why ``d``, not a directory, has nothing to report."""
    return "not a directory" if d.exists() else "does not exist"


def status_lines(directories: list[str]) -> list[str]:
    """What ``bitextforge status`` prints for ``directories``: a line on the run in each (if
    any), then its unfinished trainings, one line each. A path that is not a directory is one
    line saying so, among the others (a fresh checkout has no ``models/`` yet, and the runs that
    do exist are still worth reporting); only when no path is a directory is it an error."""
    from ..components.registry import get_registry
    from ..errors import InputError

    missing = [f"{d}: {_absent(d)} (give a run's output directory or a model directory)"
               for d in map(Path, directories) if not d.is_dir()]
    if len(missing) == len(directories):
        raise InputError("\n".join(missing))
    reg = get_registry()
    registered = [reg.registration("trainer", name) for name in reg.names("trainer")]
    trainers = [r.cls for r in registered
                if not r.missing_extra() and getattr(r.cls, "resumable", False)]
    out = []
    for name in directories:
        d = Path(name)
        if not d.is_dir():
            out.append(f"{d}: {_absent(d)}")
            continue
        run = _run_lines(d)
        found = _trainings(d, trainers)
        if not run and not found:
            out.append(f"{d}: no run and no unfinished training here")
            continue
        out += run or [f"{d}:"]
        if found:
            out.append(f"  unfinished training{'' if len(found) == 1 else 's'}:")
            out += [f"    {line}" for line in found]
    return out
