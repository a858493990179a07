"""Plugin manager: discovers plugins through the ``bitextforge`` entry-point group and keeps the
registered components by kind and versioned name.

Built-in plugins are registered exactly as third-party ones are (datasette's and llm's
``DEFAULT_PLUGINS`` idea, through entry points). ``BITEXTFORGE_LOAD_PLUGINS`` (a comma-separated
list of entry-point names, or an empty string for none) restricts what loads, like llm's
``LLM_LOAD_PLUGINS``.

A built-in plugin is imported when a command first needs one of its components: the list of what
each registers (``bitextforge.plugins.COMPONENTS``) stands in for it until then, so a run imports
only the plugins its recipe names. Third-party plugins are imported at start-up. Either way,
components are collected in entry-point order, so duplicate-name errors and command listings read
as when every plugin was imported at once.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Iterable, Iterator

import pluggy
from pydantic import BaseModel

from . import hookspecs
from .base import Component
from .commands import Command, collect_commands
from .kinds import HOOK_FOR_KIND, KINDS, kind_of_class
from ..errors import RegistryError

ENTRY_POINT_GROUP = "bitextforge"

#: the hook that registers components of every kind (each goes where its ``kind`` says)
COMPONENTS_HOOK = "register_components"
#: every hook a plugin may implement: register_components, each kind's own (which plugins
#: written before register_components implement), and register_commands
HOOKS = (COMPONENTS_HOOK, *HOOK_FOR_KIND.values(), "register_commands")

@dataclass(frozen=True)
class Registration:
    """One registered component: its class and where it came from."""

    cls: type[Component]
    plugin: str
    package: str
    package_version: str

    @property
    def origin(self) -> str:
        """Human-readable origin, e.g. ``plugin basic_filters (bitextforge 0.1.0)``."""
        return f"plugin {self.plugin} ({self.package} {self.package_version})"

    def unavailable(self, config: Any = None) -> str | None:
        """Why the component cannot be built in this install with ``config`` (an extra of its
        package not installed: the one message naming the component and the extra), or None."""
        from .extras import unavailable

        return unavailable(self.cls, self.package, config)

    def missing_extra(self) -> str | None:
        """The extra of its package the component always needs and this install lacks, or None
        (what ``bitextforge plugins`` marks)."""
        from .extras import missing_extra

        return missing_extra(self.cls, self.package)


class Registry:
    """Components by kind and name, collected from pluggy hook implementations."""

    def __init__(self) -> None:
        """Create an empty registry with the hook specs installed."""
        self.pm = pluggy.PluginManager("bitextforge")
        self.pm.add_hookspecs(hookspecs)
        self._plugin_dists: dict[str, tuple[str, str]] = {}
        self._plugin_entry_points: dict[str, str] = {}
        self._components: dict[str, dict[str, Registration]] | None = None
        #: each plugin's commands, read from its register_commands when it is added
        self._commands: dict[str, list[Command]] = {}
        #: one line per entry-point plugin that was skipped (failed import, misspelled hook,
        #: failed register_commands)
        self.problems: list[str] = []
        #: built-in entry points not imported yet, with the components they register by kind
        self._pending: dict[str, tuple[metadata.EntryPoint, dict[str, tuple[str, ...]]]] = {}
        #: held while plugins are imported and components collected: serve's request threads
        #: may ask for components at once, and one must not see a plugin another is importing as
        #: neither pending nor registered
        self._lock = threading.RLock()
        #: each plugin's place in loading order (entry-point order, then in-process additions)
        self._rank: dict[str, int] = {}
        #: print problems as they arise (the process-wide registry, once its first ones are out)
        self._print_problems = False

    # -- loading ---------------------------------------------------------------------------------
    def load_entry_points(self) -> None:
        """Import every third-party plugin of the ``bitextforge`` entry-point group and note the
        built-in ones, imported when first needed (respecting the env var either way)."""
        allowed = os.environ.get("BITEXTFORGE_LOAD_PLUGINS")
        allow = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if allow is not None and ep.name not in allow:
                continue
            if self.pm.get_plugin(ep.name) is not None or ep.name in self._pending:
                continue
            self._rank.setdefault(ep.name, len(self._rank))
            index = _builtin_index(ep)
            if index is not None:
                self._pending[ep.name] = (ep, index)
            else:
                self._load(ep)

    def _load(self, ep: metadata.EntryPoint) -> None:
        """Import one entry point's plugin and register it; a failure is one line in problems."""
        before = len(self.problems)
        try:
            # A broken third-party plugin names itself and is skipped, so the other plugins and
            # commands such as `bitextforge plugins` keep working. That includes a plugin that
            # calls sys.exit (or raises another BaseException) at import; only Ctrl-C stops.
            try:
                with user_interrupts() as interrupted:
                    module = ep.load()
            except KeyboardInterrupt as exc:
                if interrupted():
                    raise
                self.problems.append(f"plugin {ep.name!r} (entry point {ep.value}) failed to "
                                     f"import: {describe_failure(exc)} raised by the plugin "
                                     f"itself, not by Ctrl-C; plugin skipped")
                return
            except BaseException as exc:  # noqa: BLE001 - any import failure of foreign code
                # an Exception's own message, as always; SystemExit's alone ("3") says nothing
                why = str(exc) if isinstance(exc, Exception) else describe_failure(exc)
                self.problems.append(f"plugin {ep.name!r} (entry point {ep.value}) failed to "
                                     f"import: {why}; plugin skipped")
                return
            dist = getattr(ep, "dist", None)
            try:
                self.add_plugin(
                    module,
                    name=ep.name,
                    package=_dist_facts(dist)[0] if dist else "?",
                    version=_dist_facts(dist)[1] if dist else "?",
                    entry_point=ep.value,
                )
            except RegistryError as exc:
                self.problems.append(f"{exc}; plugin skipped")
        finally:
            if self._print_problems:
                for problem in self.problems[before:]:
                    print(f"bitextforge: error: {problem}", file=sys.stderr)

    def _load_pending(self, names: Iterable[str] | None = None) -> None:
        """Import the built-in plugins not imported yet (all, or those in ``names``)."""
        with self._lock:
            for name in [n for n in self._pending if names is None or n in names]:
                self._load(self._pending.pop(name)[0])

    def load_builtin(self, module: str) -> None:
        """Import now the built-in plugin whose entry point is ``module``, if it is not yet (so a
        test that adds that module finds it registered, as before built-ins loaded lazily)."""
        self._load_pending([n for n, (ep, _) in self._pending.items() if ep.value == module])

    def _pending_with(self, kind: str, names: Iterable[str]) -> list[str]:
        """The built-in plugins not imported yet that register one of ``names`` as ``kind``."""
        wanted = set(names)
        return [p for p, (_, index) in self._pending.items() if wanted & set(index.get(kind, ()))]

    def add_plugin(self, plugin: Any, name: str | None = None, package: str = "(in-process)",
                   version: str = "", entry_point: str | None = None) -> str:
        """Register a plugin object or module in-process; returns the plugin name used.

        Its ``register_commands`` runs here (the commands' setups do not): a plugin whose hook
        raises is unregistered again and refused with a :class:`RegistryError`, so an installed
        one is skipped like a plugin that fails to import."""
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        label = name or getattr(plugin, "__name__", None) or repr(plugin)
        for attr in _unknown_hooks(plugin):
            best = difflib.get_close_matches(attr, list(HOOKS), n=1, cutoff=0.5)
            hint = f"; did you mean {best[0]}?" if best else f"; the hooks are {', '.join(HOOKS)}"
            raise RegistryError(f"plugin {label!r}: {attr} is not a bitextforge hook{hint}")
        name = self.pm.register(plugin, name=name)
        if name is None:
            raise RegistryError(f"plugin {plugin!r} was registered already")
        self._rank.setdefault(name, len(self._rank))
        self._plugin_dists[name] = (package, version)
        if entry_point is not None:
            self._plugin_entry_points[name] = entry_point
        self.pm.check_pending()
        self._components = None
        try:
            with user_interrupts() as interrupted:
                self._commands[name] = collect_commands(self.pm, name)
        except KeyboardInterrupt as exc:
            if interrupted():
                self.remove_plugin(name)
                raise
            label = self.plugin_label(name)
            self.remove_plugin(name)
            raise RegistryError(f"{label} failed in register_commands: {describe_failure(exc)} "
                                f"raised by the plugin itself, not by Ctrl-C") from exc
        except BaseException as exc:  # noqa: BLE001 - foreign code, even a sys.exit in it
            label = self.plugin_label(name)
            self.remove_plugin(name)
            raise RegistryError(f"{label} failed in register_commands: "
                                f"{describe_failure(exc)}") from exc
        return name

    def remove_plugin(self, name: str) -> None:
        """Unregister a plugin by name (used by the pytest fixture for plugin authors)."""
        self.pm.unregister(name=name)
        self._plugin_dists.pop(name, None)
        self._plugin_entry_points.pop(name, None)
        self._commands.pop(name, None)
        self._components = None

    def plugin_label(self, name: str) -> str:
        """How messages name a plugin: ``plugin 'x' (entry point x_pkg, x-dist 0.1)`` for an
        installed one, ``plugin 'x'`` for one added in-process."""
        if name not in self._plugin_entry_points:
            return f"plugin {name!r}"
        package, version = self._plugin_dists.get(name, ("?", "?"))
        entry_point = self._plugin_entry_points[name]
        return f"plugin {name!r} (entry point {entry_point}, {package} {version})"

    def commands(self) -> list[Command]:
        """The commands every registered plugin declared, plugin by plugin in hook order (the
        order the CLI lists them in); duplicates are left to :func:`commands.plugin_commands`."""
        self._load_pending()
        out: list[Command] = []
        seen: set[str] = set()
        for impl in self._in_order(self.pm.hook.register_commands.get_hookimpls()):
            if impl.plugin_name not in seen:
                seen.add(impl.plugin_name)
                out.extend(self._commands.get(impl.plugin_name, ()))
        return out

    # -- collecting ------------------------------------------------------------------------------
    def _in_order(self, impls: list) -> list:
        """Hook implementations in loading order, as if every plugin had been imported at
        start-up (pluggy's own order is the order plugins were registered in)."""
        return sorted(impls, key=lambda impl: self._rank.get(impl.plugin_name, len(self._rank)))

    def _collect(self) -> dict[str, dict[str, Registration]]:
        with self._lock:
            return self._collect_locked()

    def _collect_locked(self) -> dict[str, dict[str, Registration]]:
        if self._components is not None:
            return self._components
        comps: dict[str, dict[str, Registration]] = {k: {} for k in KINDS}
        for kind, hook_name in [(None, COMPONENTS_HOOK), *HOOK_FOR_KIND.items()]:
            hook = getattr(self.pm.hook, hook_name)
            for impl in self._in_order(hook.get_hookimpls()):
                plugin_name = self.pm.get_name(impl.plugin) or repr(impl.plugin)
                package, version = self._plugin_dists.get(plugin_name, ("?", "?"))

                def register(cls, _kind=kind, _plugin=plugin_name, _pkg=package, _ver=version):
                    _kind = _kind or self._kind_of(cls, _plugin)
                    self._check_class(cls, _kind, _plugin)
                    reg = Registration(cls, _plugin, _pkg, _ver)
                    existing = comps[_kind].get(cls.name)
                    if existing is not None and existing.cls is not cls:
                        raise RegistryError(
                            f"{_kind} name {cls.name!r} is registered twice: by {existing.origin} "
                            f"({existing.cls.__module__}.{existing.cls.__qualname__}) and by "
                            f"{reg.origin} ({cls.__module__}.{cls.__qualname__})"
                        )
                    comps[_kind][cls.name] = reg

                impl.function(register=register)
        self._components = comps
        return comps

    @staticmethod
    def _kind_of(cls: Any, plugin: str) -> str:
        """The kind a class given to ``register_components`` is registered as: its base's."""
        kind = kind_of_class(cls)
        if kind is None:
            bases = ", ".join(f"bitextforge.{base.__name__}" for base in KINDS.values())
            raise RegistryError(f"plugin {plugin!r} registered {cls!r}, which subclasses none "
                                f"of {bases}")
        return kind.name

    @staticmethod
    def _check_class(cls: Any, kind: str, plugin: str) -> None:
        base = KINDS[kind]
        if not (inspect.isclass(cls) and issubclass(cls, base)):
            raise RegistryError(f"plugin {plugin!r} registered {cls!r} as a {kind}, "
                                f"but it does not subclass bitextforge.{base.__name__}")
        if not isinstance(cls.name, str) or "." not in cls.name:
            raise RegistryError(f"plugin {plugin!r}: {cls.__qualname__}.name must be a versioned "
                                f"string like 'my_filter.v1', got {cls.name!r}")
        cfg = cls.Config
        if not (inspect.isclass(cfg) and issubclass(cfg, base.Config)):
            raise RegistryError(f"plugin {plugin!r}: {cls.__qualname__}.Config must subclass "
                                f"{base.__name__}.Config")
        if cfg.model_config.get("extra") != "forbid":
            raise RegistryError(f"plugin {plugin!r}: {cls.__qualname__}.Config must forbid extra keys")
        if inspect.isabstract(cls):
            missing = ", ".join(f"{m}()" for m in sorted(cls.__abstractmethods__))
            raise RegistryError(f"plugin {plugin!r}: {cls.__qualname__} does not implement "
                                f"{missing}, which bitextforge.{base.__name__} declares abstract")

    # -- queries ---------------------------------------------------------------------------------
    def check(self) -> None:
        """Collect every plugin's components now: a duplicate name or a bad class raises its one
        :class:`RegistryError` here, once, rather than at every lookup that would meet it.
        Built-in plugins not imported yet are imported where they register a name taken already."""
        with self._lock:
            comps = self._collect()
            clashes = {p for kind, names in comps.items() for p in self._pending_with(kind, names)}
            if clashes:
                self._load_pending(clashes)
                self._collect()

    def names(self, kind: str) -> list[str]:
        """Sorted registered names of one kind."""
        self._load_pending()
        return sorted(self._collect()[kind])

    def registrations(self) -> Iterator[tuple[str, Registration]]:
        """Every registration as ``(kind, Registration)``, kinds in hook order, names sorted."""
        self._load_pending()
        comps = self._collect()
        for kind in KINDS:
            for name in sorted(comps[kind]):
                yield kind, comps[kind][name]

    def packages(self) -> list[str]:
        """``"package version"`` of every plugin that registers components, sorted (the run
        manifest's list), without importing the built-in plugins not imported yet."""
        comps = self._collect()
        out = {f"{r.package} {r.package_version}".strip() for regs in comps.values()
               for r in regs.values()}
        out.update(" ".join(_dist_facts(ep.dist)).strip() for ep, _ in self._pending.values())
        return sorted(out)

    def get(self, kind: str, name: str) -> type[Component]:
        """The class registered under ``name``; an unknown name lists the closest ones."""
        return self.registration(kind, name).cls

    def registration(self, kind: str, name: str) -> Registration:
        """The registration of ``name`` (its class and package); an unknown name lists the
        closest ones."""
        with self._lock:
            self._load_pending(self._pending_with(kind, [name]))
            comps = self._collect()[kind]
            if name not in comps:
                self._load_pending()  # the suggestions come from every plugin
                comps = self._collect()[kind]
        if name in comps:
            return comps[name]
        raise RegistryError(f"unknown {kind} {name!r}{suggest(name, comps)}")

    def find(self, name: str) -> tuple[str, Registration]:
        """Look a name up across all kinds (for ``bitextforge describe``)."""
        every = {}
        for kind, reg in self.registrations():
            every[reg.cls.name] = (kind, reg)
        if name in every:
            return every[name]
        raise RegistryError(f"no component named {name!r}{suggest(name, every)}")


_DIST_FACTS: dict[Any, tuple[str, str]] = {}


def _dist_facts(dist: metadata.Distribution) -> tuple[str, str]:
    """A distribution's name and version, parsed once per process: every entry point of a
    distribution asks, and each parse of its metadata file costs about a millisecond of start-up."""
    key = getattr(dist, "_path", None) or id(dist)
    if key not in _DIST_FACTS:
        _DIST_FACTS[key] = (dist.metadata["Name"], dist.version)
    return _DIST_FACTS[key]


def _builtin_index(ep: metadata.EntryPoint) -> dict[str, tuple[str, ...]] | None:
    """What a built-in plugin's entry point registers, by kind; None for any other plugin."""
    from ..plugins import COMPONENTS

    dist = getattr(ep, "dist", None)
    if ep.value not in COMPONENTS or dist is None or _dist_facts(dist)[0] != "bitextforge":
        return None
    return COMPONENTS[ep.value]


def _unknown_hooks(plugin: Any) -> list[str]:
    """Names of ``plugin``'s hook implementations that match no hook spec (a misspelled hook),
    found before registering so pluggy never half-registers the plugin."""
    marker = f"{hookspecs.hookimpl.project_name}_impl"
    known = set(HOOKS)
    out = []
    for attr in dir(plugin):
        try:
            value = getattr(plugin, attr)
        except Exception:  # noqa: BLE001 - a property of foreign code; not a hook
            continue
        if getattr(value, marker, None) is not None:
            hook = getattr(value, marker).get("specname") or attr
            if hook not in known:
                out.append(hook)
    return out


@contextmanager
def user_interrupts():
    """Run foreign code (a plugin's import or hook) telling a real Ctrl-C from a
    ``KeyboardInterrupt`` the code raises itself: yields a function that says whether SIGINT
    arrived meanwhile. Only the first should stop the command; the second is a broken plugin.
    Outside the main thread no handler can be set, and every ``KeyboardInterrupt`` counts as the
    user's."""
    seen: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: True
        return
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        seen.append(True)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield lambda: bool(seen)
    finally:
        signal.signal(signal.SIGINT, previous)


def describe_failure(exc: BaseException) -> str:
    """One line for an exception raised by a plugin's code: ``ValueError: bad value``."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def suggest(name: str, candidates) -> str:
    """``"; did you mean X or Y?"`` for the closest candidates, or the list of all when few."""
    cands = sorted(candidates)
    close = difflib.get_close_matches(name, cands, n=3, cutoff=0.5)
    if close:
        return "; did you mean " + " or ".join(close) + "?"
    if cands and len(cands) <= 12:
        return "; available: " + ", ".join(cands)
    return ""


def config_fields(cfg: type[BaseModel]) -> list[tuple[str, str, Any, str]]:
    """``(name, type, default, description)`` for each field of a Config model."""
    out = []
    for fname, f in cfg.model_fields.items():
        ann = f.annotation
        tname = getattr(ann, "__name__", None) or str(ann).replace("typing.", "")
        default = "(required)" if f.is_required() else f.get_default(call_default_factory=True)
        out.append((fname, tname, default, f.description or ""))
    return out


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, loading entry-point plugins on first use."""
    global _REGISTRY
    if _REGISTRY is None:
        reg = Registry()
        reg.load_entry_points()
        for problem in reg.problems:
            print(f"bitextforge: error: {problem}", file=sys.stderr)
        reg._print_problems = True
        _REGISTRY = reg
    return _REGISTRY
