"""Integer arguments of the public API: a huge or negative Python int is an
InvalidArgumentError naming the argument (it was a bare OverflowError from the binding,
e.g. ``pack([5], 2**63)``, ``hilbert_encode(..., 2**70)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ordcore import DTypeError, InvalidArgumentError, ann, hadamard, packing, sfc
from ordcore._args import CACHE_LINE, INT64_MAX, UINT64_MAX, empty_aligned, int_arg

X = np.random.default_rng(0).standard_normal((20, 16)).astype(np.float32)
PTS = np.zeros((3, 2), np.int64)
TOKENS = [np.arange(5), np.arange(3), np.arange(8)]


def _index() -> ann.BQGraphIndex:
    idx = ann.BQGraphIndex(16, metric="l2", R=8, L_build=16)
    idx.add(X)
    return idx


CASES: dict[str, Callable[[Any], object]] = {
    "nbits": lambda v: sfc.hilbert_encode(PTS, v),
    "num_threads": lambda v: sfc.hilbert_encode(PTS, 8, num_threads=v),
    "ndim": lambda v: sfc.morton_decode(np.zeros(3, np.uint64), 8, ndim=v),
    "height": lambda v: sfc.scan_order(v, 3, "hilbert"),
    "width": lambda v: sfc.locality(np.arange(6), 2, v),
    "depth": lambda v: sfc.serialize(np.random.default_rng(0).random((5, 3)), grid_size=0.1,
                                     depth=v),  # fmt: skip
    "max_len": lambda v: packing.pack([5], v),
    "max_seqs_per_pack": lambda v: packing.pack([5], 10, max_seqs_per_pack=v),
    "pad_to_multiple_of": lambda v: packing.pack([5], 10, pad_to_multiple_of=v),
    "pad_id": lambda v: packing.materialize(packing.pack([5, 3, 8], 10), TOKENS, pad_id=v),
    "label_ignore_index": lambda v: packing.materialize(
        packing.pack([5, 3, 8], 10), TOKENS, pad_id=0, label_ignore_index=v
    ),
    "position_ids_start": lambda v: packing.StreamingPacker(10, position_ids_start=v),
    "n": lambda v: hadamard.hadamard_matrix(v),
    "size": lambda v: hadamard.pad_to_supported(X, size=v),
    "seed": lambda v: hadamard.RandomizedHadamard(16, seed=v),
    "blocks": lambda v: hadamard.RandomizedHadamard(16, seed=0, blocks=v),
    "group_size": lambda v: hadamard.RandomizedHadamard(16, seed=0, group_size=v),
    "m": lambda v: hadamard.srht_indices(16, v, seed=0),
    "dim": lambda v: ann.code_distance(ann.encode(X[:1]), ann.encode(X), dim=v),
    "R": lambda v: ann.BQGraphIndex(16, R=v),
    "L_build": lambda v: ann.BQGraphIndex(16, L_build=v),
    "k": lambda v: ann.exact_search(X, X[:2], v),
    "ef_search": lambda v: _index().search(X[:2], k=2, ef_search=v),
}
HUGE = [2**63, 2**64 - 1, 2**70, -(2**70), 10**40, np.uint64(2**64 - 1)]


@pytest.mark.parametrize("value", HUGE, ids=repr)
@pytest.mark.parametrize("arg", sorted(CASES))
def test_huge_integers_are_invalid_argument_errors(arg: str, value: object) -> None:
    try:
        CASES[arg](value)
    except InvalidArgumentError as exc:
        assert str(exc).startswith(f"{arg}:"), str(exc)
    except MemoryError:  # a value that fits but asks for too much memory
        pass
    else:
        if arg not in ("seed", "size", "n"):  # 2**64 - 1 is a valid seed
            pytest.fail(f"{arg}={value!r} was accepted")


@pytest.mark.parametrize("call, message", [
    (lambda: packing.pack([5], 2**63), "must be at most 2\\*\\*63 - 1"),
    # nbits: the width limit, which is what makes 2**70 wrong
    (lambda: sfc.hilbert_encode(PTS, 2**70), "nbits: .* exceeds the 64-bit limit"),
])  # fmt: skip
def test_issue_examples(call: Callable[[], object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        call()


def test_int_arg() -> None:
    assert int_arg("x", np.int8(-3)) == -3
    assert int_arg("x", 2**64 - 1, 0, UINT64_MAX) == 2**64 - 1
    assert int_arg("x", 10**30, None, None) == 10**30
    with pytest.raises(InvalidArgumentError, match="x: must be at most 2\\*\\*63 - 1, got 9223372036854775808"):
        int_arg("x", INT64_MAX + 1)
    with pytest.raises(InvalidArgumentError, match="x: must be at least 1, got 0"):
        int_arg("x", 0, 1)
    with pytest.raises(InvalidArgumentError, match=r"got 10000000\.\.\.0000 \(41 digits\)"):
        int_arg("x", 10**40)
    for bad in (True, 1.5, "3", None):
        with pytest.raises(DTypeError, match="x: must be an integer"):
            int_arg("x", bad)


@pytest.mark.parametrize("shape", [0, 5, (0,), (3, 0), (0, 3), (7,), (2, 33), (3, 5, 7)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64, np.complex128])
def test_empty_aligned_is_np_empty_on_a_cache_line(shape: int | tuple[int, ...],
                                                    dtype: type) -> None:
    """``empty_aligned`` gives what ``np.empty`` gives (shape, dtype, C order, writable),
    starting on a 64-byte boundary, and refuses what ``np.empty`` refuses."""
    a = empty_aligned(shape, dtype)
    b: np.ndarray = np.empty(shape, dtype)
    assert a.shape == b.shape and a.dtype == b.dtype
    assert a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % CACHE_LINE == 0
    a[...] = 1
    assert (a == 1).all()


def test_empty_aligned_refuses_what_np_empty_refuses() -> None:
    shapes: list[int | tuple[int, ...]] = [(-1,), (-1, 4), (-2, -3), -1]
    for shape in shapes:
        with pytest.raises(ValueError, match="negative dimensions"):
            empty_aligned(shape, np.uint8)
        with pytest.raises(ValueError, match="negative dimensions"):
            np.empty(shape, np.uint8)
    with pytest.raises(TypeError, match="objects"):
        empty_aligned((3,), object)
