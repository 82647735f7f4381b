"""ordcore.ann (being written; see the README)."""
