"""The default plugin: ordcore's own components, registered through the same hook as any
third-party plugin (``kind="order"``: the :func:`ordcore.sfc.scan_order` scan orders)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from numpy.typing import NDArray

from ordcore._plugin_api import Registry, hookimpl
from ordcore.sfc import SCAN_KINDS, ScanKind, scan_order

__all__ = ["SCAN_KINDS", "ordcore_register_components"]


def _scan_factory(kind: str) -> Callable[..., NDArray[np.int64]]:
    def scan(height: int, width: int) -> NDArray[np.int64]:
        return scan_order(height, width, cast(ScanKind, kind))

    scan.__name__ = f"scan_{kind}"
    scan.__qualname__ = scan.__name__
    scan.__doc__ = (
        f"The {kind} scan of a ``height x width`` grid: an int64 permutation ``p`` such "
        f"that ``tokens.reshape(-1, C)[p]`` visits the grid in {kind} order "
        "(:func:`ordcore.sfc.scan_order`)."
    )
    return scan


@hookimpl
def ordcore_register_components(registry: Registry) -> None:
    """Register ``order/<kind>`` for every kind in :data:`ordcore.sfc.SCAN_KINDS`."""
    for kind in SCAN_KINDS:
        registry.add(
            "order",
            kind,
            _scan_factory(kind),
            description=f"{kind} scan of a height x width grid (int64 permutation)",
        )
