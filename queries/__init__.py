"""Database reads below every app: the hot reads whose SQL is compiled once per process."""

from queries.prepared import Prepared

__all__ = ["Prepared"]
