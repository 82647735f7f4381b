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
    "InternalError",
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


class InternalError(OrdcoreError, RuntimeError):
    """A bug in ordcore (a Rust panic caught at the boundary). Please report it."""
