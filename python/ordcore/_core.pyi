# Hand-written stub of the Rust extension ordcore._core; checked by `python -m mypy.stubtest`.
# One section per area, in the order of rust/ordcore-py/src/lib.rs.

__version__: str

def _in_forked_child() -> bool: ...

# --- sfc ---

# --- hadamard ---

# --- packing ---

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
