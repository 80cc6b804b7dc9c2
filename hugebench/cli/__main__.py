"""``python -m hugebench.cli ...``: the same as the ``hugebench`` script."""

from hugebench.cli import main

main()
