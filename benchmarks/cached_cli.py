"""``agentcost`` with the parse cache on, for benchmarks while the CLI does not cache.

``benchmarks.run`` uses this only when ``agentcost analyze --help`` has no ``--no-cache`` (the
option that comes with caching by default); otherwise it runs ``agentcost`` itself.
"""

from __future__ import annotations

import functools

from analytics import analysis
from analytics.cli import main

analysis.analyze = functools.partial(analysis.analyze, use_cache=True)

if __name__ == "__main__":
    main()
