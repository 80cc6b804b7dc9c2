"""Where the test suite's files are, for tests in any room of tests/ (laid out like the package)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # tests/: data/, the shared helpers, conftest.py
ROOT = TESTS.parent  # the repository: experiments/, benchmarks/, docs/, notebooks/
DATA = TESTS / "data"
