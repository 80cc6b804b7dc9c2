"""hugebench: how much would huge pages and a better malloc buy my workload, on this machine?"""

from __future__ import annotations

__version__ = "0.1.0"


def load(*paths):
    """Load one or more results directories (or runs files) into one pandas DataFrame."""
    from hugebench.store import load as _load

    return _load(*paths)


__all__ = ["__version__", "load"]
