"""``python -m ordcore ...``: see :mod:`ordcore.cli`."""

from __future__ import annotations

import sys

from ordcore.cli import main

if __name__ == "__main__":
    sys.exit(main())
