"""Where a model runs and in what arithmetic: the one home of ``device`` and ``precision``.

Every model-backed trainer, scorer, generator and evaluator takes ``device: auto | cpu | cuda |
cuda:N`` (:func:`device_field`) and resolves it through :func:`resolve_device` when it loads its
model: ``auto`` takes the first GPU when the library that runs the model (torch or CTranslate2)
sees one and the CPU otherwise; ``cuda`` without a GPU is a one-line error naming the step. The
resolved device goes into the component's manifest facts, so a run says what ran where.

A bf16 forward pass (``torch.autocast`` with bfloat16) is much faster than fp32 on CPUs with
native bf16 instructions (AVX512-BF16, AMX-BF16) and slower on those without, where it is
emulated; on a GPU it is the usual mixed precision of Ampere and later cards (no loss scaling
needed, unlike fp16). ``precision: auto`` options resolve through :func:`resolve_precision`.

A torch model resolved to a GPU also turns off torch's cuDNN attention for the process
(:func:`no_cudnn_attention`): it plans anew for every shape, and these models' shapes vary.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Literal

from pydantic import Field

from .errors import ComponentError

#: what a ``device`` option accepts
DEVICE_PATTERN = r"^(auto|cpu|cuda(:[0-9]+)?)$"
_DEVICE_RE = re.compile(DEVICE_PATTERN)

#: what a ``precision`` option accepts (resolved by :func:`resolve_precision`)
Precision = Literal["auto", "fp32", "bf16"]


def device_field(what: str = "the model"):
    """The ``device`` option of a component Config (default ``auto``), with its pattern and
    description; one definition so that every component accepts and documents the same values."""
    return Field("auto", pattern=DEVICE_PATTERN, description=(
        f"Device for {what}: auto (the first GPU when one is visible, else the CPU), cpu, cuda "
        f"or cuda:N (an error when no such GPU is visible)."))


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16; Linux flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def parse_device(spec: str, where: str = "device") -> tuple[str, int | None]:
    """``(kind, index)`` of a device option: ``auto``/``cpu``/``cuda`` with index None, or
    ``cuda:N`` as ``("cuda", N)``; anything else is a one-line error naming ``where``."""
    if not isinstance(spec, str) or not _DEVICE_RE.match(spec):
        raise ComponentError(f"{where}: device {spec!r}: give auto, cpu, cuda or cuda:N")
    kind, _, index = spec.partition(":")
    return kind, int(index) if index else None


def visible_gpus(library: str = "torch") -> int:
    """How many CUDA devices ``library`` (``torch`` or ``ctranslate2``) sees here and can use; 0
    when it is not installed, was built without CUDA, or (CTranslate2) cannot load the CUDA
    libraries it runs models with (:func:`ctranslate2_cuda_problem`)."""
    try:
        if library == "ctranslate2":
            count = _ct2_counts_gpus()
            return 0 if count and ctranslate2_cuda_problem() else count
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except ImportError:
        return 0


@functools.lru_cache(maxsize=None)
def ctranslate2_cuda_problem() -> str | None:
    """Why CTranslate2 cannot run models on the GPUs it counts, or None when it can.

    Its PyPI wheels link the CUDA runtime statically, so they count the GPUs of any driver, but
    load cuBLAS of the CUDA major version they were built for when they first run a model there:
    on a machine with only another version (libcublas.so.13 beside wheels built for 12) every
    translation failed with "Library libcublas.so.12 is not found" after ``auto`` had chosen the
    GPU. Checked once per process, by loading that library as CTranslate2 would."""
    import ctypes

    import ctranslate2

    libdir = Path(ctranslate2.__file__).resolve().parent.parent / "ctranslate2.libs"
    names: set[bytes] = set()
    for lib in sorted(libdir.glob("libctranslate2*.so*")):
        names |= set(re.findall(rb"libcublas\.so\.[0-9]+", lib.read_bytes()))
    missing = []
    for name in sorted(n.decode() for n in names):
        for candidate in (name, str(libdir / name)):
            try:
                ctypes.CDLL(candidate)
                break
            except OSError:
                continue
        else:
            missing.append(name)
    if missing:
        return (f"ctranslate2 {ctranslate2.__version__} counts a GPU but cannot load "
                f"{', '.join(missing)} (its wheels need that CUDA version's cuBLAS)")
    return None


def resolve_device(spec: str, where: str, library: str = "torch") -> str:
    """The device a component runs on, ``cpu`` or ``cuda:N``, for its ``device`` option ``spec``.

    ``auto`` is ``cuda:0`` when ``library`` sees a GPU, else ``cpu``; ``cuda`` is ``cuda:0``.
    ``where`` names the component (a step prefixes its index), so that asking for a GPU that is
    not there fails before any work with e.g. ``nmt_logprob.v1: device cuda: no GPU visible to
    torch``."""
    dev, index = parse_device(spec, where)
    if dev == "cpu":
        return "cpu"
    count = visible_gpus(library)
    if dev == "auto":
        if not count:
            return "cpu"
    elif not count:
        why = ""
        if library == "ctranslate2":
            try:
                why = f" ({ctranslate2_cuda_problem()})" if _ct2_counts_gpus() else ""
            except ImportError:
                pass
        raise ComponentError(f"{where}: device {spec}: no GPU visible to {library}{why}")
    index = index or 0
    if index >= count:
        raise ComponentError(f"{where}: device {spec}: {library} sees {count} GPU"
                             f"{'s' if count > 1 else ''} (cuda:0 to cuda:{count - 1})")
    if library == "torch":
        no_cudnn_attention()
    return f"cuda:{index}"


def no_cudnn_attention() -> None:
    """Keep torch's ``scaled_dot_product_attention`` off its cuDNN backend in this process, once
    a torch model is to run on a GPU.

    Since torch 2.9, SDPA prefers cuDNN attention on Hopper and Blackwell GPUs (pytorch/pytorch
    PR 162073), and cuDNN builds an execution graph for every tensor shape it has not seen,
    a few hundred milliseconds each. Every model here sees shapes that change from call to call
    (length-bucketed training batches, beam search, scoring batches): on an H200, the first epoch
    of a news training, in which every batch has a new shape, ran at 2.6-2.9 updates/s and the
    later epochs, which repeat the first one's shapes, at 16.7 (docs/benchmarks.md, "GPU check").
    Flash and memory-efficient attention need no such plan. A CPU process never calls this."""
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)


def _ct2_counts_gpus() -> int:
    """The CUDA devices CTranslate2 counts, whether or not it can run models on them."""
    import ctranslate2

    return int(ctranslate2.get_cuda_device_count())


def ct2_device(device: str) -> tuple[str, int]:
    """A resolved device (``cpu`` or ``cuda:N``) as CTranslate2's ``(device, device_index)``."""
    kind, _, index = device.partition(":")
    return kind, int(index or 0)


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """``auto`` as ``bf16`` where the device computes bfloat16 natively (a CPU with AVX512-BF16
    or AMX, a GPU of compute capability 8.0 or later), else ``fp32``; others as given."""
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        import torch

        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_bf16() else "fp32"


def autocast(torch, device: str, precision: str):
    """The ``torch.autocast`` context of a forward pass on ``device`` (``cpu`` or ``cuda:N``) in
    resolved ``precision``: bf16 autocast, or a disabled context for fp32."""
    return torch.autocast(device.partition(":")[0], dtype=torch.bfloat16,
                          enabled=precision == "bf16")


def cpu_state_dict(module):
    """``module``'s state dict with every tensor on the CPU, for saving: a file written from a GPU
    then loads on a machine without one (``torch.load`` would otherwise try to put each tensor
    back on the GPU it came from). A CPU module's own state dict is returned as it is, so what it
    saves stays byte for byte the same."""
    state = module.state_dict()
    if all(t.device.type == "cpu" for t in state.values()):
        return state
    out = type(state)((k, t.detach().cpu()) for k, t in state.items())
    if hasattr(state, "_metadata"):
        out._metadata = state._metadata  # the module versions load_state_dict reads
    return out
