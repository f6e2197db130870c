"""``python -m aiforge.cli``: the command line, as ``python -m aiforge`` (see ``aiforge.cli``)."""

import sys

from aiforge.cli import main

sys.exit(main())
