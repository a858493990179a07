"""What the CPU can do, for components that choose their arithmetic by it.

A bf16 forward pass (``torch.autocast`` with bfloat16) is much faster than fp32 on CPUs with
native bf16 instructions (AVX512-BF16, AMX-BF16) and slower on those without, where it is
emulated; ``precision: auto`` options resolve through :func:`resolve_precision`.
"""

from __future__ import annotations

from pathlib import Path


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16; Linux flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(precision: str) -> str:
    """``auto`` as ``bf16`` where the CPU has native bf16, else ``fp32``; others as given."""
    if precision == "auto":
        return "bf16" if cpu_has_bf16() else "fp32"
    return precision
