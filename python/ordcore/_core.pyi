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

from typing import final

from numpy.typing import NDArray

__all__ += [
    "hadamard_fwht_f32",
    "hadamard_fwht_f64",
    "hadamard_fwht_inplace_f32",
    "hadamard_fwht_inplace_f64",
    "hadamard_srht_f32",
    "hadamard_srht_f64",
    "hadamard_srht_indices",
    "hadamard_matrix",
    "hadamard_is_supported_size",
    "hadamard_next_supported_size",
    "hadamard_prev_supported_size",
    "hadamard_decompose",
    "hadamard_supported_sizes",
    "hadamard_unsupported_size_message",
    "RandomizedHadamard",
]

def hadamard_fwht_f32(
    x: NDArray[np.float32],
    out: NDArray[np.float32],
    normalized: bool,
    inverse: bool,
    num_threads: int | None = None,
) -> None: ...
def hadamard_fwht_f64(
    x: NDArray[np.float64],
    out: NDArray[np.float64],
    normalized: bool,
    inverse: bool,
    num_threads: int | None = None,
) -> None: ...
def hadamard_fwht_inplace_f32(
    x: NDArray[np.float32], normalized: bool, inverse: bool, num_threads: int | None = None
) -> None: ...
def hadamard_fwht_inplace_f64(
    x: NDArray[np.float64], normalized: bool, inverse: bool, num_threads: int | None = None
) -> None: ...
def hadamard_srht_f32(
    x: NDArray[np.float32], m: int, seed: int, num_threads: int | None = None
) -> NDArray[np.float32]: ...
def hadamard_srht_f64(
    x: NDArray[np.float64], m: int, seed: int, num_threads: int | None = None
) -> NDArray[np.float64]: ...
def hadamard_srht_indices(n: int, m: int, seed: int) -> NDArray[np.uintp]: ...
def hadamard_matrix(n: int) -> NDArray[np.int8]: ...
def hadamard_is_supported_size(n: int) -> bool: ...
def hadamard_next_supported_size(n: int) -> int: ...
def hadamard_prev_supported_size(n: int) -> int | None: ...
def hadamard_decompose(n: int) -> tuple[int, int] | None: ...
def hadamard_supported_sizes(max_n: int) -> list[int]: ...
def hadamard_unsupported_size_message(arg: str, n: int) -> str: ...

@final
class RandomizedHadamard:
    def __new__(
        cls, n: int, seed: int, blocks: int, group_size: int | None = None
    ) -> RandomizedHadamard: ...
    @property
    def n(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def blocks(self) -> int: ...
    @property
    def group_size(self) -> int: ...
    def signs(self, b: int) -> NDArray[np.float64]: ...
    def forward_f32(
        self, x: NDArray[np.float32], num_threads: int | None = None
    ) -> NDArray[np.float32]: ...
    def inverse_f32(
        self, x: NDArray[np.float32], num_threads: int | None = None
    ) -> NDArray[np.float32]: ...
    def forward_f64(
        self, x: NDArray[np.float64], num_threads: int | None = None
    ) -> NDArray[np.float64]: ...
    def inverse_f64(
        self, x: NDArray[np.float64], num_threads: int | None = None
    ) -> NDArray[np.float64]: ...

# --- packing ---

# --- ann ---
