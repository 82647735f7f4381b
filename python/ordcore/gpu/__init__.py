"""GPU paths of ordcore, with CuPy (``pip install 'ordcore[gpu]'``).

Public functions of :mod:`ordcore.sfc`, :mod:`ordcore.hadamard` and :mod:`ordcore.ann` that
have a GPU path dispatch on their input: a CuPy array (or a CUDA ``torch.Tensor``, shared
through DLPack with no copy) runs on its device, on the current stream (CuPy's, or torch's
for a tensor), and returns the same kind of array on the same device; a NumPy array runs on
the CPU. Nothing is copied between host and device unless you ask for it.

Importing :mod:`ordcore` (or this package) never imports CuPy; CuPy is imported on the first
GPU call. The CUDA kernels are ``.cu`` sources shipped in ``ordcore/gpu/kernels`` and loaded
with ``cupy.RawModule`` (compiled by NVRTC once per device; CuPy caches the binaries).

Functions here: :func:`is_available`, :func:`is_device_array`, :func:`kernel_sources`,
:func:`compile_ptx`; the per-area wrappers live in :mod:`ordcore.gpu.sfc`,
:mod:`ordcore.gpu.hadamard` and :mod:`ordcore.gpu.ann`; NumPy references of the device
generator and code distance in :mod:`ordcore.gpu.reference`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ordcore.gpu._runtime import (
    compile_ptx,
    is_available,
    is_device_array,
    kernel_names,
    kernel_sources,
)

if TYPE_CHECKING:
    from ordcore.gpu import ann, hadamard, reference, sfc

__all__ = [
    "is_available",
    "is_device_array",
    "kernel_sources",
    "kernel_names",
    "compile_ptx",
    "ann",
    "hadamard",
    "reference",
    "sfc",
]

_SUBMODULES = frozenset({"ann", "hadamard", "reference", "sfc"})


def __getattr__(name: str) -> Any:
    # The wrappers import nothing heavy either, but loading them lazily keeps `import
    # ordcore` as small as possible.
    if name in _SUBMODULES:
        return importlib.import_module(f"ordcore.gpu.{name}")
    raise AttributeError(f"module 'ordcore.gpu' has no attribute {name!r}")
