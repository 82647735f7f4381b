# Hand-written stub of the Rust extension ordcore._core; checked by `python -m mypy.stubtest`.
# One section per area, in the order of rust/ordcore-py/src/lib.rs.

from typing import Any

import numpy as np
import numpy.typing as npt

# PyO3 fills the runtime __all__; each area's section appends its own names with `+=`.
__all__ = ["__version__", "_in_forked_child", "usable_bytes"]
__version__: str

def _in_forked_child() -> bool: ...
def usable_bytes() -> int: ...

# --- sfc ---

__all__ += [
    "sfc_hilbert_encode",
    "sfc_hilbert_decode",
    "sfc_morton_encode",
    "sfc_morton_decode",
    "sfc_scan_order",
    "sfc_inverse_permutation",
    "sfc_serialize",
    "sfc_encode",
    "sfc_decode",
    "sfc_kernel",
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
def sfc_inverse_permutation(p: npt.NDArray[np.int64], arg: str) -> npt.NDArray[np.int64]: ...
def sfc_encode(
    coords: Any, nbits: int, curve: str, msb: bool, out_bits: int, num_threads: int | None = None
) -> Any: ...
def sfc_decode(
    codes: Any,
    nbits: int,
    ndim: int,
    curve: str,
    msb: bool,
    out_bits: int,
    num_threads: int | None = None,
    out: Any = None,
) -> Any: ...
def sfc_kernel() -> str: ...
def sfc_serialize(
    points: npt.NDArray[np.float32],
    batch: npt.NDArray[np.uint64] | None,
    grid_size: float,
    depth: int | None,
    order: str,
    origin: str,
    num_threads: int | None = None,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64], int]: ...

# --- hadamard ---

from typing import final

from numpy.typing import NDArray

__all__ += [
    "hadamard_kernel",
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

def hadamard_kernel() -> str: ...
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
    def rotate_into_f32(
        self,
        x: NDArray[np.float32],
        out: NDArray[np.float32],
        inverse: bool,
        num_threads: int | None = None,
    ) -> None: ...
    def rotate_inplace_f32(
        self, x: NDArray[np.float32], inverse: bool, num_threads: int | None = None
    ) -> None: ...
    def rotate_into_f64(
        self,
        x: NDArray[np.float64],
        out: NDArray[np.float64],
        inverse: bool,
        num_threads: int | None = None,
    ) -> None: ...
    def rotate_inplace_f64(
        self, x: NDArray[np.float64], inverse: bool, num_threads: int | None = None
    ) -> None: ...
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

__all__ += [
    "PackingPlan",
    "packing_count_strategies",
    "packing_gather_ranges",
    "packing_materialize",
    "packing_plan",
    "packing_plan_from_recipe",
    "packing_planned_histogram",
]

from typing import Any, final

import numpy as np
import numpy.typing as npt

@final
class PackingPlan:
    @staticmethod
    def from_arrays(
        max_len: int,
        pad_to_multiple_of: int,
        pack_offsets: npt.NDArray[np.int64],
        seq_index: npt.NDArray[np.int64],
        start: npt.NDArray[np.int64],
        stop: npt.NDArray[np.int64],
        fragment: npt.NDArray[np.bool_],
        lengths: npt.NDArray[np.int64],
    ) -> PackingPlan: ...
    @property
    def max_len(self) -> int: ...
    @property
    def pad_to_multiple_of(self) -> int: ...
    @property
    def num_packs(self) -> int: ...
    @property
    def pack_offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def seq_index(self) -> npt.NDArray[np.int64]: ...
    @property
    def start(self) -> npt.NDArray[np.int64]: ...
    @property
    def stop(self) -> npt.NDArray[np.int64]: ...
    @property
    def fragment(self) -> npt.NDArray[np.bool_]: ...
    @property
    def lengths(self) -> npt.NDArray[np.int64]: ...
    @property
    def stats(self) -> dict[str, Any]: ...

def packing_plan(
    lengths: npt.NDArray[np.int64],
    max_len: int,
    algorithm: str,
    max_seqs_per_pack: int | None,
    overlong: str,
    allow_empty: bool,
    pad_to_multiple_of: int,
    seed: int,
) -> PackingPlan: ...
def packing_planned_histogram(
    lengths: npt.NDArray[np.int64],
    max_len: int,
    overlong: str,
    allow_empty: bool,
    pad_to_multiple_of: int,
) -> npt.NDArray[np.uint64]: ...
def packing_plan_from_recipe(
    lengths: npt.NDArray[np.int64],
    counts: npt.NDArray[np.uint64],
    recipe_offsets: npt.NDArray[np.int64],
    recipe_lengths: npt.NDArray[np.int64],
    max_len: int,
    max_seqs_per_pack: int | None,
    overlong: str,
    allow_empty: bool,
    pad_to_multiple_of: int,
    seed: int,
) -> PackingPlan: ...
def packing_count_strategies(max_len: int, depth: int) -> int: ...
def packing_gather_ranges(
    values: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    lens: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
) -> None: ...
def packing_materialize(
    plan: PackingPlan,
    values: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    layout: str,
    pad_id: int,
    position_ids_start: int,
    fragment_positions: str,
    pad_to_multiple_of: int,
    label_ignore_index: int,
    token_min: int,
    token_max: int,
) -> dict[str, Any]: ...

# --- ann ---

__all__ += [
    "BQGraphIndex",
    "ann_code_distance",
    "ann_encode",
    "ann_exact_search",
    "ann_fitness_recall",
    "ann_kernel",
    "ann_sq_kernel",
]

import os as _os
from collections.abc import Callable as _Callable

import numpy as _np
import numpy.typing as _npt
from typing import final as _final

@_final
class BQGraphIndex:
    def __new__(
        cls,
        dim: int,
        metric: str,
        bits: int,
        r: int,
        l_build: int,
        alpha: float,
        rotation: bool,
        seed: int,
        rerank_dtype: str,
    ) -> BQGraphIndex: ...
    def rerank_dtype(self) -> str: ...
    def add(
        self,
        x: _npt.NDArray[_np.float32],
        ids: _npt.NDArray[_np.int64] | None,
        num_threads: int | None,
        progress: _Callable[[int, int], None] | None,
    ) -> None: ...
    def search(
        self,
        q: _npt.NDArray[_np.float32],
        k: int,
        ef_search: int,
        rerank: bool,
        rerank_k: int | None,
        num_threads: int | None,
        filter_ids: _npt.NDArray[_np.int64] | None = None,
        filter_bitmap: _npt.NDArray[_np.bool_] | None = None,
        degree: int | None = None,
    ) -> tuple[_npt.NDArray[_np.int64], _npt.NDArray[_np.float32]]: ...
    def get(self, ids: _npt.NDArray[_np.int64]) -> _npt.NDArray[_np.float32]: ...
    def meta(self) -> str: ...
    def set_meta(self, meta: str) -> None: ...
    def remove(self, ids: _npt.NDArray[_np.int64]) -> None: ...
    def widen_rerank_store(self) -> None: ...
    def compact(self, num_threads: int | None = None) -> None: ...
    def __len__(self) -> int: ...
    def memory_usage(self) -> tuple[int, int, int]: ...
    def save(self, path: str | _os.PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | _os.PathLike[str], mmap: bool) -> BQGraphIndex: ...
    def params(self) -> tuple[int, str, int, int, int, float, bool, int]: ...
    def search_degree(self) -> int: ...
    def code_dim(self) -> int: ...
    def n_nodes(self) -> int: ...
    def vectors_mapped(self) -> bool: ...
    def ids(self) -> _npt.NDArray[_np.int64]: ...
    def __contains__(self, key: int, /) -> bool: ...
    def graph(self) -> tuple[_npt.NDArray[_np.int64], _npt.NDArray[_np.uint32]]: ...

def ann_encode(x: _npt.NDArray[_np.float32], bits: int, metric: str) -> _npt.NDArray[_np.uint64]: ...
def ann_code_distance(
    a: _npt.NDArray[_np.uint64], b: _npt.NDArray[_np.uint64], dim: int, bits: int
) -> _npt.NDArray[_np.uint32]: ...
def ann_exact_search(
    x: _npt.NDArray[_np.float32],
    q: _npt.NDArray[_np.float32],
    k: int,
    metric: str,
    num_threads: int | None,
) -> tuple[_npt.NDArray[_np.int64], _npt.NDArray[_np.float32]]: ...
def ann_fitness_recall(
    x: _npt.NDArray[_np.float32],
    metric: str,
    k: int,
    depth: int | None,
    codes: list[tuple[int, int | None]],
    queries: _npt.NDArray[_np.uint64],
    num_threads: int | None,
) -> _npt.NDArray[_np.float64]: ...
def ann_kernel() -> str: ...
def ann_sq_kernel() -> str: ...
