# Hand-written stub of the Rust extension ordcore._core; checked by `python -m mypy.stubtest`.
# One section per area, in the order of rust/ordcore-py/src/lib.rs.

from typing import Any

import numpy as np
import numpy.typing as npt

# PyO3 fills the runtime __all__; each area's section appends its own names with `+=`.
__all__ = ["__version__", "_in_forked_child"]
__version__: str

def _in_forked_child() -> bool: ...

# --- sfc ---

__all__ += [
    "sfc_hilbert_encode",
    "sfc_hilbert_decode",
    "sfc_morton_encode",
    "sfc_morton_decode",
    "sfc_scan_order",
    "sfc_inverse_permutation",
    "sfc_serialize",
]

def sfc_hilbert_encode(
    coords: Any, nbits: int, num_threads: int | None = None
) -> npt.NDArray[np.uint64]: ...
def sfc_hilbert_decode(
    index: Any, nbits: int, ndim: int, num_threads: int | None = None
) -> npt.NDArray[np.uint64]: ...
def sfc_morton_encode(
    coords: Any, nbits: int, msb: bool, num_threads: int | None = None
) -> npt.NDArray[np.uint64]: ...
def sfc_morton_decode(
    code: Any, nbits: int, ndim: int, msb: bool, num_threads: int | None = None
) -> npt.NDArray[np.uint64]: ...
def sfc_scan_order(height: int, width: int, kind: str) -> npt.NDArray[np.int64]: ...
def sfc_inverse_permutation(p: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...
def sfc_serialize(
    points: npt.NDArray[np.float64],
    batch: npt.NDArray[np.uint64] | None,
    grid_size: float,
    depth: int,
    order: str,
    num_threads: int | None = None,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...

# --- hadamard ---

# --- packing ---

# --- ann ---
