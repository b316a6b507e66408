"""Benchmarks: each script prints a table (see docs/contributing/benchmarks.md)."""
