"""ordcore.hadamard (being written; see the README)."""
