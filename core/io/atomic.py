"""Text files written whole or not at all: a temporary file beside the final name, fsynced and
renamed into place, with the mode ``open()`` would give it (:class:`AtomicFile`,
:func:`write_atomic`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def current_umask() -> int:
    """The process umask (``os.umask`` only sets it, so it is set and restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicFile:
    """A text file written under a temporary name and renamed into place by :meth:`commit`.

    A crash, an exception or :meth:`discard` never leaves a half-written file under the final name.
    """

    def __init__(self, path: str | os.PathLike):
        """Open a temporary file beside ``path``."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        # mkstemp creates 0600; a finished output gets the mode open() would give it, so other
        # users and tools on a shared machine can read the corpus when the umask allows
        os.fchmod(fd, 0o666 & ~current_umask())
        self.tmp = Path(tmp)
        self.fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")

    def write(self, text: str) -> None:
        """Write text to the temporary file."""
        self.fh.write(text)

    def commit(self) -> Path:
        """Flush, fsync and rename the temporary file to its final name."""
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        """Close and delete the temporary file."""
        if not self.fh.closed:
            self.fh.close()
        self.tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write a whole text file atomically."""
    f = AtomicFile(path)
    try:
        f.write(text)
        return f.commit()
    except BaseException:
        f.discard()
        raise
