"""``python -m ordcore``: the command line (see :mod:`ordcore.cli`)."""

import sys

from ordcore.cli import main

sys.exit(main())
