"""The kernel instantiations each wrapper may launch (one list per ``.cu`` module)."""

from __future__ import annotations

__all__ = ["SFC_COORD_TYPES", "FWHT_TYPES", "FWHT_MAX_LOG_N", "all_names", "fwht_name"]

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
    for c in FWHT_TYPES.values():
        outs = {c, "float"}
        for out in sorted(outs):
            for log_n in range(1, FWHT_MAX_LOG_N + 1):
                had.append(fwht_name(c, out, log_n))
        had.append(f"hadamard_kmix<{c}>")
    had += ["random_signs", "counter_u64_kernel"]
    ann = [
        "ann_code_distances",
        "ann_rerank",
        "ann_encode<float>",
        "ann_encode<double>",
    ]
    return {"ann": ann, "hadamard": had, "sfc": sfc}
