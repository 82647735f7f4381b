"""ordcore-torch: PyTorch components for ordcore (mixers, learned orders, probe, quantizer).

Importing this package does not import torch; the classes are loaded on first access, so
ordcore's plugin discovery (which imports :mod:`ordcore_torch.plugin`) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "LinearAttention": "ordcore_torch.linear_attention",
    "GatedDeltaNet": "ordcore_torch.gated_deltanet",
    "DiagonalSSM": "ordcore_torch.ssm",
    "SinkhornOrder": "ordcore_torch.order",
    "PlackettLuceOrder": "ordcore_torch.order",
    "FixedOrder": "ordcore_torch.order",
    "SSMProbe": "ordcore_torch.probe",
    "RotatedQuantizer": "ordcore_torch.quantizer",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ordcore_torch' has no attribute {name!r}")
