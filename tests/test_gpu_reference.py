"""The NumPy references of ordcore.gpu.reference against the peers (CPU only).

The GPU tests (test_gpu.py) compare the kernels with these references, so that they also
run on a CUDA machine where hilbertcurve / pymorton are not installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve

from ordcore.gpu import reference


@pytest.mark.parametrize(("d", "nbits"), [(2, 1), (2, 5), (2, 32), (3, 21), (4, 16), (7, 9), (1, 64)])
def test_reference_hilbert_matches_hilbertcurve(d: int, nbits: int) -> None:
    rng = np.random.default_rng(d * nbits)
    hi = (1 << nbits) - 1
    pts = rng.integers(0, hi, size=(200, d), dtype=np.uint64, endpoint=True)
    pts[0] = hi
    h = reference.hilbert_encode(pts, nbits)
    if d > 1:  # hilbertcurve needs n >= 2 for its own checks to be meaningful
        want = [int(v) for v in HilbertCurve(p=nbits, n=d).distances_from_points(pts.tolist())]
        assert h.tolist() == want
    np.testing.assert_array_equal(reference.hilbert_decode(h, nbits, d), pts)


def test_reference_hilbert_cases() -> None:
    # S7 and S6
    got = reference.hilbert_encode([[999, 999, 999], [479, 724, 495]], 12)
    assert got.tolist() == [766935405, 975605184]
    assert int(reference.hilbert_encode([[2**32 - 1, 0]], 32)[0]) == 2**64 - 1


@pytest.mark.parametrize("msb_first", [False, True])
def test_reference_morton(msb_first: bool) -> None:
    import pymorton

    rng = np.random.default_rng(3)
    pts = rng.integers(0, 1 << 16, size=(200, 2), dtype=np.uint64)
    h = reference.morton_encode(pts, 16, msb_first=msb_first)
    cols = pts[:, ::-1] if msb_first else pts
    assert h.tolist() == [pymorton.interleave2(int(a), int(b)) for a, b in cols]
    np.testing.assert_array_equal(reference.morton_decode(h, 16, 2, msb_first=msb_first), pts)


def test_reference_signs_and_codes() -> None:
    assert int(reference.mix64(reference.GOLDEN)[0]) == 0xE220A8397B1DCDAF
    s = reference.random_signs(5, 3, 1000)
    assert s.shape == (3, 1000) and set(np.unique(s).tolist()) == {-1, 1}
    np.testing.assert_array_equal(s[1] < 0, (reference.counter_u64(5, 1, np.arange(1000)) >> np.uint64(63)) == 1)
    x = np.random.default_rng(0).standard_normal((30, 100)).astype(np.float32)
    c = reference.ann_encode(x, 2, "cosine")
    d = reference.code_distances(c, c, 100, 2)
    strong = reference.popcount64(c[:, 2:]).sum(1)
    np.testing.assert_array_equal(np.diag(d), 3 * (100 - strong))
