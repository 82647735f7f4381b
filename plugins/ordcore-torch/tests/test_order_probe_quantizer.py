"""Orders (fixed, Gumbel-Sinkhorn, Plackett-Luce), the SSM probe and the rotated quantizer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hilbertcurve.hilbertcurve import HilbertCurve

import ordcore
from ordcore.errors import InvalidArgumentError
from ordcore_torch.order import (
    FixedOrder,
    PlackettLuceOrder,
    SinkhornOrder,
    gumbel_sinkhorn,
    hungarian,
    reinforce_loss,
)
from ordcore_torch.probe import SSMProbe
from ordcore_torch.quantizer import (
    FP4_E2M1_GRID,
    HadamardRotation,
    RotatedQuantizer,
    fwht,
    rotation_signs,
)



def hilbert_scan(side: int) -> np.ndarray:
    """A Hilbert scan of a side x side grid from the hilbertcurve peer: the 2^p curve,
    restricted to the grid, in the x[:, p] convention (p[i] = row-major index of step i)."""
    p = max(1, math.ceil(math.log2(side)))
    pts = np.array(HilbertCurve(p, 2).points_from_distances(range(4**p)))
    keep = (pts[:, 0] < side) & (pts[:, 1] < side)
    return (pts[keep, 0] * side + pts[keep, 1]).astype(np.int64)


# ------------------------------------------------------------------ fixed orders


def test_fixed_order_permute_unpermute() -> None:
    perm = hilbert_scan(4)
    order = FixedOrder(permutation=perm)
    x = torch.arange(2 * 16 * 3, dtype=torch.float64).reshape(2, 16, 3)
    y = order(x)
    torch.testing.assert_close(y, x[:, torch.from_numpy(perm)])
    torch.testing.assert_close(order.unpermute(y), x)
    # grid position visited at step i is perm[i]
    assert y[0, 1, 0].item() == x[0, perm[1], 0].item()
    with pytest.raises(InvalidArgumentError, match="x: dimension 1 has 15 tokens, expected 16"):
        order(x[:, :15])
    with pytest.raises(InvalidArgumentError, match="permutation: is not a permutation"):
        FixedOrder(permutation=[0, 0, 1])


def test_fixed_random_order_is_seeded() -> None:
    a, b, c = (FixedOrder(8, 8, "random", seed=s) for s in (1, 1, 2))
    assert torch.equal(a.perm, b.perm) and not torch.equal(a.perm, c.perm)
    assert sorted(a.perm.tolist()) == list(range(64))


@pytest.mark.parametrize("kind", ["raster", "column", "snake", "hilbert", "morton", "diagonal"])
def test_fixed_order_uses_sfc_scan(kind: str) -> None:
    order = ordcore.create("order", "fixed", height=6, width=5, kind=kind)
    np.testing.assert_array_equal(order.perm.numpy(), ordcore.sfc.scan_order(6, 5, kind))
    np.testing.assert_array_equal(
        order.inverse.numpy(), ordcore.sfc.inverse_permutation(ordcore.sfc.scan_order(6, 5, kind))
    )


# ------------------------------------------------------------------ Gumbel-Sinkhorn


@pytest.mark.parametrize("noise", [False, True])
def test_sinkhorn_is_doubly_stochastic(noise: bool) -> None:
    g = torch.Generator().manual_seed(0)
    log_alpha = torch.randn(3, 12, 12, generator=g, dtype=torch.float64) * 3
    P = gumbel_sinkhorn(log_alpha, temperature=0.5, n_iters=1000, noise=noise, generator=g)
    assert (P >= 0).all()
    torch.testing.assert_close(P.sum(-1), torch.ones(3, 12, dtype=torch.float64), rtol=0, atol=1e-4)
    torch.testing.assert_close(P.sum(-2), torch.ones(3, 12, dtype=torch.float64), rtol=0, atol=1e-12)


def test_sinkhorn_low_temperature_approaches_hungarian() -> None:
    g = torch.Generator().manual_seed(1)
    log_alpha = torch.randn(9, 9, generator=g, dtype=torch.float64)
    p = hungarian(log_alpha)
    # brute force over all 9! is too many; check optimality against scipy's own objective
    from scipy.optimize import linear_sum_assignment

    r, c = linear_sum_assignment(-log_alpha.numpy())
    assert log_alpha[torch.arange(9), p].sum().item() == pytest.approx(log_alpha.numpy()[r, c].sum())
    P = gumbel_sinkhorn(log_alpha, temperature=0.01, n_iters=500, noise=False)
    assert torch.equal(P.argmax(-1), p)


def test_sinkhorn_order_train_and_eval() -> None:
    perm = hilbert_scan(4)
    order = SinkhornOrder(16, init=perm, init_scale=20.0, temperature=0.3)
    x = torch.randn(2, 16, 3)
    order.eval()
    assert torch.equal(order.hard_permutation(), torch.from_numpy(perm))
    torch.testing.assert_close(order(x), x[:, torch.from_numpy(perm)])
    order.train()
    y = order(x)
    assert y.shape == x.shape
    y.sum().backward()
    assert order.log_alpha.grad is not None and torch.isfinite(order.log_alpha.grad).all()


def test_sinkhorn_straight_through() -> None:
    """Forward: an exact hard permutation (a Gumbel-matching sample); backward: the soft
    Sinkhorn gradient."""
    perm = hilbert_scan(4)
    torch.manual_seed(0)
    st = SinkhornOrder(16, init=perm, init_scale=2.0, temperature=0.5, straight_through=True)
    P = st.training_permutation().detach()
    hard = P.round()  # hard + soft - soft.detach() is exact up to float32 rounding
    torch.testing.assert_close(P, hard, rtol=0, atol=1e-6)
    assert set(hard.unique().tolist()) == {0.0, 1.0}
    assert torch.equal(hard.sum(0), torch.ones(16)) and torch.equal(hard.sum(1), torch.ones(16))
    x = torch.randn(3, 16, 2, dtype=torch.float64)
    st.train()
    torch.manual_seed(0)
    y = st(x)
    # every output token is one input token: y = x[:, p] for the sampled hard p
    torch.testing.assert_close(y.detach(), x[:, hard.argmax(-1)], rtol=0, atol=1e-6)
    w = torch.randn_like(y)
    (y * w).sum().backward()
    g_st = st.log_alpha.grad.clone()
    # the same gradient as the soft path on the same noise draw
    torch.manual_seed(0)
    soft = SinkhornOrder(16, init=perm, init_scale=2.0, temperature=0.5)
    torch.manual_seed(0)
    Ps = soft.training_permutation()  # soft path, same Gumbel draw as P
    (torch.einsum("ij,bjf->bif", Ps.double(), x) * w).sum().backward()
    torch.testing.assert_close(g_st, soft.log_alpha.grad, rtol=1e-5, atol=1e-6)
    # no noise, high init: the straight-through forward is exactly init
    st0 = SinkhornOrder(16, init=perm, init_scale=20.0, noise=False, straight_through=True)
    torch.testing.assert_close(st0(x), x[:, torch.from_numpy(perm)])
    st0.set_temperature(0.05)
    assert st0.temperature == 0.05
    with pytest.raises(InvalidArgumentError, match="temperature: expected a positive"):
        st0.set_temperature(0.0)
    with pytest.raises(InvalidArgumentError, match="noise_scale"):
        SinkhornOrder(4, noise_scale=-1.0)


def test_sinkhorn_bad_input() -> None:
    for bad in (-1.0, 0.0):
        with pytest.raises(InvalidArgumentError, match="temperature: expected a positive"):
            SinkhornOrder(4, temperature=bad)
        with pytest.raises(InvalidArgumentError, match="temperature"):
            gumbel_sinkhorn(torch.zeros(4, 4), temperature=bad)
    with pytest.raises(InvalidArgumentError, match="n_iters"):
        SinkhornOrder(4, n_iters=0)
    with pytest.raises(InvalidArgumentError, match="init: expected 4 entries"):
        SinkhornOrder(4, init=[0, 1, 2])


# ------------------------------------------------------------------ Plackett-Luce


def test_plackett_luce_probabilities_sum_to_one() -> None:
    torch.manual_seed(0)
    pl = PlackettLuceOrder(4)
    with torch.no_grad():
        pl.scores.copy_(torch.tensor([0.3, -1.2, 2.0, 0.5]))
    perms = torch.tensor(list(itertools.permutations(range(4))))
    probs = pl.log_prob(perms).exp()
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-6)
    # the explicit Plackett-Luce product for one permutation
    s = pl.scores.detach().exp()
    p = [2, 0, 3, 1]
    expected = 1.0
    remaining = list(range(4))
    for i in p:
        expected *= (s[i] / s[remaining].sum()).item()
        remaining.remove(i)
    assert pl.log_prob(torch.tensor(p)).exp().item() == pytest.approx(expected, rel=1e-6)
    # Gumbel-top-k samples follow those probabilities
    g = torch.Generator().manual_seed(3)
    samples = pl.sample(20000, generator=g)
    freq = {tuple(r): 0 for r in perms.tolist()}
    for row in samples.tolist():
        freq[tuple(row)] += 1
    for perm, pr in zip(perms.tolist(), probs.tolist()):
        assert abs(freq[tuple(perm)] / 20000 - pr) < 0.015


def test_plackett_luce_mode_is_the_hilbert_scan_not_its_inverse() -> None:
    scan = hilbert_scan(14)
    inverse = np.argsort(scan)
    assert not np.array_equal(scan, inverse)
    pl = PlackettLuceOrder(196, init=scan)
    np.testing.assert_array_equal(pl.mode().numpy(), scan)
    assert pl.log_prob(torch.from_numpy(scan)) > pl.log_prob(torch.from_numpy(inverse))
    x = torch.arange(196.0).reshape(1, 196, 1)
    np.testing.assert_array_equal(pl(x)[0, :, 0].long().numpy(), scan)


def test_plackett_luce_from_sfc_hilbert() -> None:
    scan = ordcore.sfc.scan_order(14, 14, "hilbert")
    pl = ordcore.create("order", "plackett_luce", num_tokens=196, init=scan)
    np.testing.assert_array_equal(pl.mode().numpy(), scan)
    assert not np.array_equal(pl.mode().numpy(), ordcore.sfc.inverse_permutation(scan))


def test_reinforce_with_baseline_improves_the_reward() -> None:
    """Reward: how many tokens are at their raster position; REINFORCE should raise it."""
    torch.manual_seed(0)
    pl = PlackettLuceOrder(6)
    opt = torch.optim.Adam(pl.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    target = torch.arange(6)

    def reward(p: torch.Tensor) -> torch.Tensor:
        return (p == target).double().sum(-1)

    start = reward(pl.sample(2000, generator=g)).mean().item()
    for _ in range(150):
        perms = pl.sample(32, generator=g)
        loss = reinforce_loss(pl.log_prob(perms), reward(perms))
        opt.zero_grad()
        loss.backward()
        opt.step()
    end = reward(pl.sample(2000, generator=g)).mean().item()
    assert start < 1.5 and end > 4.0, (start, end)
    # explicit baseline and bad input
    lp = torch.zeros(3, requires_grad=True)
    assert reinforce_loss(lp, torch.ones(3), baseline=1.0).item() == 0.0
    with pytest.raises(InvalidArgumentError, match="reward: shape"):
        reinforce_loss(lp, torch.ones(2))
    with pytest.raises(InvalidArgumentError, match="baseline"):
        reinforce_loss(torch.zeros(1), torch.ones(1))


# ------------------------------------------------------------------ probe


def test_ssm_probe_is_order_sensitive_and_trains() -> None:
    torch.manual_seed(0)
    perm = hilbert_scan(4)
    probe = ordcore.create("probe", "ssm_probe", in_features=3, num_classes=2,
                           order=FixedOrder(permutation=perm), d_model=8)  # fmt: skip
    x = torch.randn(16, 16, 3)
    logits = probe(x)
    assert logits.shape == (16, 2)
    plain = SSMProbe(3, 2, d_model=8)
    plain.load_state_dict(probe.state_dict(), strict=False)
    assert not torch.allclose(plain(x), logits)  # the order changes the output
    torch.testing.assert_close(plain(x[:, torch.from_numpy(perm)]), logits)
    loss = torch.nn.functional.cross_entropy(logits, torch.zeros(16, dtype=torch.long))
    loss.backward()
    assert all(p.grad is not None for p in probe.parameters())
    with pytest.raises(InvalidArgumentError, match="tokens: expected shape"):
        probe(torch.randn(16, 16, 4))


# ------------------------------------------------------------------ quantizer


def test_fwht_matches_sylvester_matrix() -> None:
    from scipy.linalg import hadamard

    x = torch.randn(3, 32, dtype=torch.float64)
    torch.testing.assert_close(fwht(x), x @ torch.from_numpy(hadamard(32).astype(np.float64)))


_G = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _sign_negative(seed: int, stream: int, index: int) -> bool:
    """counter_sign_negative as documented in rng.rs / ordcore.hadamard (pure Python)."""
    k = _mix64((seed + _G) & _M64)
    k = _mix64(k ^ ((stream + _G) & _M64))
    return _mix64(k ^ ((index + _G) & _M64)) >> 63 == 1


def test_rotation_signs_bit_exact() -> None:
    """The quantizer's signs are RandomizedHadamard(n, seed, group_size).signs(0), bit for
    bit, and both follow the documented counter formula (global index, stream 0)."""
    assert _mix64(_G) == 0xE220A8397B1DCDAF  # SplitMix64 reference value, as in rng.rs
    for seed, n, g in [(7, 256, 64), (11, 64, 64), (2**64 - 1, 96, 32), (0, 8, 2)]:
        s = rotation_signs(seed, n, g)
        assert s.shape == (n // g, g) and s.dtype == torch.float64
        ref = ordcore.hadamard.RandomizedHadamard(n, seed=seed, group_size=g).signs(0)
        np.testing.assert_array_equal(s.reshape(-1).numpy(), ref)
        expect = [-1.0 if _sign_negative(seed, 0, i) else 1.0 for i in range(n)]
        np.testing.assert_array_equal(s.reshape(-1).numpy(), expect)
        q = RotatedQuantizer(g, seed=seed)
        np.testing.assert_array_equal(q.signs(n, torch.float64).reshape(-1).numpy(), ref)
    assert abs(rotation_signs(1, 100_000, 2).mean().item()) < 0.02
    with pytest.raises(InvalidArgumentError, match="n: 48 is not a positive multiple"):
        rotation_signs(0, 48, 32)


@pytest.mark.parametrize(("n", "g"), [(64, 64), (256, 32), (128, 2), (96, 32)])
def test_rotation_matches_ordcore_hadamard(n: int, g: int) -> None:
    q = RotatedQuantizer(g, seed=11)
    ref = ordcore.hadamard.RandomizedHadamard(n, seed=11, group_size=g, dtype=np.float64)
    x = np.random.default_rng(0).standard_normal((5, n))
    ours = q.rotation(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, ref.forward(x), rtol=0, atol=1e-12)
    back = q.unrotate(torch.from_numpy(ours)).numpy()
    np.testing.assert_allclose(back, ref.inverse(ours), rtol=0, atol=1e-12)
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-12)
    # float32 rows agree to float32 rounding
    x32 = x.astype(np.float32)
    ref32 = ordcore.hadamard.RandomizedHadamard(n, seed=11, group_size=g)
    np.testing.assert_allclose(q.rotation(torch.from_numpy(x32)).numpy(), ref32.forward(x32),
                               rtol=0, atol=1e-5)  # fmt: skip


def test_rotation_autograd_backward_is_the_transpose() -> None:
    q = RotatedQuantizer(16, seed=3)
    x = torch.randn(4, 32, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(q.rotation, (x,))
    R = q.rotation(torch.eye(32, dtype=torch.float64)).T  # y = R x for a column x
    torch.testing.assert_close(R @ R.T, torch.eye(32, dtype=torch.float64), rtol=0, atol=1e-12)
    g = torch.randn(4, 32, dtype=torch.float64)
    (grad,) = torch.autograd.grad(HadamardRotation.apply(x, q.signs(32, x.dtype)), x, g)
    torch.testing.assert_close(grad, g @ R, rtol=0, atol=1e-12)
    torch.testing.assert_close(q.unrotate(q.rotation(x)), x, rtol=0, atol=1e-12)


def _weights_with_outliers() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    w = torch.randn(128, 256, generator=g, dtype=torch.float64)
    cols = torch.randperm(256, generator=g)[:4]
    w[:, cols] *= 40.0  # outlier channels, as in LLM weights/activations
    return w


@pytest.mark.parametrize(
    ("fmt", "group_size", "scale"),
    [("int4", 32, "absmax"), ("int4", 128, "absmax"), ("fp4", 128, "absmax"),
     ("int4", 32, "mse"), ("fp4", 32, "mse"), ("fp4", 128, "mse")],
)  # fmt: skip
def test_rotation_lowers_error_on_outliers(fmt: str, group_size: int, scale: str) -> None:
    err = RotatedQuantizer(group_size, fmt, scale=scale).mse(_weights_with_outliers())
    assert err["rotated"] < (0.9 if fmt == "fp4" and group_size == 32 else 0.7) * err["plain"], err


def test_fp4_small_group_absmax_rotation_does_not_help() -> None:
    """The documented finding: FP4 E2M1, group 32, absmax scale: a group holding one outlier
    becomes +-c + noise after rotation, values crowd into [4, 6] * scale (E2M1's coarsest
    step) and the error grows; plain RTN keeps the outlier exact. The MSE scale fixes it."""
    w = _weights_with_outliers()
    absmax = RotatedQuantizer(32, "fp4").mse(w)
    assert absmax["rotated"] > 1.5 * absmax["plain"], absmax
    mse = RotatedQuantizer(32, "fp4", scale="mse").mse(w)
    assert mse["rotated"] < absmax["plain"], (mse, absmax)


@pytest.mark.parametrize("fmt", ["int4", "fp4"])
@pytest.mark.parametrize("rotate", [False, True])
def test_mse_scale_is_never_worse_per_group(fmt: str, rotate: bool) -> None:
    w = _weights_with_outliers()[:16]
    a = RotatedQuantizer(32, fmt, rotate=rotate, scale="absmax")
    m = RotatedQuantizer(32, fmt, rotate=rotate, scale="mse")
    xa = a.rotation(w) if rotate else w  # per-group error is measured in the rotated frame
    ea = ((a.rotation(a(w)) if rotate else a(w)) - xa).reshape(16, -1, 32).pow(2).sum(-1)
    em = ((m.rotation(m(w)) if rotate else m(w)) - xa).reshape(16, -1, 32).pow(2).sum(-1)
    assert bool((em <= ea + 1e-9).all())
    assert float(em.sum()) < float(ea.sum())
    codes, scales = m.quantize(w)
    assert codes.dtype == torch.int8 and scales.shape == (16, 8)


@pytest.mark.parametrize("fmt", ["int4", "fp4"])
def test_quantize_grids(fmt: str) -> None:
    q = ordcore.create("quantizer", "rotated", group_size=32, fmt=fmt, rotate=False)
    w = torch.randn(8, 64, dtype=torch.float64)
    codes, scales = q.quantize(w)
    assert codes.dtype == torch.int8 and scales.shape == (8, 2)
    if fmt == "int4":
        assert codes.min() >= -8 and codes.max() <= 7
        grid = torch.arange(-8, 8, dtype=torch.float64)
    else:
        assert codes.abs().max() <= 7
        pos = torch.tensor(FP4_E2M1_GRID, dtype=torch.float64)
        grid = torch.cat([-pos, pos])
    w_hat = q.dequantize(codes, scales)
    # round to nearest: no grid point is closer than the chosen one
    y = (w.reshape(8, 2, 32) / scales[..., None]).reshape(8, 64)
    chosen = (w_hat.reshape(8, 2, 32) / scales[..., None]).reshape(8, 64)
    best = (y[..., None] - grid).abs().min(-1).values
    torch.testing.assert_close((y - chosen).abs(), best, rtol=0, atol=1e-12)
    # the group maximum is represented exactly
    torch.testing.assert_close(w_hat.abs().amax(-1), w.abs().amax(-1), rtol=0, atol=1e-12)


def test_quantizer_bad_input() -> None:
    for bad in (0, 3, 24, 8192, 2.0):
        with pytest.raises(InvalidArgumentError, match="group_size: unsupported"):
            RotatedQuantizer(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="fmt"):
        RotatedQuantizer(32, "int8")
    with pytest.raises(InvalidArgumentError, match="scale: expected 'absmax' or 'mse'"):
        RotatedQuantizer(32, scale="max")
    with pytest.raises(InvalidArgumentError, match="w: last dimension 48 is not a multiple"):
        RotatedQuantizer(32).quantize(torch.randn(2, 48))
    with pytest.raises(TypeError, match="w: expected a floating"):
        RotatedQuantizer(32).quantize(torch.ones(2, 32, dtype=torch.int64))


def test_torch_plugin_registered_lazily() -> None:
    comps = {c.key: c for c in ordcore.list_components() if c.plugin == "ordcore-torch"}
    assert set(comps) == {
        "mixer/linear_attention", "mixer/gated_deltanet", "mixer/diagonal_ssm",
        "order/sinkhorn", "order/plackett_luce", "order/fixed", "probe/ssm_probe",
        "quantizer/rotated",
    }  # fmt: skip
    assert all(isinstance(c.factory, str) and c.factory.startswith("ordcore_torch.")
               for c in comps.values())  # fmt: skip
    assert comps["order/sinkhorn"].requires == ("torch", "scipy")
