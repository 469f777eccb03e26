"""``python -m polyopt.cli ...``: the ``polyopt`` command."""

import sys

from . import main

sys.exit(main())
