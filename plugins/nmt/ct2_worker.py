"""A CTranslate2 translator in a child process of its own, for the CTranslate2 backend on CPU.

Why: the pip wheels of torch and CTranslate2 each bundle their own GNU OpenMP runtime. Once torch
has run with more than one thread in a process, CTranslate2's CPU threads in that same process
translate 3-4x slower (measured here on the NMT models of ``train-nmt``: 1,000 Multi30k sentences
greedy in 4.1-4.6 s in a fresh process, 10-17 s after a few torch matrix products on 2 threads;
torch's idle threads burn no CPU, CTranslate2's own threads do twice the work). The same clash
between torch's bundled libgomp and other packages is pytorch/pytorch#98836. A recipe often runs
torch (``embedding_cosine.v1``, the transformers backend, the conversion itself) in the same
process as a round trip, so the translator lives in a child that never runs torch.

The child is this module run as ``python -m``: no re-import of the user's main script (as
``multiprocessing``'s spawn would do). Messages are length-prefixed pickles over the child's
stdin and stdout; the child's ``print``s go to stderr. When the parent dies the child reads EOF
and exits. A closed translator's child unloads its model and waits, up to two of them, for the
next translator of the same process (:func:`shutdown_idle` stops them): starting one costs
about 0.2 s of CPU (an interpreter and CTranslate2's import), and an evaluator that trains and
tests dozens of small models (``expansion_curve.v1``, ``train_and_test.v1`` with a val set and a
baseline) opened one per model and test set. Used by
:class:`bitextforge.plugins.nmt.backends.CTranslate2Backend`; the back-translation of Wieting et
al. 2017 / ParaNMT-50M and the BET round trips are what it serves.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
import weakref
from typing import Any, BinaryIO

from bitextforge import ComponentError

_HEADER = struct.Struct("<Q")
#: run by module name, whatever name the parent imported this file under
_MODULE = "bitextforge.plugins.nmt.ct2_worker"


def _send(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _recv(stream: BinaryIO) -> Any:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (n,) = _HEADER.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


#: a one-token source whose translation (one step, full vocabulary) resets the output layer; not
#: an end-of-sentence token alone, which CTranslate2 answers without running the decoder (so
#: without the reset). An unknown token is read as <unk> in any vocabulary.
_RESET = ([["x"]], dict(beam_size=1, max_decoding_length=1, use_vmap=False))


class LocalTranslator:
    """``ctranslate2.Translator`` in this process, with the interface of
    :class:`RemoteTranslator` (plain lists out, the sampling seed as an argument); the child
    process serves one of these.

    With ``vocab_map`` (jobs that ask for ``use_vmap``) every batch runs right after a one-step
    translation with the full vocabulary on the same worker. CTranslate2 4.x restricts the output
    layer per batch but never clears its map from original to restricted ids, so the second and
    later batches of a worker look up their start and end tokens at the first batch's positions:
    outputs go wrong or the call fails with ``vector::_M_range_check``. A full-vocabulary step
    clears that map; tests check every batch against a fresh translator. Each worker is then a
    translator of its own (one thread each) fed by a Python thread, so a batch and its reset
    always run on the same worker."""

    def __init__(self, model_path: str, device: str, compute_type: str, inter_threads: int,
                 intra_threads: int, vocab_map: bool = False):
        """Load the model on ``device`` (``cpu`` or ``cuda:N``): ``inter_threads`` batches at a
        time, each on ``intra_threads``."""
        import ctranslate2

        from bitextforge.api import ct2_device

        kind, index = ct2_device(device)
        self._load = dict(model_path=model_path, device=kind, device_index=index,
                          compute_type=compute_type, intra_threads=intra_threads)
        self.vocab_map = vocab_map
        if vocab_map:
            self.workers = [ctranslate2.Translator(inter_threads=1, **self._load)
                            for _ in range(max(1, inter_threads))]
            self.translator = self.workers[0]
        else:
            self.workers = []
            self.translator = ctranslate2.Translator(inter_threads=inter_threads, **self._load)

    def _one(self, translator, src, kw):
        """One batch, synchronously; reset the output layer first when the job uses the map."""
        if kw.get("use_vmap"):
            translator.translate_batch(_RESET[0], **_RESET[1])
        return translator.translate_batch(src, **kw)

    def translate_batches(self, jobs: list[tuple[list[list[str]], dict]],
                          seed: int | None = None) -> list[list[tuple[list[list[str]], list[float]]]]:
        """Translate each ``(token lists, translate_batch options)`` job; results in job order.

        Without a seed every job is submitted at once (``asynchronous=True``) so the translator's
        ``inter_threads`` workers decode several batches in parallel; with a seed (sampling) the
        jobs run one after another on a translator with a single worker, so the draws repeat
        run to run: CTranslate2 seeds each worker thread's generator once, when that thread first
        samples, and which of several workers takes a batch is up to its scheduler. That
        translator is loaded afresh for every call: a worker thread's generator would otherwise
        carry on from the calls before, and a run resumed after its last finished shard would
        draw other samples than the run it continues (loading costs milliseconds for the small
        models here, about a second for a large one, once per call of a whole recipe batch).
        Jobs that use a vocabulary map run on single-thread workers of their own
        (:meth:`_on_workers`)."""
        import ctranslate2

        def plain(results):
            return [(r.hypotheses, r.scores) for r in results]

        if seed is not None:
            ctranslate2.set_random_seed(seed)
            sampler = ctranslate2.Translator(inter_threads=1, **self._load)
            return [plain(self._one(sampler, src, kw)) for src, kw in jobs]
        if self.vocab_map:
            return self._on_workers(jobs, plain)
        pending = [self.translator.translate_batch(src, asynchronous=True, **kw)
                   for src, kw in jobs]
        return [plain([a.result() for a in futures]) for futures in pending]

    def score_batches(self, jobs: list[tuple[list[list[str]], list[list[str]]]]
                      ) -> list[list[list[float]]]:
        """Teacher-forced log-probability of every target token (the end token included) for
        each ``(source token lists, target token lists)`` job; all jobs are submitted at once."""
        pending = [self.translator.score_batch(src, tgt, asynchronous=True) for src, tgt in jobs]
        return [[list(a.result().log_probs) for a in futures] for futures in pending]

    def _on_workers(self, jobs, plain):
        """Jobs in order on the workers, each job taking a free worker (CTranslate2 releases the
        GIL while it translates), so a batch and its reset share one translator."""
        import queue
        from concurrent.futures import ThreadPoolExecutor

        free: queue.SimpleQueue = queue.SimpleQueue()
        for translator in self.workers:
            free.put(translator)

        def run(job):
            translator = free.get()
            try:
                return plain(self._one(translator, *job))
            finally:
                free.put(translator)

        with ThreadPoolExecutor(len(self.workers)) as pool:
            return list(pool.map(run, jobs))

    def close(self) -> None:
        """Unload the model."""
        self.translator = None
        self.workers = []


#: children without a model, each with the environment it was started in (a child started
#: before a change of, say, CUDA_VISIBLE_DEVICES or OMP_NUM_THREADS is not reused after it)
_IDLE: list[tuple[tuple, subprocess.Popen]] = []
_IDLE_MAX = 2
#: reentrant: a translator dropped by the garbage collector closes itself (``__del__``), which
#: can happen inside a locked region of the same thread; a plain Lock then deadlocked the process
#: at exit (a pytest worker hung after its last test)
_IDLE_LOCK = threading.RLock()
#: children serving a translator now: killed when this process exits (a Ctrl-C outside a call
#: to the child would otherwise leave it decoding its last batch after the run has stopped)
_BUSY: "weakref.WeakSet[subprocess.Popen]" = weakref.WeakSet()


def _environment() -> tuple:
    return tuple(sorted(os.environ.items()))


def _stop(proc: subprocess.Popen) -> None:
    try:
        _send(proc.stdin, ("exit", ()))
        proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        try:
            pipe.close()
        except OSError:  # a broken pipe's unwritten bytes: the child is gone anyway
            pass


def _idle_child() -> subprocess.Popen | None:
    """A waiting child started in this environment, if there is one."""
    env = _environment()
    stale, found = [], None
    with _IDLE_LOCK:
        while _IDLE and found is None:
            started_in, proc = _IDLE.pop()
            if started_in == env and proc.poll() is None:
                found = proc
            else:
                stale.append(proc)
    for proc in stale:  # stopped outside the lock: stopping waits for the child
        _stop(proc)
    return found


def shutdown_idle() -> None:
    """Stop the children that wait for a next translator (also done when Python exits)."""
    with _IDLE_LOCK:
        idle = [proc for _, proc in _IDLE]
        _IDLE.clear()
    for proc in idle:
        _stop(proc)


def _kill_busy() -> None:
    """At exit: kill the children still serving a translator (their work is not wanted)."""
    for proc in list(_BUSY):
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _forget_idle_after_fork() -> None:
    """In a forked child: the waiting translators' pipes belong to the parent (two processes
    writing requests into one child's pipe would wait for each other's replies for ever)."""
    global _IDLE_LOCK
    _IDLE.clear()
    _IDLE_LOCK = threading.RLock()


atexit.register(shutdown_idle)
atexit.register(_kill_busy)
os.register_at_fork(after_in_child=_forget_idle_after_fork)


class RemoteTranslator:
    """``ctranslate2.Translator`` in a child process; ``translate_batches`` returns plain lists
    ``[(hypotheses, scores)]`` per job instead of CTranslate2's result objects."""

    def __init__(self, model_path: str, device: str, compute_type: str, inter_threads: int,
                 intra_threads: int, vocab_map: bool = False):
        """Take a waiting child or start one, and load the model there; a load failure is
        raised here."""
        self.proc = _idle_child() or subprocess.Popen(
            [sys.executable, "-m", _MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        _BUSY.add(self.proc)
        try:
            self._call("load", model_path, device, compute_type, inter_threads, intra_threads,
                       vocab_map)
        except ComponentError:
            proc, self.proc = self.proc, None
            _stop(proc)
            raise

    def _call(self, op: str, *args: Any) -> Any:
        if self.proc is None:
            raise ComponentError("ctranslate2: the translator was closed")
        try:
            _send(self.proc.stdin, (op, args))
            status, value = _recv(self.proc.stdout)
        except KeyboardInterrupt:
            # the reply will never be read: a child left with it could not serve another call
            proc, self.proc = self.proc, None
            proc.kill()
            proc.wait()
            raise
        except (EOFError, BrokenPipeError, OSError):
            code = self.proc.poll()
            raise ComponentError(f"ctranslate2: the translator process died (exit code {code}); "
                                 f"its error is printed above") from None
        if status == "error":
            raise ComponentError(f"ctranslate2: {value}")
        return value

    def translate_batches(self, jobs: list[tuple[list[list[str]], dict]],
                          seed: int | None = None) -> list[list[tuple[list[list[str]], list[float]]]]:
        """:meth:`LocalTranslator.translate_batches`, in the child (one message for all jobs)."""
        return self._call("translate", jobs, seed)

    def score_batches(self, jobs: list[tuple[list[list[str]], list[list[str]]]]
                      ) -> list[list[list[float]]]:
        """:meth:`LocalTranslator.score_batches`, in the child."""
        return self._call("score", jobs)

    def close(self) -> None:
        """Unload the model; the child then waits for the next translator, or stops when two
        already wait (it also exits on its own when this process dies)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        _BUSY.discard(proc)
        if proc.poll() is None:
            try:
                _send(proc.stdin, ("unload", ()))
                unloaded = _recv(proc.stdout)[0] == "ok"
            except (EOFError, OSError, ValueError):
                unloaded = False
            if unloaded:
                with _IDLE_LOCK:
                    if len(_IDLE) < _IDLE_MAX:
                        _IDLE.append((_environment(), proc))
                        return
        _stop(proc)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown; nothing left to report to
            pass


def _serve(inp: BinaryIO, out: BinaryIO) -> None:
    """The child's loop: load a model, translate or score with it, unload it, load the next,
    until ``exit`` or EOF."""
    translator = None
    while True:
        try:
            op, args = _recv(inp)
        except EOFError:
            return
        if op == "exit":
            return
        try:
            if op == "load":
                translator = None  # the previous model's memory goes before the next loads
                translator = LocalTranslator(*args)
                value: Any = None
            elif op == "unload":
                translator = None
                value = None
            elif op == "translate":
                value = translator.translate_batches(*args)
            elif op == "score":
                value = translator.score_batches(*args)
            else:
                raise ValueError(f"unknown request {op!r}")
            _send(out, ("ok", value))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent
            _send(out, ("error", f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    # Ctrl-C in a terminal reaches every process of the job: the parent stops this child itself
    # (it kills it when interrupted during a call), and this child's own KeyboardInterrupt only
    # printed a traceback of its protocol loop under the parent's one-line message
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol owns the real stdout; anything a library prints goes to stderr.
    _protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr
    _serve(sys.stdin.buffer, _protocol_out)
