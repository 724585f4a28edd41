"""Benchmarks (benchmarks/RESULTS.md)."""
