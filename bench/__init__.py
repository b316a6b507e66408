"""Benchmarks: each script prints a table (see the README's performance section)."""
