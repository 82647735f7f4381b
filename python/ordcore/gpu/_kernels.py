"""The kernel instantiations each wrapper may launch (one list per ``.cu`` module)."""

from __future__ import annotations

__all__ = [
    "SFC_COORD_TYPES",
    "FWHT_TYPES",
    "FWHT_PAIRS",
    "FWHT_MAX_LOG_N",
    "all_names",
    "fwht_name",
    "fwht_geometry",
]

# numpy dtype name -> C type of the coordinates the sfc kernels read directly; narrower
# integer dtypes are widened on the device first.
SFC_COORD_TYPES: dict[str, str] = {
    "int32": "int",
    "uint32": "unsigned int",
    "int64": "long long",
    "uint64": "unsigned long long",
}

# numpy dtype name ("bfloat16" from ml_dtypes / torch) -> storage struct in hadamard.cu.
FWHT_TYPES: dict[str, str] = {"float32": "float", "float16": "ord_f16", "bfloat16": "ord_bf16"}
FWHT_MAX_LOG_N = 15
# (input, output) storage pairs of the fwht instances: same type, or float32 on one side
# (float32 intermediates of multi-round rotations and of the K * 2^k path).
FWHT_PAIRS: list[tuple[str, str]] = [
    ("float", "float"),
    ("ord_f16", "ord_f16"),
    ("ord_bf16", "ord_bf16"),
    ("ord_f16", "float"),
    ("ord_bf16", "float"),
    ("float", "ord_f16"),
    ("float", "ord_bf16"),
]


def fwht_name(in_c: str, out_c: str, log_n: int) -> str:
    return f"fwht<{in_c}, {out_c}, {log_n}>"


def all_names() -> dict[str, list[str]]:
    sfc: list[str] = []
    for c in SFC_COORD_TYPES.values():
        for ds in (2, 3, 0):
            sfc.append(f"hilbert_encode<{c}, {ds}>")
            sfc.append(f"morton_encode<{c}, {ds}>")
    for ds in (2, 3, 0):
        sfc.append(f"hilbert_decode<{ds}>")
        sfc.append(f"morton_decode<{ds}>")
    had: list[str] = []
    for in_c, out_c in FWHT_PAIRS:
        for log_n in range(FWHT_MAX_LOG_N + 1):
            had.append(fwht_name(in_c, out_c, log_n))
    for c in FWHT_TYPES.values():
        had.append(f"hadamard_kmix<{c}>")
    had += ["random_signs", "counter_u64_kernel"]
    ann = [
        "ann_code_distances",
        "ann_code_distance_rows",
        "ann_code_topk",
        "ann_rerank",
        "ann_normalize",
        "ann_encode",
    ]
    return {"ann": ann, "hadamard": had, "sfc": sfc}


def fwht_geometry(log_n: int) -> tuple[int, int, int]:
    """``(threads per block, rows per block, dynamic shared bytes)`` of the fwht instance
    for ``n = 2^log_n``; mirrors ``FwhtCfg`` in hadamard.cu."""
    log_e = log_n if log_n <= 4 else max(log_n - 10, 4)
    log_tr = log_n - log_e
    tr = 1 << log_tr
    log_warp = log_tr - min(log_tr, 5)
    block = max(tr, 128)
    smem = 4 * (1 << log_n) if log_warp > 0 else 0
    return block, block // tr, smem
