"""ordcore's exception classes.

Every error ordcore raises on purpose derives from :class:`OrdcoreError`. The subclasses
also derive from the built-in class a user would naturally catch (``ValueError`` for bad
values, ``TypeError`` for bad types), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "OrdcoreError",
    "InvalidArgumentError",
    "DTypeError",
    "IndexFormatError",
    "UnknownIdError",
    "InternalError",
    "PluginConflictError",
    "UnknownComponentError",
    "MissingDependencyError",
    "PluginImportError",
    "GpuError",
    "ClusterError",
    "ShardTimeoutError",
    "BQFitnessWarning",
]


class OrdcoreError(Exception):
    """Base class of every exception raised by ordcore."""


class InvalidArgumentError(OrdcoreError, ValueError):
    """An argument has a value, shape or range ordcore does not accept.

    The message starts with the argument's name, e.g. ``"coords: row 3 ..."``.
    """


class DTypeError(OrdcoreError, TypeError):
    """An array has a dtype ordcore cannot use without losing information."""


class IndexFormatError(OrdcoreError, ValueError):
    """A saved file is truncated, corrupted, foreign or from a newer format version."""


class UnknownIdError(InvalidArgumentError, KeyError):
    """An id passed to an index (``remove``, ``get``, a filter) is not in it.

    Both a :class:`KeyError`, as users of hnswlib, usearch and ``dict`` catch, and an
    :class:`InvalidArgumentError` (so a ``ValueError``). The message names the argument and
    the first unknown ids.
    """

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class InternalError(OrdcoreError, RuntimeError):
    """A bug in ordcore (a Rust panic caught at the boundary). Please report it."""


class PluginConflictError(OrdcoreError):
    """Two plugins registered the same ``(kind, name)``; the message names both providers."""


class UnknownComponentError(OrdcoreError, KeyError):
    """No registered component has that ``(kind, name)``; the message lists close matches."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(OrdcoreError, ImportError):
    """A component or backend needs a package that is not installed; the message says what
    to ``pip install``."""


class PluginImportError(OrdcoreError, ImportError):
    """A component's factory module is installed but raised while it was imported (a broken
    plugin or a broken dependency of it, not a missing package); the message names the
    component and the module, and the original exception is chained."""


class GpuError(OrdcoreError, RuntimeError):
    """A GPU path could not run (no CuPy, no device, a kernel failed to compile or launch);
    the message carries the CUDA error text."""


class ClusterError(OrdcoreError, RuntimeError):
    """A distributed call could not run as asked (:mod:`ordcore.distributed`): Ray is not
    initialised, or a shard failed. ``applied`` lists the shards that did apply a change
    (empty when none did), ``failed`` the shards that did not."""

    def __init__(
        self, message: str, *, applied: tuple[int, ...] = (), failed: tuple[int, ...] = ()
    ) -> None:
        super().__init__(message)
        self.applied = applied
        self.failed = failed


class ShardTimeoutError(ClusterError, TimeoutError):
    """Shards of a :class:`ordcore.distributed.ShardedIndex` did not answer within
    ``timeout_s``; ``missing`` lists them."""

    def __init__(self, message: str, *, missing: tuple[int, ...]) -> None:
        super().__init__(message, failed=missing)
        self.missing = missing


class BQFitnessWarning(UserWarning):
    """Binary codes rank this data poorly under the chosen settings (see
    :func:`ordcore.ann.bq_fitness`)."""
