"""Input checks, dtypes and edge cases of the mixers, orders and quantizer, found by a
fresh-user pass. Each test failed before its fix: a bare torch/builtin exception, silent garbage (a wrong
dtype, a NaN turned into zeros, a broadcast scale, an aliased buffer) or a biased sample.
Shapes are tiny; the tests check correctness only.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore_torch.gated_deltanet import GatedDeltaNet
from ordcore_torch.linear_attention import LinearAttention
from ordcore_torch.order import FixedOrder, PlackettLuceOrder, SinkhornOrder, gumbel_sinkhorn
from ordcore_torch.probe import SSMProbe
from ordcore_torch.quantizer import RotatedQuantizer
from ordcore_torch.ssm import DiagonalSSM

MODES = ["chunk", "recurrent"]


def _mixer(name: str, **kw: object) -> torch.nn.Module:
    torch.manual_seed(0)
    if name == "la":
        return LinearAttention(8, 2, gate="per_key", **kw)
    if name == "gdn":
        return GatedDeltaNet(8, 2, **kw)
    return DiagonalSSM(8, 4, **kw)


# ------------------------------------------------------------------ 1: initial_state dtype


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["la", "gdn"])
def test_initial_state_of_another_dtype_is_cast(name: str, mode: str) -> None:
    m = _mixer(name, mode=mode, dtype=torch.float64)
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    s64 = torch.randn(1, 2, 4, 4, dtype=torch.float64)
    y_ref, st_ref = m(x, initial_state=s64, output_final_state=True)
    s32 = s64.float()  # e.g. torch.zeros(...) without dtype=
    y, st = m(x, initial_state=s32, output_final_state=True)
    assert y.dtype == torch.float64 and st.dtype == torch.float64
    torch.testing.assert_close(y, m(x, initial_state=s32.double())[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-5)
    # float32 module, float32 x, float64 state: computed (and returned) in float32
    m32 = _mixer(name, mode=mode)
    y, st = m32(x.float(), initial_state=s64, output_final_state=True)
    assert y.dtype == torch.float32 and st.dtype == torch.float32
    with pytest.raises(DTypeError, match="initial_state"):
        m(x, initial_state=torch.zeros(1, 2, 4, 4, dtype=torch.int64))
    with pytest.raises(DTypeError, match="initial_state"):
        m(x, initial_state=torch.zeros(1, 2, 4, 4, dtype=torch.complex128))


@pytest.mark.parametrize("mode", MODES)
def test_ssm_initial_state_dtype(mode: str) -> None:
    m = _mixer("ssm", mode=mode)  # float32
    x = torch.randn(1, 5, 8)
    s128 = torch.randn(1, 8, 4, dtype=torch.complex128)
    y, st = m(x, initial_state=s128, output_final_state=True)
    assert y.dtype == torch.float32 and st.dtype == torch.complex64
    y2, _ = m(x, initial_state=s128.to(torch.complex64))
    torch.testing.assert_close(y, y2, rtol=0, atol=0)
    with pytest.raises(DTypeError, match="initial_state: expected a complex"):
        m(x, initial_state=torch.zeros(1, 8, 4))
    with pytest.raises(DTypeError, match="initial_state"):
        m(x, initial_state=torch.zeros(1, 8, 4, dtype=torch.int32))


# ------------------------------------------------------------------ 2: half-precision modules


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["gdn", "ssm"])
def test_half_precision_modules_run(name: str, dtype: torch.dtype, mode: str) -> None:
    m32 = _mixer(name, mode=mode, chunk_size=4)
    m = _mixer(name, mode=mode, chunk_size=4).to(dtype)
    x = torch.randn(2, 7, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "ComplexHalf support is experimental"
        y, st = m(x.to(dtype), output_final_state=True)
    assert y.dtype == dtype and torch.isfinite(y.float()).all()
    y_ref, _ = m32(x.to(dtype).float())
    tol = 0.05 if dtype == torch.float16 else 0.2
    torch.testing.assert_close(y.float(), y_ref, rtol=0, atol=tol * (1 + y_ref.abs().max().item()))
    y.float().sum().backward()  # differentiable
    # the state carries on
    y2, _ = m(x.to(dtype), initial_state=st)
    assert y2.dtype == dtype


# ------------------------------------------------------------------ 3: empty input, autograd


@pytest.mark.parametrize("shape", [(2, 0, 8), (0, 3, 8)])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["la", "gdn", "ssm"])
def test_empty_input_stays_connected_to_autograd(name: str, mode: str, shape: tuple) -> None:
    m = _mixer(name, mode=mode)
    x = torch.randn(*shape, requires_grad=True)
    y, _ = m(x)
    assert y.shape == shape and y.dtype == x.dtype and y.requires_grad
    y.sum().backward()
    assert x.grad is not None and x.grad.shape == shape
    assert any(p.grad is not None for p in m.parameters())
    # the cast path (float64 input on a float32 module) too
    x64 = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    y64, _ = m(x64)
    assert y64.dtype == torch.float64
    y64.sum().backward()


# ------------------------------------------------------------------ 4-7: quantizer


@pytest.mark.parametrize("fmt", ["int4", "fp4"])
@pytest.mark.parametrize("rotate", [True, False])
def test_quantizer_empty_batch(rotate: bool, fmt: str) -> None:
    q = RotatedQuantizer(8, fmt, rotate=rotate)
    w = torch.randn(0, 3, 16, requires_grad=True)
    codes, scales = q.quantize(w)
    assert codes.shape == (0, 3, 16) and codes.dtype == torch.int8
    assert scales.shape == (0, 3, 2) and scales.dtype == torch.float32
    assert q(w).shape == (0, 3, 16)
    assert q.dequantize(codes, scales).shape == (0, 3, 16)
    with pytest.raises(InvalidArgumentError, match="w: the last dimension is empty"):
        q(torch.randn(4, 0))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("rotate", [True, False])
def test_quantizer_refuses_non_finite(rotate: bool, bad: float) -> None:
    q = RotatedQuantizer(4, rotate=rotate)
    w = torch.tensor([[0.1, bad, 0.2, 0.3], [0.1, 0.15, 0.2, 0.3]])
    w0 = w.clone()
    for call in (q.quantize, q, q.mse):
        with pytest.raises(InvalidArgumentError, match="w: contains 1 NaN/inf"):
            call(w)
    assert torch.equal(w.isnan(), w0.isnan()) and torch.equal(w.nan_to_num(), w0.nan_to_num())


def test_dequantize_validates_codes_and_scales() -> None:
    q = RotatedQuantizer(8, rotate=False)
    w = torch.randn(4, 16) * torch.tensor([[1.0], [10.0], [100.0], [1000.0]])
    codes, scales = q.quantize(w)
    torch.testing.assert_close(q.dequantize(codes, scales), q(w))
    for bad_scales in (scales[:1], scales[:, :1], scales.T, scales[..., None]):
        with pytest.raises(InvalidArgumentError, match="scales: expected shape \\(4, 2\\)"):
            q.dequantize(codes, bad_scales)
    with pytest.raises(DTypeError, match="codes: expected an integer"):
        q.dequantize(codes.float() + 0.5, scales)
    with pytest.raises(DTypeError, match="codes: expected an integer"):
        q.dequantize(codes.bool(), scales)
    with pytest.raises(DTypeError, match="scales"):
        q.dequantize(codes, scales.to(torch.int64))
    with pytest.raises(InvalidArgumentError, match="scales: contains NaN"):
        q.dequantize(codes, scales.clone().fill_(float("nan")))
    with pytest.raises(InvalidArgumentError, match="codes: last dimension 12"):
        q.dequantize(codes[:, :12], scales)
    with pytest.raises(InvalidArgumentError, match="codes: int4 codes must lie in -8..7"):
        q.dequantize(torch.full((1, 8), 8, dtype=torch.int8), torch.ones(1, 1))
    fp4 = RotatedQuantizer(8, "fp4", rotate=False)
    for code in (9, -8):
        with pytest.raises(InvalidArgumentError, match="codes: fp4 codes must lie in -7..7"):
            fp4.dequantize(torch.full((1, 8), code, dtype=torch.int8), torch.ones(1, 1))
    # int64 codes in range are fine
    torch.testing.assert_close(q.dequantize(codes.long(), scales), q(w))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_rotation_does_not_overflow(dtype: torch.dtype) -> None:
    q = RotatedQuantizer(128)
    w = (600.0 * q.signs(128, torch.float32).reshape(1, 128)).to(dtype)
    exact = q.rotation(w.double())
    r = q.rotation(w)
    assert r.dtype == dtype and torch.isfinite(r).all()
    torch.testing.assert_close(r.double(), exact, rtol=1e-2, atol=0)
    back = q.unrotate(r)
    assert back.dtype == dtype and torch.isfinite(back).all()
    out = q(w)
    assert out.dtype == dtype and torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), w.double(), rtol=0.1, atol=1.0)


# ------------------------------------------------------------------ 8-11: permutations


BAD_PERMS = [
    ("duplicate", [0, 0, 1, 2], InvalidArgumentError, "not a permutation"),
    ("negative", [-1, 0, 1, 2], InvalidArgumentError, "not a permutation"),
    ("out of range", [4, 0, 1, 2], InvalidArgumentError, "not a permutation"),
    ("float", [0.7, 1.2, 2.9, 3.1], DTypeError, "integer"),
    ("bool", [True, False, True, False], DTypeError, "integer"),
    ("short", [2, 1, 0], InvalidArgumentError, "expected 4 entries"),
]


@pytest.mark.parametrize(("label", "perm", "exc", "msg"), BAD_PERMS, ids=[b[0] for b in BAD_PERMS])
def test_log_prob_refuses_non_permutations(label: str, perm: list, exc: type, msg: str) -> None:
    pl = PlackettLuceOrder(4)
    with pytest.raises(exc, match=f"perms: .*{msg}"):
        pl.log_prob(torch.tensor(perm))
    if exc is InvalidArgumentError and label != "short":
        good = torch.tensor([[0, 1, 2, 3], perm])
        with pytest.raises(InvalidArgumentError, match="perms: row 1 is not a permutation"):
            pl.log_prob(good)
    with pytest.raises(InvalidArgumentError, match="perms: expected shape"):
        pl.log_prob(torch.tensor(3))
    # valid input still works, batched or not, as tensors, lists or numpy
    s = pl.sample(5)
    lp = pl.log_prob(s)
    assert lp.shape == (5,) and torch.isfinite(lp).all()
    torch.testing.assert_close(pl.log_prob(s[0].tolist()), lp[0])
    torch.testing.assert_close(pl.log_prob(s.numpy().astype(np.int32)), lp)


@pytest.mark.parametrize(("label", "perm", "exc", "msg"), BAD_PERMS, ids=[b[0] for b in BAD_PERMS])
def test_forward_checks_perm(label: str, perm: list, exc: type, msg: str) -> None:
    pl = PlackettLuceOrder(4)
    x = torch.arange(4.0).reshape(1, 4, 1)
    with pytest.raises(exc, match=f"perm: .*{msg}"):
        pl(x, perm=torch.tensor(perm))
    s = pl.sample(generator=torch.Generator().manual_seed(0))  # (1, n)
    with pytest.raises(InvalidArgumentError, match=r"perm: expected shape \(n,\).*perm\[0\]"):
        pl(x, perm=s)
    torch.testing.assert_close(pl(x, perm=s[0]), x[:, s[0]])


def test_fixed_order_copies_and_checks_its_permutation() -> None:
    p = np.array([2, 0, 1])
    order = FixedOrder(permutation=p)
    p[:] = [0, 1, 2]  # the caller reuses its array
    assert order.perm.tolist() == [2, 0, 1]
    t = torch.tensor([1, 0, 2])
    order_t = FixedOrder(permutation=t)
    t[:] = torch.tensor([0, 1, 2])
    assert order_t.perm.tolist() == [1, 0, 2]
    x = torch.arange(3.0).reshape(1, 3, 1)
    assert torch.equal(order.unpermute(order(x)), x)
    with pytest.raises(DTypeError, match="permutation: expected an integer"):
        FixedOrder(permutation=[0.5, 1.5, 2.5])
    with pytest.raises(DTypeError, match="permutation: expected an integer"):
        FixedOrder(permutation=[True, False])
    with pytest.raises(InvalidArgumentError, match=r"permutation: expected shape \(n,\)"):
        FixedOrder(permutation=[[1, 0], [3, 2]])
    with pytest.raises(InvalidArgumentError, match="permutation: is not a permutation"):
        FixedOrder(permutation=[0, 0, 1])
    with pytest.raises(DTypeError, match="init: expected an integer"):
        SinkhornOrder(3, init=[0.0, 1.0, 2.0])
    with pytest.raises(DTypeError, match="init: expected an integer"):
        PlackettLuceOrder(3, init=np.array([0.0, 1.0, 2.0]))


def test_fixed_order_dim_is_checked() -> None:
    for bad in ("a", 1.0, None, True):
        with pytest.raises(InvalidArgumentError, match="dim: expected an int"):
            FixedOrder(permutation=[1, 0], dim=bad)  # type: ignore[arg-type]
    o = FixedOrder(permutation=[1, 0], dim=5)
    with pytest.raises(InvalidArgumentError, match="dim: 5 is out of range"):
        o(torch.randn(2, 2))
    x = torch.randn(3, 2)
    torch.testing.assert_close(FixedOrder(permutation=[1, 0], dim=-1)(x), x[:, [1, 0]])
    torch.testing.assert_close(FixedOrder(permutation=[1, 0], dim=np.int64(1))(x), x[:, [1, 0]])


# ------------------------------------------------------------------ 12-13: Sinkhorn


def test_gumbel_sinkhorn_needs_a_square_matrix() -> None:
    for shape in [(3, 4), (2, 3, 4), (4,), ()]:
        with pytest.raises(InvalidArgumentError, match=r"log_alpha: expected a square \(\.\.\., n, n\)"):
            gumbel_sinkhorn(torch.zeros(shape), noise=False)
    with pytest.raises(DTypeError, match="log_alpha"):
        gumbel_sinkhorn(torch.zeros(3, 3, dtype=torch.int64), noise=False)
    with pytest.raises(TypeError, match="log_alpha: expected a torch.Tensor"):
        gumbel_sinkhorn([[0.0, 1.0], [1.0, 0.0]])  # type: ignore[arg-type]
    P = gumbel_sinkhorn(torch.zeros(2, 3, 3), noise=False)
    torch.testing.assert_close(P.sum(-1), torch.ones(2, 3))
    P16 = gumbel_sinkhorn(torch.randn(4, 4).half(), temperature=0.5)
    assert P16.dtype == torch.float16 and torch.isfinite(P16).all()


def test_sinkhorn_order_computes_in_float64_for_float64_input() -> None:
    kw = dict(noise=False, temperature=0.7, init=[1, 0, 2, 3, 5, 4], init_scale=2.0)
    a, b = SinkhornOrder(6, **kw), SinkhornOrder(6, **kw).double()
    x = torch.randn(2, 6, 3, dtype=torch.float64)
    ya, yb = a(x), b(x)
    assert ya.dtype == torch.float64
    torch.testing.assert_close(ya, yb, rtol=0, atol=1e-13)
    # half input on a float32 module: computed in float32, returned in float16
    y16 = a(x.half())
    assert y16.dtype == torch.float16
    torch.testing.assert_close(y16.double(), ya, rtol=0, atol=1e-2)


# ------------------------------------------------------------------ 14: constructor arguments


def test_constructor_arguments_are_checked() -> None:
    for cls in (LinearAttention, GatedDeltaNet):
        for bad in (0, -1, 2.0):
            with pytest.raises(InvalidArgumentError, match="head_dim: expected a positive int"):
                cls(8, 2, head_dim=bad)  # type: ignore[arg-type]
    for bad in (0.0, -1.0, float("inf"), float("nan"), "16"):
        with pytest.raises(InvalidArgumentError, match="gate_normalizer"):
            LinearAttention(8, 2, gate="per_key", gate_normalizer=bad)  # type: ignore[arg-type]
    assert LinearAttention(8, 2, gate="scalar", gate_normalizer=np.float32(8.0)).gate_normalizer == 8.0
    for kw in (dict(in_features=-1, num_classes=2), dict(in_features=4, num_classes=0),
               dict(in_features=4.0, num_classes=2)):  # fmt: skip
        name = next(k for k, v in kw.items() if not (isinstance(v, int) and v > 0))
        with pytest.raises(InvalidArgumentError, match=f"{name}: expected a positive int"):
            SSMProbe(**kw)  # type: ignore[arg-type]
    for bad in (float("inf"), float("nan"), -1.0, "1"):
        with pytest.raises(InvalidArgumentError, match="noise_scale"):
            SinkhornOrder(3, noise_scale=bad)  # type: ignore[arg-type]
    o = SinkhornOrder(3)
    for good in (np.float32(0.5), np.float64(0.25), torch.tensor(0.125), 2):
        o.set_temperature(good)
        assert isinstance(o.temperature, float) and o.temperature == float(good)
    for bad in (float("inf"), 0.0, np.float32(-1.0)):
        with pytest.raises(InvalidArgumentError, match="temperature: expected a positive"):
            o.set_temperature(bad)
    for bad in ("0.5", None, True, torch.tensor([0.5])):
        with pytest.raises(InvalidArgumentError, match="temperature: expected a real number, got"):
            o.set_temperature(bad)  # type: ignore[arg-type]
    SinkhornOrder(3, temperature=np.float32(0.5), noise_scale=np.float64(0.0))  # accepted


# ------------------------------------------------------------------ 15: bfloat16 sampling


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_plackett_luce_samples_the_right_distribution(dtype: torch.dtype) -> None:
    n, S = 4, 20000
    pl = PlackettLuceOrder(n)
    with torch.no_grad():
        pl.scores.copy_(torch.tensor([-2.0, -1.0, 1.0, 2.0]))  # exact in bfloat16
    perms = list(itertools.permutations(range(n)))
    probs = pl.log_prob(torch.tensor(perms)).exp().detach().double()
    gen = torch.Generator().manual_seed(1)
    ref = pl.sample(S, generator=gen)
    gen = torch.Generator().manual_seed(1)
    smp = pl.to(dtype).sample(S, generator=gen)
    # the same noise draw as the float32 layer: scores are exact in both dtypes
    assert torch.equal(smp, ref)
    counts = torch.zeros(len(perms), dtype=torch.float64)
    index = {p: i for i, p in enumerate(perms)}
    for row in map(tuple, smp.tolist()):
        counts[index[row]] += 1
    expected = probs * S
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 60.0  # 23 degrees of freedom: p < 1e-4 above 55; biased bf16 gave ~700
    # Sinkhorn noise: drawn in float32 for a bfloat16 module, too
    torch.manual_seed(3)
    P = SinkhornOrder(5).to(dtype).soft_permutation(noise=True)
    assert P.dtype == torch.float32 and torch.isfinite(P).all()
