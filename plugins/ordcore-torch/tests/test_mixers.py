"""Mixers: chunked == recurrent in float64, chunk-size independence, state carried across
calls, packed (cu_seqlens) == loop over sequences, gradcheck, step() == forward, bad input."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

import ordcore
from ordcore.errors import InvalidArgumentError
from ordcore_torch.gated_deltanet import (
    GatedDeltaNet,
    gated_delta_rule_chunk,
    gated_delta_rule_recurrent,
)
from ordcore_torch.linear_attention import (
    LinearAttention,
    linear_attention_chunk,
    linear_attention_recurrent,
)
from ordcore_torch.ssm import DiagonalSSM, diagonal_ssm_chunk, diagonal_ssm_recurrent

DT = torch.float64
TOL = dict(rtol=0, atol=1e-10)
CHUNKS = [1, 3, 8, 16]
LENGTHS = [1, 13, 37]


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _la_inputs(T: int, gate: str | None, B: int = 2, H: int = 2, K: int = 4, V: int = 3):
    g = _gen(T)
    q, k = (torch.randn(B, T, H, K, generator=g, dtype=DT) for _ in range(2))
    v = torch.randn(B, T, H, V, generator=g, dtype=DT)
    gate_t = None
    if gate == "scalar":
        gate_t = F.logsigmoid(torch.randn(B, T, H, generator=g, dtype=DT))
    elif gate == "per_key":
        gate_t = F.logsigmoid(torch.randn(B, T, H, K, generator=g, dtype=DT))
    s0 = torch.randn(B, H, K, V, generator=g, dtype=DT)
    return q, k, v, gate_t, s0


@pytest.mark.parametrize("gate", [None, "scalar", "per_key"])
@pytest.mark.parametrize("T", LENGTHS)
def test_linear_attention_chunk_equals_recurrent(gate: str | None, T: int) -> None:
    q, k, v, g, s0 = _la_inputs(T, gate)
    o_ref, s_ref = linear_attention_recurrent(q, k, v, g, s0)
    for C in CHUNKS:
        o, s = linear_attention_chunk(q, k, v, g, s0, chunk_size=C)
        torch.testing.assert_close(o, o_ref, **TOL)
        torch.testing.assert_close(s, s_ref, **TOL)


def test_linear_attention_reference_by_hand() -> None:
    """Ungated: o_t = sum_{s<=t} (q_t . k_s) v_s (causal softmax-free attention)."""
    q, k, v, _, _ = _la_inputs(9, None)
    scores = torch.einsum("bthk,bshk->bhts", q, k).tril()
    expected = torch.einsum("bhts,bshv->bthv", scores, v)
    o, _ = linear_attention_recurrent(q, k, v)
    torch.testing.assert_close(o, expected, **TOL)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("T", LENGTHS)
def test_gated_delta_rule_chunk_equals_recurrent(gated: bool, T: int) -> None:
    q, k, v, _, s0 = _la_inputs(T, None)
    g = _gen(T + 1)
    k = F.normalize(k, dim=-1)
    beta = torch.rand(q.shape[:3], generator=g, dtype=DT)
    gate = F.logsigmoid(torch.randn(q.shape[:3], generator=g, dtype=DT)) if gated else None
    o_ref, s_ref = gated_delta_rule_recurrent(q, k, v, beta, gate, s0)
    for C in CHUNKS:
        o, s = gated_delta_rule_chunk(q, k, v, beta, gate, s0, chunk_size=C)
        torch.testing.assert_close(o, o_ref, **TOL)
        torch.testing.assert_close(s, s_ref, **TOL)


def test_delta_rule_reference_by_hand() -> None:
    """One step from a known state: S1 = a (I - b k k^T) S0 + b k v^T."""
    g = _gen(5)
    K, V = 3, 2
    S0 = torch.randn(1, 1, K, V, generator=g, dtype=DT)
    k = F.normalize(torch.randn(K, generator=g, dtype=DT), dim=0)
    v, q = torch.randn(V, generator=g, dtype=DT), torch.randn(K, generator=g, dtype=DT)
    a, b = 0.7, 0.4
    S1 = a * (torch.eye(K, dtype=DT) - b * torch.outer(k, k)) @ S0[0, 0] + b * torch.outer(k, v)
    o, s = gated_delta_rule_recurrent(
        q.view(1, 1, 1, K), k.view(1, 1, 1, K), v.view(1, 1, 1, V),
        torch.full((1, 1, 1), b, dtype=DT), torch.full((1, 1, 1), math.log(a), dtype=DT),
        S0,
    )  # fmt: skip
    torch.testing.assert_close(s[0, 0], S1, **TOL)
    torch.testing.assert_close(o[0, 0, 0], S1.T @ q, **TOL)


@pytest.mark.parametrize("T", LENGTHS)
def test_diagonal_ssm_chunk_equals_recurrent(T: int) -> None:
    torch.manual_seed(T)
    m = DiagonalSSM(5, 6, dtype=DT, dt_min=0.01, dt_max=0.5)
    x = torch.randn(2, T, 5, generator=_gen(T), dtype=DT)
    s0 = torch.randn(2, 5, 6, generator=_gen(T + 1), dtype=torch.complex128)
    la, bb, c = m.discretize()
    y_ref, s_ref = diagonal_ssm_recurrent(x, la, bb, c, s0)
    for C in CHUNKS:
        y, s = diagonal_ssm_chunk(x, la, bb, c, s0, chunk_size=C)
        torch.testing.assert_close(y, y_ref, **TOL)
        torch.testing.assert_close(s, s_ref, **TOL)


def test_diagonal_ssm_is_the_s4d_convolution() -> None:
    """y = K * x + D x with K_l = 2 Re(C Bbar Abar^l) (S4D's kernel, ZOH)."""
    torch.manual_seed(0)
    m = DiagonalSSM(3, 4, dtype=DT)
    x = torch.randn(1, 20, 3, dtype=DT)
    la, bb, c = m.discretize()
    ell = torch.arange(20, dtype=DT)
    kern = 2 * (c * bb * torch.exp(la[None] * ell[:, None, None])).sum(-1).real  # (L, H)
    expected = torch.stack(
        [sum(kern[t - s] * x[0, s] for s in range(t + 1)) for t in range(20)]
    ) + m.D.detach() * x[0]
    y, _ = m(x)
    torch.testing.assert_close(y[0], expected, **TOL)


# ------------------------------------------------------------------ the layers


def _layers():
    torch.manual_seed(0)
    return {
        "la": lambda **kw: LinearAttention(12, 3, dtype=DT, **kw),
        "gla": lambda **kw: LinearAttention(12, 3, gate="per_key", dtype=DT, **kw),
        "sla": lambda **kw: LinearAttention(12, 3, gate="scalar", dtype=DT, **kw),
        "gdn": lambda **kw: GatedDeltaNet(12, 3, dtype=DT, **kw),
        "ssm": lambda **kw: DiagonalSSM(12, 4, dtype=DT, dt_min=0.05, dt_max=0.5, **kw),
    }


LAYERS = list(_layers())


def _pair(name: str, chunk_size: int = 5):
    torch.manual_seed(1)
    chunk = _layers()[name](mode="chunk", chunk_size=chunk_size)
    rec = _layers()[name](mode="recurrent")
    rec.load_state_dict(chunk.state_dict())
    return chunk, rec


@pytest.mark.parametrize("name", LAYERS)
def test_layer_modes_and_chunk_sizes_agree(name: str) -> None:
    x = torch.randn(2, 23, 12, generator=_gen(2), dtype=DT)
    chunk, rec = _pair(name)
    y_ref, s_ref = rec(x, output_final_state=True)
    for C in (1, 4, 7, 64):
        chunk.chunk_size = C
        y, s = chunk(x, output_final_state=True)
        torch.testing.assert_close(y, y_ref, **TOL)
        torch.testing.assert_close(s, s_ref, **TOL)


@pytest.mark.parametrize("name", LAYERS)
def test_state_carried_across_calls(name: str) -> None:
    x = torch.randn(2, 30, 12, generator=_gen(3), dtype=DT)
    layer, _ = _pair(name)
    y_full, s_full = layer(x, output_final_state=True)
    y1, s1 = layer(x[:, :11], output_final_state=True)
    y2, s2 = layer(x[:, 11:], initial_state=s1, output_final_state=True)
    torch.testing.assert_close(torch.cat([y1, y2], dim=1), y_full, **TOL)
    torch.testing.assert_close(s2, s_full, **TOL)


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
def test_packed_equals_loop_over_sequences(name: str, mode: str) -> None:
    lengths = [5, 1, 12, 8]
    cu = torch.tensor([0, *itertools.accumulate(lengths)])
    x = torch.randn(1, sum(lengths), 12, generator=_gen(4), dtype=DT)
    layer, _ = _pair(name)
    layer.mode = mode
    _, s_shape_probe = layer(x[:, :1], output_final_state=True)
    assert s_shape_probe is not None
    init = torch.randn((len(lengths), *s_shape_probe.shape[1:]), generator=_gen(9), dtype=DT)
    if s_shape_probe.is_complex():
        init = torch.complex(init, torch.randn(init.shape, generator=_gen(8), dtype=DT))
    y, s = layer(x, cu_seqlens=cu, initial_state=init, output_final_state=True)
    assert y.shape == x.shape and s is not None and s.shape[0] == len(lengths)
    for i in range(len(lengths)):
        xi = x[:, cu[i] : cu[i + 1]]
        yi, si = layer(xi, initial_state=init[i : i + 1], output_final_state=True)
        torch.testing.assert_close(y[:, cu[i] : cu[i + 1]], yi, **TOL)
        torch.testing.assert_close(s[i : i + 1], si, **TOL)


def test_packed_from_ordcore_packing_offsets() -> None:
    """cu_seqlens as an int32 NumPy-style offsets array (what ordcore.packing produces)."""
    layer, _ = _pair("gdn")
    x = torch.randn(1, 9, 12, generator=_gen(5), dtype=DT)
    y, _ = layer(x, cu_seqlens=torch.tensor([0, 4, 9], dtype=torch.int32))
    torch.testing.assert_close(y[:, 4:], layer(x[:, 4:])[0], **TOL)


@pytest.mark.parametrize("name", LAYERS)
def test_step_equals_forward(name: str) -> None:
    x = torch.randn(2, 9, 12, generator=_gen(6), dtype=DT)
    layer, _ = _pair(name, chunk_size=4)
    y_full, s_full = layer(x, output_final_state=True)
    state = None
    ys = []
    for t in range(x.shape[1]):
        y_t, state = layer.step(x[:, t], state)
        ys.append(y_t)
    torch.testing.assert_close(torch.stack(ys, dim=1), y_full, **TOL)
    torch.testing.assert_close(state, s_full, **TOL)


@pytest.mark.parametrize("name", LAYERS)
def test_gradcheck(name: str) -> None:
    torch.manual_seed(7)
    layer = _layers()[name](mode="chunk", chunk_size=3)
    small = {"la": 6, "gla": 6, "sla": 6, "gdn": 6, "ssm": 6}[name]
    layer = type(layer)(
        small, *( (2,) if name != "ssm" else (3,) ), dtype=DT, mode="chunk", chunk_size=3,
        **({"gate": "per_key"} if name == "gla" else {"gate": "scalar"} if name == "sla" else {}),
    )  # fmt: skip
    x = torch.randn(1, 7, small, dtype=DT, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: layer(t)[0], (x,))
    # through the parameters too (the gates and decays)
    params = [p for p in layer.parameters()]
    def f(*ps: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(layer, dict(zip([n for n, _ in layer.named_parameters()], ps)), (x.detach(),))[0]
    assert torch.autograd.gradcheck(f, tuple(p.detach().clone().requires_grad_() for p in params))


def test_gradcheck_kernels_with_state() -> None:
    q, k, v, g, s0 = _la_inputs(6, "per_key", B=1, H=1, K=2, V=2)
    args = [t.clone().requires_grad_() for t in (q, k, v, g, s0)]
    assert torch.autograd.gradcheck(
        lambda *a: linear_attention_chunk(*a, chunk_size=4), tuple(args)
    )
    beta = torch.rand(1, 6, 1, dtype=DT, requires_grad=True)
    gs = F.logsigmoid(torch.randn(1, 6, 1, dtype=DT)).requires_grad_()
    kn = F.normalize(k, dim=-1).detach().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q_, k_, v_, b_, g_, s_: gated_delta_rule_chunk(q_, k_, v_, b_, g_, s_, chunk_size=4),
        (args[0], kn, args[2], beta, gs, args[4]),
    )


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("name", LAYERS)
def test_bad_input(name: str) -> None:
    layer, _ = _pair(name)
    x = torch.randn(1, 10, 12, dtype=DT)
    with pytest.raises(InvalidArgumentError, match="x: expected rank 3"):
        layer(x[0])
    with pytest.raises(InvalidArgumentError, match="x: feature size 11"):
        layer(x[..., :11])
    bad = {
        "must start at 0": torch.tensor([1, 10]),
        "strictly increasing": torch.tensor([0, 6, 6, 10]),
        "must end at the sequence length 10": torch.tensor([0, 4, 9]),
        "1-D": torch.tensor([[0, 10]]),
    }
    for msg, cu in bad.items():
        with pytest.raises(InvalidArgumentError, match=f"cu_seqlens: .*{msg}"):
            layer(x, cu_seqlens=cu)
    with pytest.raises(InvalidArgumentError, match="cu_seqlens: packed input must have batch size 1"):
        layer(torch.randn(2, 10, 12, dtype=DT), cu_seqlens=torch.tensor([0, 10]))
    with pytest.raises(TypeError, match="cu_seqlens: expected an integer"):
        layer(x, cu_seqlens=torch.tensor([0.0, 10.0]))
    with pytest.raises(InvalidArgumentError, match="initial_state: expected"):
        layer(x, initial_state=torch.zeros(3, 3, dtype=DT))
    with pytest.raises(InvalidArgumentError, match="mode"):
        type(layer)(12, mode="fast")
    with pytest.raises(InvalidArgumentError, match="chunk_size"):
        type(layer)(12, chunk_size=0)


def test_created_through_ordcore() -> None:
    m = ordcore.create("mixer", "gated_deltanet", d_model=8, num_heads=2)
    assert isinstance(m, GatedDeltaNet)
    comp = ordcore.plugins.get_component("mixer", "diagonal_ssm")
    assert comp.plugin == "ordcore-torch" and comp.requires == ("torch",)
    assert isinstance(ordcore.create("mixer", "linear_attention", d_model=8), LinearAttention)
    assert isinstance(ordcore.create("mixer", "diagonal_ssm", d_model=8), DiagonalSSM)
