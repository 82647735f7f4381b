"""What a plugin sees of ordcore's plugin system: the hook markers, the hook specification,
the :class:`Registry` passed to the hook and the :class:`Component` records it collects.

The discovery host, :mod:`ordcore.plugins`, re-exports all of these (plugins import them from
there); they live here so that the built-in plugin, :mod:`ordcore._builtin_plugin`, can use
them without importing the host that loads it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from ordcore.errors import (
    InvalidArgumentError,
    MissingDependencyError,
    PluginConflictError,
    PluginImportError,
)

__all__ = ["hookspec", "hookimpl", "HookSpecs", "Component", "Registry", "Factory", "provider_text"]

hookspec = pluggy.HookspecMarker("ordcore")
"""Marks a hook specification (used by ordcore itself)."""

hookimpl = pluggy.HookimplMarker("ordcore")
"""Marks a plugin's hook implementation: ``@hookimpl def ordcore_register_components(...)``."""

Factory = Callable[..., Any]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_REQ_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-]*)")


class HookSpecs:
    """The hook specifications of ordcore (the namespace pluggy validates plugins against)."""

    @hookspec
    def ordcore_register_components(self, registry: Registry) -> None:
        """Register this plugin's components.

        Parameters
        ----------
        registry : Registry
            Call ``registry.add(kind, name, factory, requires=..., description=...)`` once
            per component. Do not import heavy dependencies here: pass ``factory`` as a
            ``"module:attr"`` string, resolved only when the component is created.
        """


@dataclass(frozen=True)
class Component:
    """One registered component.

    Attributes
    ----------
    kind, name : str
        The key users pass to :func:`create` (e.g. ``"mixer"``, ``"gated_deltanet"``).
    factory : callable or str
        A callable, or a ``"module:attr"`` string resolved at creation time.
    requires : tuple of str
        Distributions (PEP 508 names, version specifiers ignored) that must be installed.
    description : str
        One line shown by ``python -m ordcore plugins``.
    plugin, plugin_version : str
        The plugin that registered it and the version of the distribution providing it.
    """

    kind: str
    name: str
    factory: Factory | str = field(repr=False)
    requires: tuple[str, ...]
    description: str
    plugin: str
    plugin_version: str

    @property
    def key(self) -> str:
        """``"kind/name"``."""
        return f"{self.kind}/{self.name}"

    def missing_requirements(self) -> list[str]:
        """The entries of :attr:`requires` that are not installed."""
        return [req for req in self.requires if not _is_installed(req)]

    def resolve(self) -> Factory:
        """Import and return the factory (checking :attr:`requires` first).

        Raises
        ------
        MissingDependencyError
            A requirement is not installed, or the factory's module (or a module it imports)
            is not found; the message says what to ``pip install``.
        PluginImportError
            The factory's module is installed but raised while it was imported (any other
            exception, chained).
        """
        missing = self.missing_requirements()
        if missing:
            raise MissingDependencyError(
                f"component {self.key!r} (from plugin {self.plugin} {self.plugin_version}) "
                f"needs {', '.join(missing)}: pip install {' '.join(_quote(m) for m in missing)}"
            )
        if callable(self.factory):
            return self.factory
        module_name, _, attr = self.factory.partition(":")
        who = f"component {self.key!r} (from plugin {self.plugin} {self.plugin_version})"
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            pkg = (exc.name or module_name).split(".")[0]
            if not _is_importable(pkg):
                raise MissingDependencyError(
                    f"{who} could not import {module_name!r} ({exc}); try: pip install {pkg}"
                ) from exc
            raise PluginImportError(
                f"{who}: importing {module_name!r} failed ({type(exc).__name__}: {exc}), "
                f"although {pkg!r} is installed"
            ) from exc
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported with the component
            raise PluginImportError(
                f"{who}: importing {module_name!r} failed ({type(exc).__name__}: {exc}); the "
                "module is installed but raised while it was imported"
            ) from exc
        for part in attr.split("."):
            obj = getattr(obj, part)
        if not callable(obj):
            raise TypeError(f"factory {self.factory!r} of {self.key!r} is not callable")
        return obj  # type: ignore[no-any-return]


class Registry:
    """The typed object passed to ``ordcore_register_components``.

    Plugins only call :meth:`add`. The host creates one registry per plugin so it can
    stamp the provider on each component.
    """

    def __init__(
        self,
        plugin: str,
        version: str,
        existing: Mapping[tuple[str, str], Component] | None = None,
    ) -> None:
        self._plugin = plugin
        self._version = version
        self._existing: Mapping[tuple[str, str], Component] = existing or {}
        self._added: dict[tuple[str, str], Component] = {}
        self._clashes: dict[tuple[str, str], Component] = {}

    @property
    def plugin(self) -> str:
        """The plugin whose components this registry collects."""
        return self._plugin

    def add(
        self,
        kind: str,
        name: str,
        factory: Factory | str,
        *,
        requires: Iterable[str] = (),
        description: str = "",
    ) -> None:
        """Register the component ``(kind, name)``.

        Parameters
        ----------
        kind : str
            The component family, e.g. ``"order"``, ``"mixer"``, ``"probe"``.
        name : str
            Lower case letters, digits, ``_``, ``-``, ``.``; unique within ``kind``.
        factory : callable or str
            Called with the keyword arguments of :func:`create`. A ``"module:attr"`` string
            is imported only at creation, so discovery stays cheap (no torch import).
        requires : iterable of str
            Distributions that must be installed to create it, e.g. ``("torch",)``.
        description : str
            One line for listings.

        Raises
        ------
        InvalidArgumentError
            ``kind``/``name`` is not a valid name, or ``factory`` is neither callable nor a
            ``"module:attr"`` string.
        PluginConflictError
            This plugin already registered ``(kind, name)``. (A name another plugin
            registered is not an error here: see the module docstring.)
        """
        for arg, value in (("kind", kind), ("name", name)):
            if not isinstance(value, str) or not _NAME_RE.match(value):
                raise InvalidArgumentError(
                    f"{arg}: {value!r} is not a valid component {arg} "
                    "(lower case letters, digits, '_', '-', '.')"
                )
        if isinstance(factory, str):
            module_name, sep, attr = factory.partition(":")
            if not sep or not module_name or not attr:
                raise InvalidArgumentError(
                    f"factory: {factory!r} is not a 'module:attr' string"
                )
        elif not callable(factory):
            raise InvalidArgumentError(f"factory: {factory!r} is neither callable nor a string")
        reqs = tuple(requires)
        for req in reqs:
            if not isinstance(req, str) or not _REQ_NAME_RE.match(req):
                raise InvalidArgumentError(f"requires: {req!r} is not a distribution name")
        key = (kind, name)
        if key in self._added or key in self._clashes:
            previous = self._added.get(key) or self._clashes[key]
            raise PluginConflictError(
                f"component '{kind}/{name}' is registered twice by "
                f"{provider_text(previous.plugin, previous.plugin_version)}"
            )
        component = Component(
            kind=kind,
            name=name,
            factory=factory,
            requires=reqs,
            description=description,
            plugin=self._plugin,
            plugin_version=self._version,
        )
        if key in self._existing:  # another plugin has it: the host decides (see _Host)
            self._clashes[key] = component
        else:
            self._added[key] = component

    def components(self) -> dict[tuple[str, str], Component]:
        """The components added through this registry so far (those whose name no other
        plugin has registered)."""
        return dict(self._added)

    def clashes(self) -> dict[tuple[str, str], Component]:
        """The components added through this registry whose ``(kind, name)`` another plugin
        registered first."""
        return dict(self._clashes)


# --------------------------------------------------------------------------------------
# helpers


def provider_text(plugin: str, version: str) -> str:
    return f"plugin {plugin!r} {version}".rstrip()


def _quote(req: str) -> str:
    return f"'{req}'" if any(c in req for c in "<>=!~[; ") else req


def _is_importable(module: str) -> bool:
    """Whether a top-level module can be found (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _is_installed(req: str) -> bool:
    match = _REQ_NAME_RE.match(req)
    if match is None:
        return False
    name = match.group(1)
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # an importable module of that name (e.g. a source checkout on sys.path)
        return importlib.util.find_spec(name.replace("-", "_")) is not None
    except (ImportError, ValueError):
        return False
