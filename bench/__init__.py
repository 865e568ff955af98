"""Postrun's benchmarks (issue 5): ``python -m bench`` (see ``bench/run.py``)."""
