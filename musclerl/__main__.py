"""``python -m musclerl ...``: the same as the ``musclerl`` command."""

import sys

from musclerl.cli import main

sys.exit(main())
