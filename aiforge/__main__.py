"""``python -m aiforge``: the command line (see ``aiforge.cli``)."""

import sys

from aiforge.cli import main

sys.exit(main())
