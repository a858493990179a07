"""Optional dependencies ("extras"): whether the extra a component needs is installed, and the one
message that says which one to install.

The core install (``pip install bitextforge``) runs the quick start; each plugin family's heavy
libraries are an extra of the package (``pip install 'bitextforge[nmt]'``). A component names the
extras it needs (:meth:`bitextforge.Component.extras`); whether one is installed is read from the
package's own metadata (its ``Requires-Dist`` lines for that extra), never by importing a library,
so listing components and ``--help`` stay fast, and pyproject.toml stays the one list of what an
extra holds. A third-party plugin's extras are checked against its own distribution the same way.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def _normal(name: str) -> str:
    """A distribution or extra name as PEP 503 / PEP 685 compare them."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=None)
def _installed(dist: str) -> bool:
    """Whether a distribution of that name is installed (asked once per name and process)."""
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


@lru_cache(maxsize=None)
def missing_distributions(package: str, extra: str) -> tuple[str, ...]:
    """The distributions that ``package``'s ``extra`` requires and that are not installed (empty
    when the extra is complete, or when the package or the extra is unknown: nothing to say)."""
    try:
        requires = metadata.distribution(package).requires or []
    except metadata.PackageNotFoundError:
        return ()
    missing: list[str] = []
    for req in requires:
        spec, _, marker = req.partition(";")
        found = _EXTRA_MARKER.search(marker)
        if found is None or _normal(found.group(1)) != _normal(extra):
            continue
        m = _NAME.match(spec)
        if m is None:
            continue
        name, inner = m.group(1), m.group(2)
        if _normal(name) == _normal(package):  # full = bitextforge[quality,nmt,...]
            for sub in (inner or "").split(","):
                if sub.strip():
                    missing += missing_distributions(package, sub.strip())
        elif not _installed(name):
            missing.append(name)
    return tuple(dict.fromkeys(missing))


def package_extras(package: str) -> tuple[str, ...]:
    """Every extra that distribution ``package`` declares (its ``Provides-Extra`` lines, written
    from pyproject.toml's table), in the order declared; empty when it is not installed."""
    try:
        return tuple(metadata.metadata(package).get_all("Provides-Extra") or ())
    except metadata.PackageNotFoundError:
        return ()


def install_hint(package: str, extra: str) -> str:
    """The command that installs ``package``'s ``extra``."""
    return f"pip install '{package}[{extra}]'"


def missing_extra(cls, package: str, config=None) -> str | None:
    """The first extra that component class ``cls`` (from distribution ``package``) needs with
    ``config`` (None: the class alone, as listings show it) and that is not installed; None when
    every one is."""
    for extra in cls.extras(config):
        if missing_distributions(package, extra):
            return extra
    return None


def unavailable(cls, package: str, config=None) -> str | None:
    """Why component class ``cls`` cannot be built here with ``config``: the one message naming
    the component, the extra and what it lacks, and the command that installs it; None when it
    can be built."""
    extra = missing_extra(cls, package, config)
    if extra is None:
        return None
    missing = ", ".join(missing_distributions(package, extra))
    return (f"{cls.name} needs the '{extra}' extra ({missing} not installed): "
            f"{install_hint(package, extra)}")
