"""Checks of scalar arguments shared by the public modules."""

from __future__ import annotations

import operator

import numpy as np

from ordcore.errors import DTypeError, InvalidArgumentError

__all__ = ["int_arg", "num_threads_arg"]


def int_arg(name: str, value: object) -> int:
    """``value`` as a Python int; ``DTypeError`` naming ``name`` for bools and non-integers."""
    if isinstance(value, (bool, np.bool_)):
        raise DTypeError(f"{name}: must be an integer, got a bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise DTypeError(f"{name}: must be an integer, got {type(value).__name__}") from None


def num_threads_arg(num_threads: object) -> int | None:
    """``None`` (all cores) or a thread count of at least 1."""
    if num_threads is None:
        return None
    n = int_arg("num_threads", num_threads)
    if n < 1:
        raise InvalidArgumentError(f"num_threads: must be at least 1 (or None), got {n}")
    return n
