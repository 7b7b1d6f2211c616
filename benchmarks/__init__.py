"""Benchmarks of agentcost against ccusage; run ``python -m benchmarks.run`` (``make bench``)."""
