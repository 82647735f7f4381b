"""The ordcore entry point of ordcore-torch: registers every component by a
``"module:attr"`` string, so discovery never imports torch."""

from __future__ import annotations

from ordcore.plugins import Registry, hookimpl

_COMPONENTS = [
    ("mixer", "linear_attention", "linear_attention:LinearAttention",
     "causal (gated) linear attention, chunked (Lightning Attention-2) or recurrent"),
    ("mixer", "gated_deltanet", "gated_deltanet:GatedDeltaNet",
     "gated delta rule, chunked WY form or recurrent"),
    ("mixer", "diagonal_ssm", "ssm:DiagonalSSM", "diagonal LTI state-space layer (S4D)"),
    ("order", "sinkhorn", "order:SinkhornOrder", "learned soft permutation (Gumbel-Sinkhorn)"),
    ("order", "plackett_luce", "order:PlackettLuceOrder",
     "learned distribution over permutations (Plackett-Luce)"),
    ("order", "fixed", "order:FixedOrder", "an ordcore.sfc scan order as a torch module"),
    ("probe", "ssm_probe", "probe:SSMProbe", "features -> order -> diagonal SSM -> linear head"),
    ("quantizer", "rotated", "quantizer:RotatedQuantizer",
     "randomized Hadamard rotation + group-wise INT4/FP4 round-to-nearest"),
]  # fmt: skip


@hookimpl
def ordcore_register_components(registry: Registry) -> None:
    for kind, name, target, description in _COMPONENTS:
        requires = ("torch", "scipy") if name == "sinkhorn" else ("torch",)
        registry.add(kind, name, f"ordcore_torch.{target}", requires=requires,
                     description=description)  # fmt: skip
