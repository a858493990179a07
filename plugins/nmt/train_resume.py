"""The resumable state of an unfinished ``train-nmt`` training: what it must match to be
continued, how it is written whole or not at all, read back, described for ``bitextforge status``,
and saved when SIGTERM asks the training to stop."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Callable

from .train_options import TrainOptions


#: the resumable state of an unfinished training, in its output directory
RESUME_FILE = "resume.pt"


#: options that change neither the updates nor the checkpoints kept, so a run resumed with other
#: values of them continues the same training (threads: only the last bits of the sums)
_RESUME_FREE = ("output", "resume_every", "resume_every_steps", "threads", "tests", "beam",
                "test_backend")


def resume_key(opts: TrainOptions, src: list[str], tgt: list[str],
               weights: list[float] | None) -> str:
    """What a resumable state must match to be continued: the options that shape the training
    and the pairs it reads (after the empty, held-out and weight-0 ones are left out)."""
    h = hashlib.sha256(json.dumps(opts.model_dump(exclude=set(_RESUME_FREE)), sort_keys=True,
                                  default=str).encode())
    for side in (src, tgt):
        for line in side:
            h.update(line.encode("utf-8", "surrogatepass") + b"\n")
        h.update(b"\0")
    if weights is not None:
        h.update(json.dumps(weights).encode())
    return h.hexdigest()


def has_resume_state(directory: Path) -> bool:
    """Whether ``directory`` (a training's output) holds the resumable state of an unfinished
    training, which whoever cleans up after a kill must keep for the rerun."""
    return (directory / RESUME_FILE).is_file()


def load_resume(path: Path, key: str, log: Callable[[str], None]) -> dict | None:
    """The resumable state in ``path`` when it belongs to the training of ``key`` (and its
    vocabulary is beside it), else None; a state of another training is said and removed."""
    if not path.is_file():
        return None
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable state means starting over
        log(f"train-nmt: {path} cannot be read ({type(e).__name__}: {e}); starting over")
        path.unlink()
        return None
    if not isinstance(state, dict) or state.get("key") != key:
        log(f"train-nmt: {path} is the state of another training (other options or data); "
            f"starting over")
        path.unlink()
        return None
    if not (path.parent / "joint.model").is_file():
        log(f"train-nmt: {path} has no joint.model beside it; starting over")
        path.unlink()
        return None
    return state


def describe_state(directory: Path) -> str | None:
    """One line on the resumable state in ``directory`` (for ``bitextforge status``): the
    update it continues from, of how many, the epoch, the minutes trained and the state's age;
    None when there is none."""
    path = Path(directory) / RESUME_FILE
    if not path.is_file():
        return None
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        step, epoch, minutes = state["step"], state["epoch"], state["elapsed"] / 60
    except Exception as e:  # noqa: BLE001 - what cannot be read is said, not raised
        return f"{RESUME_FILE} cannot be read ({type(e).__name__}): a rerun starts over"
    of = f"/{state['max_steps']}" if state.get("max_steps") else ""
    age = (time.time() - path.stat().st_mtime) / 60
    ago = f"{age:.0f} min" if age < 120 else f"{age / 60:.1f} h"
    return (f"train-nmt state at update {step}{of} (epoch {epoch}, {minutes:.1f} min trained), "
            f"saved {ago} ago; the same command continues from it")


class SaveOnSigterm:
    """While a training loop runs in the main thread, SIGTERM (``kill``, a batch scheduler's
    time limit or preemption, a worker pool stopped) only sets :attr:`asked`; the loop then
    saves a resumable state after the update in progress and calls :meth:`deliver`, which hands
    the signal to the handler it found (the command's clean-up and exit 143, or the default
    death of a worker process). Marian's ``--sigterm save-and-exit`` does the same. Without a
    resumable state to write (``resume_every: 0``), in another thread, or where SIGTERM is
    ignored, nothing is installed."""

    def __init__(self, enabled: bool):
        import signal
        import threading

        self.asked = False
        self._signal = signal
        self._previous = None
        self._on = (enabled and threading.current_thread() is threading.main_thread()
                    and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN)

    def __enter__(self) -> "SaveOnSigterm":
        if self._on:
            self._previous = self._signal.signal(self._signal.SIGTERM, self._ask)
        return self

    def _ask(self, signum, frame) -> None:
        self.asked = True

    def deliver(self) -> None:
        """Restore the handler found and send it the signal that was held back."""
        self.asked = False
        self._restore()
        os.kill(os.getpid(), self._signal.SIGTERM)

    def _restore(self) -> None:
        if self._previous is not None:
            self._signal.signal(self._signal.SIGTERM, self._previous)
            self._previous = None

    def __exit__(self, *exc) -> None:
        self._restore()
        if self.asked:  # during the last update: the loop ended, and the signal goes on
            self.deliver()


def save_resume(path: Path, state: dict) -> None:
    """Write a resumable state whole or not at all (a kill while saving keeps the previous)."""
    import torch

    tmp = path.with_name(path.name + ".part")
    torch.save(state, tmp)
    os.replace(tmp, path)
