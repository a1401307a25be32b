"""Benchmarks: run by ``make bench``; measurements written to docs/, never timed assertions."""
