"""ordcore's plugin system: named components contributed through entry points.

A plugin is any installed distribution that declares an entry point in the ``ordcore``
group. The entry point names a module (or object) holding an implementation of the single
hook :meth:`HookSpecs.ordcore_register_components`, marked with :data:`hookimpl`::

    # pyproject.toml of the plugin
    [project.entry-points.ordcore]
    my_plugin = "my_plugin"

    # my_plugin/__init__.py
    from ordcore.plugins import hookimpl

    @hookimpl
    def ordcore_register_components(registry):
        registry.add("order", "reversed", "my_plugin.orders:reversed_order",
                     requires=("numpy",), description="the raster scan, backwards")

The host (this module) stamps every component with the plugin and distribution version that
provided it. Built-in components (the :mod:`ordcore.sfc` scan orders, ``kind="order"``) are
registered through the same hook by the default plugin :mod:`ordcore._builtin_plugin`.

Discovery is lazy and happens once, on the first call of :func:`create`,
:func:`list_components` or :func:`list_plugins` (``import ordcore`` never loads a plugin).
Each distribution's entry points are read, and each entry point loaded and its hook called,
inside its own ``try``/``except``: a broken plugin (unimportable, raising in its hook, or
declared in a malformed ``entry_points.txt``) is listed by :func:`list_plugins` with its
error, and one :class:`PluginLoadWarning` is issued for it; nothing else is affected.

A name registered twice fails alone, and only where it is used. When a plugin registers a
``(kind, name)`` that another plugin already has, :func:`create` and :func:`get_component`
of that one name raise :class:`~ordcore.errors.PluginConflictError` naming both providers
(it is not listed by :func:`list_components`); a built-in name is never taken over, the
built-in component stays in use. The plugin's other components register normally, its
status is ``"conflict"`` and its warning says exactly this.

Environment variables (read at discovery; call :func:`reload_plugins` after changing them):

``ORDCORE_DISABLE_PLUGINS``
    ``1``/``true``/``all``: load no external plugin. Otherwise a comma-separated list of
    plugin names (entry-point or distribution names) to skip.
``ORDCORE_LOAD_PLUGINS``
    A comma-separated allow-list: only these external plugins load (an empty value loads
    none). Built-in components are always available.
``ORDCORE_TRACE_PLUGINS``
    ``1``: print every discovery step and hook call to standard error.

The pattern follows llm and conda (one entry-point group, one prefixed hook, the host stamps
providers) and datasette (built-ins are plugins too), on top of pluggy.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import re
import sys
import threading
import warnings
from dataclasses import dataclass, replace
from typing import Any, Literal

import pluggy

from ordcore._plugin_api import (
    Component,
    HookSpecs,
    Registry,
    hookimpl,
    hookspec,
    provider_text,
)
from ordcore.errors import PluginConflictError, UnknownComponentError

__all__ = [
    "ENTRY_POINT_GROUP",
    "HookSpecs",
    "hookspec",
    "hookimpl",
    "Registry",
    "Component",
    "PluginInfo",
    "PluginLoadWarning",
    "create",
    "get_component",
    "list_components",
    "list_plugins",
    "reload_plugins",
]

ENTRY_POINT_GROUP = "ordcore"
"""The entry-point group plugins declare (``[project.entry-points.ordcore]``)."""

BUILTIN_PLUGIN = "ordcore"
"""The name under which the built-in components are listed."""

PluginStatus = Literal["loaded", "error", "conflict", "disabled"]

_TRUE = {"1", "true", "yes", "on", "all"}


class PluginLoadWarning(UserWarning):
    """A plugin failed to import or to register its components (issued once per plugin)."""


@dataclass(frozen=True)
class PluginInfo:
    """What :func:`list_plugins` reports about one plugin.

    Attributes
    ----------
    name : str
        The entry-point name (``"ordcore"`` for the built-in components).
    version : str
        The providing distribution's version (``""`` when unknown).
    distribution : str
        The providing distribution's name.
    components : tuple of str
        ``"kind/name"`` of every component it registered.
    status : {"loaded", "error", "conflict", "disabled"}
    error : str or None
        The exception text when ``status`` is ``"error"`` or ``"conflict"``.
    """

    name: str
    version: str
    distribution: str
    components: tuple[str, ...]
    status: PluginStatus
    error: str | None = None

# --------------------------------------------------------------------------------------
# The host


class _Host:
    """The discovered state: plugin manager, components, plugin listing, conflicts."""

    def __init__(self) -> None:
        self.trace = os.environ.get("ORDCORE_TRACE_PLUGINS", "").strip().lower() in _TRUE
        self.pm = pluggy.PluginManager("ordcore")
        self.pm.add_hookspecs(HookSpecs)
        if self.trace:
            self.pm.trace.root.setwriter(lambda msg: print(msg, end="", file=sys.stderr))
            self.pm.enable_tracing()
        self.components: dict[tuple[str, str], Component] = {}
        self.plugins: list[PluginInfo] = []
        # (kind, name) registered by two external plugins -> the error its create() raises
        self.conflicts: dict[tuple[str, str], str] = {}
        self.contested: dict[tuple[str, str], Component] = {}  # their first providers
        self._discover()

    def _log(self, msg: str) -> None:
        if self.trace:
            print(f"ordcore.plugins: {msg}", file=sys.stderr)

    def _discover(self) -> None:
        from ordcore import _builtin_plugin

        version = _dist_version("ordcore")
        self._register(BUILTIN_PLUGIN, "ordcore", version, _builtin_plugin)

        disable = os.environ.get("ORDCORE_DISABLE_PLUGINS", "").strip()
        allow_env = os.environ.get("ORDCORE_LOAD_PLUGINS")
        allow = None if allow_env is None else _split(allow_env)
        disable_all = disable.lower() in _TRUE
        blocked = set() if disable_all else _split(disable)

        for ep in self._entry_points():
            dist = getattr(ep, "dist", None)
            dist_name = _dist_name(dist) if dist is not None else ""
            dist_version = _dist_field(dist, "Version") if dist is not None else ""
            names = {ep.name, dist_name}
            if disable_all or names & blocked or (allow is not None and not names & allow):
                why = "ORDCORE_DISABLE_PLUGINS" if disable_all or names & blocked else (
                    "not in ORDCORE_LOAD_PLUGINS"
                )
                self._log(f"skip {ep.name} ({why})")
                self.plugins.append(
                    PluginInfo(ep.name, dist_version, dist_name, (), "disabled", why)
                )
                continue
            self._log(f"load {ep.name} = {ep.value} from {dist_name} {dist_version}")
            try:
                obj = ep.load()
            # SystemExit too: a plugin calling parse_args() or sys.exit() at import time
            # must not end the host. KeyboardInterrupt still propagates.
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin must not break ordcore
                self._fail(ep.name, dist_version, dist_name, exc, "error", "could not be imported")
                continue
            self._register(ep.name, dist_name, dist_version, obj)

    def _entry_points(self) -> list[importlib.metadata.EntryPoint]:
        """The ``ordcore`` entry points of every distribution, sorted by name, each
        distribution parsed on its own (``importlib.metadata.entry_points()`` parses all of
        them at once, so one malformed ``entry_points.txt`` anywhere would raise)."""
        found: list[importlib.metadata.EntryPoint] = []
        seen: set[str] = set()
        for dist in importlib.metadata.distributions():
            name = _dist_name(dist)
            key = re.sub(r"[-_.]+", "-", name).lower()
            if key in seen:  # the first on sys.path wins, as in importlib.metadata
                continue
            seen.add(key)
            try:
                found.extend(dist.entry_points.select(group=ENTRY_POINT_GROUP))
            except Exception as exc:  # noqa: BLE001 - a malformed file breaks only its dist
                text = dist.read_text("entry_points.txt") or ""
                if not re.search(rf"^\s*\[\s*{ENTRY_POINT_GROUP}\s*\]", text, re.MULTILINE):
                    self._log(f"skip {name}: malformed entry_points.txt without an "
                              f"[{ENTRY_POINT_GROUP}] section ({exc!r})")  # fmt: skip
                    continue
                error = ValueError(f"malformed entry_points.txt ({type(exc).__name__}: {exc})")
                self._fail(name, _dist_field(dist, "Version"), name, error, "error",
                           "could not be read")  # fmt: skip
        return sorted(found, key=lambda e: e.name)

    def _register(self, name: str, dist_name: str, version: str, obj: object) -> None:
        registry = Registry(name, version, {**self.components, **self.contested})
        try:
            if self.pm.is_registered(obj):
                raise ValueError(f"the object {obj!r} is already registered by another plugin")
            self.pm.register(obj, name=name)
            others = [p for p in self.pm.get_plugins() if p is not obj]
            caller = self.pm.subset_hook_caller("ordcore_register_components", others)
            self._log(f"call ordcore_register_components of {name}")
            caller(registry=registry)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin must not break ordcore
            self._fail(name, version, dist_name, exc, "error", "failed to register")
            return
        added = registry.components()
        clashes = registry.clashes()
        self.components.update(added)
        keys = tuple(sorted(f"{k}/{n}" for k, n in added))
        self._log(f"{name}: registered {', '.join(keys) or 'nothing'}")
        if not clashes:
            self.plugins.append(PluginInfo(name, version, dist_name, keys, "loaded"))
            return
        notes = []
        for key, comp in sorted(clashes.items()):
            first = self.components.get(key)
            if first is not None and first.plugin == BUILTIN_PLUGIN:
                notes.append(
                    f"'{comp.key}' is also a built-in component of "
                    f"{provider_text(first.plugin, first.plugin_version)}: the built-in one is used "
                    f"and this plugin's is ignored"
                )
                continue
            if first is not None:  # the first external provider loses the name too
                self.contested[key] = self.components.pop(key)
                self.conflicts[key] = (
                    f"component '{comp.key}' is registered by two plugins: "
                    f"{provider_text(first.plugin, first.plugin_version)} and "
                    f"{provider_text(comp.plugin, comp.plugin_version)}; uninstall one, or set "
                    f"ORDCORE_DISABLE_PLUGINS={comp.plugin}"
                )
                self._mark_conflict(first.plugin, comp.key, self.conflicts[key])
            else:  # a third provider of an already conflicting name
                self.conflicts[key] += f" (and also {provider_text(comp.plugin, comp.plugin_version)})"
            notes.append(
                f"{self.conflicts[key]}; create({comp.kind!r}, {comp.name!r}) raises "
                "PluginConflictError until then"
            )
        error = "; ".join(notes)
        self._log(f"{name}: conflict: {error}")
        self.plugins.append(PluginInfo(name, version, dist_name, keys, "conflict", error))
        registered = f"its other components ({', '.join(keys)}) are registered" if keys else (
            "it registers nothing else"
        )
        warnings.warn(
            f"ordcore plugin {name!r} ({dist_name} {version}): {error}; {registered}",
            PluginLoadWarning,
            stacklevel=5,
        )

    def _mark_conflict(self, plugin: str, key: str, note: str) -> None:
        """Lists an earlier plugin as ``"conflict"`` (with ``note``, without ``key``) once a
        later one registers its component ``key`` too: neither provides that name any more."""
        for i, info in enumerate(self.plugins):
            if info.name == plugin and info.status in ("loaded", "conflict"):
                error = note if info.error is None else f"{info.error}; {note}"
                keys = tuple(k for k in info.components if k != key)
                self.plugins[i] = replace(info, components=keys, status="conflict", error=error)

    def _fail(
        self,
        name: str,
        version: str,
        dist_name: str,
        exc: BaseException,
        status: PluginStatus,
        what: str,
    ) -> None:
        if self.pm.has_plugin(name):
            self.pm.unregister(name=name)
        error = f"{type(exc).__name__}: {exc}"
        self._log(f"{name}: {what}: {error}")
        self.plugins.append(PluginInfo(name, version, dist_name, (), status, error))
        warnings.warn(
            f"ordcore plugin {name!r} ({dist_name} {version}) {what} and is ignored: {error}",
            PluginLoadWarning,
            stacklevel=5,
        )


_lock = threading.RLock()
_host_state: _Host | None = None


def _host() -> _Host:
    global _host_state
    with _lock:
        if _host_state is None:
            _host_state = _Host()
        return _host_state


def reload_plugins() -> None:
    """Forget the discovered plugins; the next call discovers them again (re-reading the
    environment variables). Mostly useful in tests and after ``pip install``."""
    global _host_state
    with _lock:
        _host_state = None
        importlib.invalidate_caches()


def list_plugins() -> list[PluginInfo]:
    """Every plugin found, the built-in one first, with its status and load error.

    Never raises for a broken or conflicting plugin (that is what this listing is for).
    """
    return list(_host().plugins)


def list_components(kind: str | None = None) -> list[Component]:
    """The registered components, sorted by ``(kind, name)``, optionally of one kind.

    A name that two plugins registered is left out (creating it raises
    :class:`~ordcore.errors.PluginConflictError`; :func:`list_plugins` shows the conflict).
    Never raises for a broken or conflicting plugin.
    """
    host = _host()
    comps = sorted(host.components.values(), key=lambda c: (c.kind, c.name))
    return [c for c in comps if kind is None or c.kind == kind]


# Kinds that the first-party ordcore-torch plugin provides, for a helpful error when it is
# not installed.
_FIRST_PARTY_KINDS = ("mixer", "probe", "quantizer")


def get_component(kind: str, name: str) -> Component:
    """The registered component ``(kind, name)``.

    Raises
    ------
    UnknownComponentError
        No such component (a ``KeyError``); the message lists close matches.
    PluginConflictError
        Two plugins registered ``(kind, name)`` (the message names both); other names are
        not affected.
    """
    host = _host()
    comp = host.components.get((kind, name))
    if comp is not None:
        return comp
    if (kind, name) in host.conflicts:
        raise PluginConflictError(host.conflicts[(kind, name)])
    kinds = sorted({k for k, _ in host.components})
    if kind not in kinds:
        close = difflib.get_close_matches(kind, kinds, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        if not hint and kind in _FIRST_PARTY_KINDS:
            off = [p for p in host.plugins if p.status == "disabled"
                   and "ordcore-torch" in (p.name, re.sub(r"[-_.]+", "-", p.distribution).lower())]
            hint = (
                f"; the {kind!r} components come with the ordcore-torch plugin, which is "
                f"installed but disabled ({off[0].error})" if off else
                f"; the {kind!r} components come with the ordcore-torch plugin "
                "(pip install ordcore-torch, or ./plugins/ordcore-torch from a checkout)"
            )
        raise UnknownComponentError(
            f"unknown component kind {kind!r}{hint} (known kinds: {', '.join(kinds)})"
        )
    names = sorted(n for k, n in host.components if k == kind)
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if close:
        hint = f"; close matches: {', '.join(repr(c) for c in close)}"
    else:
        hint = f"; known {kind} components: {', '.join(names)}"
    raise UnknownComponentError(f"unknown {kind} component {name!r}{hint}")


def create(kind: str, name: str, /, **kwargs: Any) -> Any:
    """Create the component ``(kind, name)``: ``factory(**kwargs)``.

    Parameters
    ----------
    kind, name : str
        E.g. ``("order", "hilbert")`` (built in) or ``("mixer", "gated_deltanet")``
        (from ``ordcore-torch``). See :func:`list_components`.
    **kwargs
        Passed to the component's factory.

    Raises
    ------
    UnknownComponentError
        No such component (a ``KeyError``); the message lists close matches.
    MissingDependencyError
        The component needs a package that is not installed; the message says what to
        ``pip install``.
    PluginImportError
        The component's module is installed but raised while it was imported (chained).
    PluginConflictError
        Two plugins registered this ``(kind, name)``; other names are not affected.
    """
    return get_component(kind, name).resolve()(**kwargs)


# --------------------------------------------------------------------------------------
# helpers


def _split(value: str) -> set[str]:
    return {part.strip() for part in value.split(",") if part.strip()}


def _dist_version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def _dist_field(dist: importlib.metadata.Distribution, field: str) -> str:
    """A metadata field of ``dist`` (``""`` when missing or unreadable)."""
    try:
        return str(dist.metadata[field] or "")
    except Exception:  # noqa: BLE001 - broken metadata must not break discovery
        return ""


def _dist_name(dist: importlib.metadata.Distribution) -> str:
    return _dist_field(dist, "Name")
