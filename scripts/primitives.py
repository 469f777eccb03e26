"""Write ``docs/primitives.md``, the reference of every schedule primitive, from the
registry (:mod:`polyopt.transform.reference`).

``python3 scripts/primitives.py`` after adding or changing a registration;
``tests/transform/test_registry.py`` checks that the file is up to date.
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "primitives.md"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    import polyopt  # noqa: F401 (registers every layer's primitives, e.g. tensorize)
    from polyopt.transform.reference import write_primitives_reference
    print(write_primitives_reference(REFERENCE))


if __name__ == "__main__":
    main()
