"""The test folders are not packages, so pytest imports each test file by its base name:
two files with one name in different folders make the whole suite fail to collect
("import file mismatch").  This keeps the names distinct."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    shared = sorted(name for name, count in names.items() if count > 1)
    assert not shared, f"rename one of each: {shared}"
