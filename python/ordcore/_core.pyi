# Hand-written stub of the Rust extension ordcore._core; checked by `python -m mypy.stubtest`.
# One section per area, in the order of rust/ordcore-py/src/lib.rs.

__version__: str

def _in_forked_child() -> bool: ...

# --- sfc ---

# --- hadamard ---

# --- packing ---

# --- ann ---
