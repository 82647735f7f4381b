"""Plain-text formatting shared by the command line and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["table", "fmt_bytes"]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A right-aligned text table: a header line, a rule, one line per row."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def fmt_bytes(n: float) -> str:
    """``n`` bytes as ``"12 B"``, ``"3.4 KiB"``, ... ``"5.6 GiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")
