"""``python -m polyopt ...``: the ``polyopt`` command (as ``python -m polyopt.cli``)."""

import sys

if __name__ == "__main__":
    from .cli import main

    sys.exit(main())
