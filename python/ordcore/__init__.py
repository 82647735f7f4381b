"""ordcore: fast, correct primitives that order, pack, rotate and search vectors.

Modules: :mod:`ordcore.sfc` (space-filling curves, scan orders, point-cloud
serialization), :mod:`ordcore.hadamard`, :mod:`ordcore.packing`, :mod:`ordcore.ann`.
"""

from __future__ import annotations

from ordcore import _core
from ordcore.errors import (
    DTypeError,
    IndexFormatError,
    InternalError,
    InvalidArgumentError,
    OrdcoreError,
)

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "OrdcoreError",
    "InvalidArgumentError",
    "DTypeError",
    "IndexFormatError",
    "InternalError",
]
