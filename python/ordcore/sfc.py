"""ordcore.sfc (being written; see the README)."""
