"""release_free_memory: the pages a worker freed between live allocations go back to the system."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bitextforge.processes import release_free_memory

# in a fresh interpreter: 300 MB in 1 KB blocks (glibc's heap, not Python's small-object arenas),
# every 100th kept, so the freed blocks lie between live ones and glibc keeps their pages
SCRIPT = """
import ctypes, sys
from bitextforge.processes import release_free_memory

def rss_mb():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) // 1024

blocks = [bytes(1024) for _ in range(300_000)]
kept = blocks[::100]
del blocks
before = rss_mb()
assert release_free_memory()
print(before, rss_mb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; glibc's malloc_trim")
def test_freed_pages_between_live_blocks_go_back_to_the_system():
    if not release_free_memory():
        pytest.skip("this C library has no malloc_trim (not glibc)")
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    before, after = map(int, out.stdout.split())
    # measured: 333 -> 41 MB; without the call it stays at 333
    assert before - after > 150, (before, after)
