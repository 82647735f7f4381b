"""Stands in for a heavy module (like torch): imported only when a component is created."""

from __future__ import annotations

from typing import Any


def make(**kwargs: Any) -> dict[str, Any]:
    return {"made": True, **kwargs}
