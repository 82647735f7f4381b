"""Every ordcore-torch component on float64, half-precision, integer and zero-length input.

float64 input on a default (float32) mixer gave ``RuntimeError: expected m1 and m2 to have
the same dtype``, ``seq=0`` a reshape error and integer input a builtin ``TypeError``. Now a
component computes in the wider of the input's and its parameters' dtype and returns the
input's dtype, a zero-length sequence gives an empty output, and a dtype it cannot use is
an ``ordcore.DTypeError``. The table below must name every registered component.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import ordcore
from ordcore.errors import DTypeError, InvalidArgumentError

MIXERS = {
    "mixer/linear_attention": dict(d_model=8, num_heads=2, gate="scalar"),
    "mixer/gated_deltanet": dict(d_model=8, num_heads=2),
    "mixer/diagonal_ssm": dict(d_model=8, d_state=4),
}
D = 8
N_TOKENS = 6


def _x(dtype: torch.dtype, T: int = N_TOKENS, B: int = 2, features: int = D) -> torch.Tensor:
    g = torch.Generator().manual_seed(T * 7 + B)
    x = torch.randn(B, T, features, generator=g, dtype=torch.float64)
    return x.to(dtype) if dtype.is_floating_point else (x * 10).to(dtype)


def _create(key: str, **kw: Any) -> Any:
    kind, name = key.split("/")
    torch.manual_seed(0)
    return ordcore.create(kind, name, **kw)


# key -> (factory, call on an input tensor): every component, by how it is used
COMPONENTS: dict[str, tuple[Callable[[], Any], Callable[[Any, torch.Tensor], torch.Tensor]]] = {
    **{key: ((lambda key=key: _create(key, **MIXERS[key])), lambda m, x: m(x)[0]) for key in MIXERS},
    "order/fixed": (lambda: _create("order/fixed", permutation=[3, 1, 0, 5, 2, 4]), lambda m, x: m(x)),
    "order/sinkhorn": (lambda: _create("order/sinkhorn", num_tokens=N_TOKENS), lambda m, x: m(x)),
    "order/plackett_luce": (lambda: _create("order/plackett_luce", num_tokens=N_TOKENS),
                            lambda m, x: m(x)),  # fmt: skip
    "probe/ssm_probe": (lambda: _create("probe/ssm_probe", in_features=D, num_classes=3,
                                        d_model=8, d_state=4), lambda m, x: m(x)),  # fmt: skip
    "quantizer/rotated": (lambda: _create("quantizer/rotated", group_size=8), lambda m, x: m(x)),
}


def test_the_table_covers_every_component() -> None:
    torch_plugin = {c.key for c in ordcore.list_components() if c.plugin == "ordcore-torch"}
    assert torch_plugin == set(COMPONENTS)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("key", sorted(COMPONENTS))
def test_floating_input_of_any_precision(key: str, dtype: torch.dtype) -> None:
    make, call = COMPONENTS[key]
    module = make()
    x = _x(dtype)
    torch.manual_seed(1)  # the same Gumbel noise for a training-mode Sinkhorn order
    y = call(module, x)
    assert y.dtype == dtype and torch.isfinite(y.float()).all()
    # computed in float64: equal to the module cast to float64 (the Sinkhorn order draws its
    # Gumbel noise in its parameters' dtype, so its float64 copy draws other noise)
    if dtype == torch.float64 and key != "order/sinkhorn":
        torch.manual_seed(1)
        y64 = call(make().double(), x)
        torch.testing.assert_close(y, y64, rtol=0, atol=1e-12)


@pytest.mark.parametrize("key", sorted(MIXERS))
def test_float64_input_chunk_equals_recurrent(key: str) -> None:
    """float64 input on a float32 module: both modes run in float64 and agree to 1e-10."""
    x = _x(torch.float64, T=37)
    outs = {}
    for mode in ("chunk", "recurrent"):
        module = _create(key, **MIXERS[key], mode=mode, chunk_size=8)
        assert next(module.parameters()).dtype == torch.float32
        outs[mode] = module(x, output_final_state=True)
    (y_c, s_c), (y_r, s_r) = outs["chunk"], outs["recurrent"]
    assert y_c.dtype == torch.float64
    torch.testing.assert_close(y_c, y_r, rtol=0, atol=1e-10)
    torch.testing.assert_close(s_c, s_r, rtol=0, atol=1e-10)


@pytest.mark.parametrize("key", sorted(MIXERS))
def test_float64_input_gradients_reach_float32_parameters(key: str) -> None:
    module = _create(key, **MIXERS[key])
    module(_x(torch.float64))[0].sum().backward()
    grads = [p.grad for p in module.parameters()]
    assert all(g is not None and g.dtype == torch.float32 for g in grads)


@pytest.mark.parametrize("mode", ["chunk", "recurrent"])
@pytest.mark.parametrize("key", sorted(MIXERS))
def test_zero_length_sequence_gives_empty_output(key: str, mode: str) -> None:
    module = _create(key, **MIXERS[key], mode=mode)
    x = _x(torch.float32, T=0)
    y, state = module(x, output_final_state=True)
    assert y.shape == (2, 0, D) and y.dtype == torch.float32
    _, s5 = module(_x(torch.float32, T=5), output_final_state=True)
    assert state is not None and state.shape == s5.shape and not state.abs().sum()
    y, state2 = module(x, initial_state=s5, output_final_state=True)  # the state passes through
    assert state2 is s5
    y, _ = module(_x(torch.float32, T=4, B=0))
    assert y.shape == (0, 4, D)


@pytest.mark.parametrize("key", sorted(COMPONENTS))
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.complex64])
def test_integer_input(key: str, dtype: torch.dtype) -> None:
    """Components that compute on values raise DTypeError; pure reorderings reorder."""
    make, call = COMPONENTS[key]
    module = make()
    x = _x(dtype)
    if key in ("order/fixed", "order/plackett_luce"):
        y = call(module, x)
        assert y.dtype == dtype and y.shape == x.shape
        assert (y[0][:, None] == x[0][None]).all(-1).any(1).all()  # every row is one of x's
        return
    with pytest.raises(DTypeError, match="dtype"):
        call(module, x)


def test_sinkhorn_reorders_integers_in_eval_mode_only() -> None:
    module = _create("order/sinkhorn", num_tokens=N_TOKENS)
    x = _x(torch.int64)
    with pytest.raises(DTypeError, match="eval mode"):
        module.train()(x)
    y = module.eval()(x)
    assert y.dtype == torch.int64 and (y[0][:, None] == x[0][None]).all(-1).any(1).all()


def test_probe_needs_a_token() -> None:
    make, call = COMPONENTS["probe/ssm_probe"]
    with pytest.raises(InvalidArgumentError, match="at least one token"):
        call(make(), _x(torch.float32, T=0))
