"""Benchmarks that print figures: ``python -m bench`` runs every ``bench_*.py`` in turn."""
