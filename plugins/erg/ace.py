"""Where ACE and the ERG image are, and a long-lived ACE process with a per-item watchdog.

Nichols, Bond, Appling & Matsumoto (*Paraphrasing Training Data for Statistical Machine
Translation*, section 3.2) parse with the ERG's robust root and generate with its strict root. We
drive ACE (the DELPH-IN parser/generator that replaced PET and the LKB) through pydelphin's
``delphin.ace.ACEParser`` / ``ACEGenerator``. pydelphin blocks on ACE's stdout with no timeout, so
:class:`AceSession` arms a timer per item that kills the process when it does not answer and
starts a fresh one for the next item: one hung sentence never hangs a run.

Paths are resolved in this order: the component's ``ace`` / ``grammar`` options, the environment
variables ``BITEXTFORGE_ACE`` / ``BITEXTFORGE_ERG``, the user file
``$XDG_CONFIG_HOME/bitextforge/erg.toml`` (``~/.config/bitextforge/erg.toml``) with keys ``ace`` and
``grammar``, then ``ace`` on ``PATH`` and ``$XDG_DATA_HOME/bitextforge/erg.dat``
(``~/.local/share/bitextforge/erg.dat``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bitextforge import ComponentError

ENV_ACE = "BITEXTFORGE_ACE"
ENV_ERG = "BITEXTFORGE_ERG"

# Confirmed on the DELPH-IN wiki (github.com/delph-in/docs/wiki/QuickStart, ErgTop); see docs/erg.md.
ACE_PAGE = "https://sweaglesw.org/linguistics/ace/"
ACE_VERSION = "0.9.34"
ACE_TARBALL = f"http://sweaglesw.org/linguistics/ace/download/ace-{ACE_VERSION}-x86-64.tar.gz"
ERG_IMAGE = ("https://github.com/delph-in/erg/releases/download/2025/"
             f"erg-2025-x86-64-{ACE_VERSION}.dat.bz2")


def user_config_file() -> Path:
    """``$XDG_CONFIG_HOME/bitextforge/erg.toml`` (``~/.config/...`` when the variable is unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "bitextforge" / "erg.toml"


def default_grammar_file() -> Path:
    """``$XDG_DATA_HOME/bitextforge/erg.dat`` (``~/.local/share/...`` when the variable is unset)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return Path(base) / "bitextforge" / "erg.dat"


def _read_user_config() -> dict[str, Any]:
    path = user_config_file()
    if not path.is_file():
        return {}
    import tomllib

    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ComponentError(f"{path}: cannot read the ERG settings file ({exc}); fix or remove "
                             f"it") from None
    unknown = set(data) - {"ace", "grammar"}
    if unknown:
        raise ComponentError(f"{path}: unknown keys {sorted(unknown)}; only 'ace' and 'grammar' "
                             f"are read")
    return data


@dataclass
class Resolved:
    """A resolved path and where it came from (for the doctor and error messages)."""

    path: str | None
    source: str


def _resolve(option: str | None, option_name: str, env: str, key: str) -> Resolved | None:
    """The path from the component option, then the environment variable, then erg.toml."""
    if option:
        return Resolved(os.path.expanduser(option), f"the '{option_name}' option")
    if os.environ.get(env):
        return Resolved(os.path.expanduser(os.environ[env]), f"${env}")
    cfg = _read_user_config()
    if cfg.get(key):
        return Resolved(os.path.expanduser(str(cfg[key])), str(user_config_file()))
    return None


def resolve_ace(option: str | None) -> Resolved:
    """Find the ACE executable: option, ``BITEXTFORGE_ACE``, erg.toml, then ``ace`` on PATH."""
    found = _resolve(option, "ace", ENV_ACE, "ace")
    if found:
        return found
    on_path = shutil.which("ace")
    return Resolved(on_path, "PATH") if on_path else Resolved(None, "nowhere")


def resolve_grammar(option: str | None) -> Resolved:
    """Find the compiled ERG image: option, ``BITEXTFORGE_ERG``, erg.toml, then the data dir."""
    found = _resolve(option, "grammar", ENV_ERG, "grammar")
    if found:
        return found
    default = default_grammar_file()
    return Resolved(str(default), "default location") if default.is_file() else Resolved(None,
                                                                                          "nowhere")


def ace_hint() -> str:
    """How to get ACE (for the doctor and error messages)."""
    return (f"ACE is the DELPH-IN parser/generator ({ACE_PAGE}); Linux x86-64:\n"
            f"  wget {ACE_TARBALL} -O - | tar xz\n"
            f"then point to ace-{ACE_VERSION}/ace with the erg.v1 option 'ace', "
            f"${ENV_ACE}, 'ace = \"...\"' in {user_config_file()}, or put it on PATH.\n"
            f"macOS builds (ace-<version>-osx.tar.gz) are on the same page.")


def grammar_hint() -> str:
    """How to get a compiled ERG image matching the ACE version (for the doctor)."""
    return (f"A compiled ERG image must match the ACE version (file name ends in -{ACE_VERSION}"
            f".dat for ACE {ACE_VERSION}):\n"
            f"  mkdir -p {default_grammar_file().parent}\n"
            f"  wget {ERG_IMAGE} -O - | bunzip2 > {default_grammar_file()}\n"
            f"or put it elsewhere and set ${ENV_ERG}, 'grammar = \"...\"' in "
            f"{user_config_file()}, or the erg.v1 option 'grammar'.")


def ace_version(executable: str, timeout: float = 10.0) -> str:
    """``ace -V``'s version string, or raise ComponentError naming the executable."""
    try:
        out = subprocess.run([executable, "-V"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ComponentError(f"{executable}: cannot run ACE ({exc})") from None
    text = out.stdout + out.stderr
    for line in text.splitlines():
        if line.startswith("ACE version"):
            return line.split()[2]
    raise ComponentError(f"{executable}: 'ace -V' did not print 'ACE version ...' (got "
                         f"{text.strip()[:80]!r}); is this the DELPH-IN ACE?")


class AceTimeout(Exception):
    """ACE did not answer one item in time; the process was killed and will be restarted."""


class AceSession:
    """One long-lived pydelphin ACE process (parser or generator) restarted after a hang or crash.

    pydelphin's ``interact`` blocks on ``readline``; the watchdog kills the process after
    ``timeout`` seconds, which makes that ``readline`` return, and the next item starts a new
    process. ACE loads a grammar image with mmap in about a second, so restarts are cheap next to
    a hung run.
    """

    def __init__(self, kind: str, grammar: str, executable: str, cmdargs: list[str],
                 timeout: float):
        """Remember how to start ``kind`` ("parse" or "generate"); the process starts on first use."""
        self.kind = kind
        self.grammar = grammar
        self.executable = executable
        self.cmdargs = list(cmdargs)
        self.timeout = timeout
        self.proc = None
        self.starts = 0
        self.restarts = 0

    def _start(self):
        from delphin import ace

        cls = ace.ACEParser if self.kind == "parse" else ace.ACEGenerator
        try:
            # pydelphin appends --tsdb-notes/--tsdb-stdout to the list it is given: pass a copy
            self.proc = cls(self.grammar, cmdargs=list(self.cmdargs), executable=self.executable,
                            stderr=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError, ace.ACEProcessError) as exc:
            raise ComponentError(f"erg.v1: cannot start ACE {self.executable} with grammar "
                                 f"{self.grammar}: {exc}") from None
        except ValueError as exc:  # pydelphin refuses options outside its whitelist
            raise ComponentError(f"erg.v1: ACE option refused by pydelphin ({exc}); options "
                                 f"were {self.cmdargs}") from None
        self.starts += 1

    def _kill(self) -> None:
        p = getattr(self.proc, "_p", None)
        if p is not None and p.poll() is None:
            p.kill()

    def interact(self, datum: str):
        """Send one sentence or MRS; return pydelphin's Response, or raise :class:`AceTimeout`."""
        from delphin.ace import ACEProcessError

        if self.proc is None:
            self._start()
        fired = threading.Event()
        killed = getattr(self.proc, "_p", None)

        def watchdog():
            fired.set()
            self._kill()

        timer = threading.Timer(self.timeout, watchdog)
        timer.daemon = True
        timer.start()
        try:
            response = self.proc.interact(datum)
        except (OSError, ValueError, ACEProcessError) as exc:
            # a write to a dead process, a read from a closed pipe, or a restart that failed
            timer.cancel()
            self._discard()
            if fired.is_set():
                raise AceTimeout(datum) from None
            raise ComponentError(f"erg.v1: ACE ({self.kind}) failed on {datum[:60]!r}: "
                                 f"{exc}") from None
        finally:
            timer.cancel()
        p = getattr(self.proc, "_p", None)
        if fired.is_set():
            if p is not None and p is not killed and p.poll() is None:
                self.restarts += 1  # pydelphin's parser already started a fresh process
            else:
                self._discard()
            raise AceTimeout(datum)
        # A process that dies mid-item closes stdout; pydelphin's parser then takes the two empty
        # reads for its blank-line terminators and returns an answer with no content at all (ACE
        # itself always reports :readings, see itsdb.c), possibly before poll() sees the exit.
        died = "readings" not in response and not response.get("results")
        if p is None or p.poll() is not None or died:
            self._discard()  # crashed while answering: a fresh process for the next item
        return response

    def _discard(self) -> None:
        if self.proc is None:
            return
        self._kill()
        try:
            self.proc.close()
        except (OSError, ValueError):
            pass
        self.proc = None
        self.restarts += 1

    def close(self) -> None:
        """Stop the process (ACE exits when its stdin closes)."""
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        timer = threading.Timer(self.timeout, lambda: getattr(proc, "_p").kill())
        timer.daemon = True
        timer.start()
        try:
            proc.close()
        except (OSError, ValueError):
            pass
        finally:
            timer.cancel()
