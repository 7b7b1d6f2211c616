"""The core, after CALLS: contracts, pricing, periods, attribution, budgets and the team
dataset. Agent-agnostic: nothing here imports an agent module (``tests/house/test_layout.py``)."""
