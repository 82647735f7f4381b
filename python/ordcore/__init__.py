"""ordcore: fast, correct primitives that order, pack, rotate and search vectors.

Modules: :mod:`ordcore.sfc` (space-filling curves, scan orders, point-cloud
serialization), :mod:`ordcore.hadamard`, :mod:`ordcore.packing`, :mod:`ordcore.ann`, and
:mod:`ordcore.distributed` (Ray; only ``import ordcore.distributed`` imports it).
"""

from __future__ import annotations

from ordcore import _core
from ordcore import ann, hadamard, packing, sfc
from ordcore.errors import (
    BQFitnessWarning,
    ClusterError,
    DTypeError,
    GpuError,
    IndexFormatError,
    InternalError,
    InvalidArgumentError,
    MissingDependencyError,
    PluginImportError,
    OrdcoreError,
    PluginConflictError,
    ShardTimeoutError,
    UnknownComponentError,
    UnknownIdError,
)
from ordcore.plugins import create, list_components, list_plugins

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "OrdcoreError",
    "InvalidArgumentError",
    "DTypeError",
    "IndexFormatError",
    "InternalError",
    "PluginConflictError",
    "UnknownComponentError",
    "UnknownIdError",
    "MissingDependencyError",
    "PluginImportError",
    "GpuError",
    "ClusterError",
    "ShardTimeoutError",
    "BQFitnessWarning",
    "create",
    "list_components",
    "list_plugins",
    "ann",
    "hadamard",
    "packing",
    "sfc",
]
