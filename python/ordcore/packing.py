"""ordcore.packing (being written; see the README)."""
