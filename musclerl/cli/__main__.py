"""``python -m musclerl.cli ...``: the same as the ``musclerl`` command (and ``python -m musclerl``)."""

import sys

from musclerl.cli import main

sys.exit(main())
