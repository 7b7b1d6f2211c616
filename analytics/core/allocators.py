"""Tell the process's two allocators to hand freed memory back: peak RSS is a target.

A cold run holds a group's events for a moment and then drops them, group after group
(``pipeline``). Two allocators serve it, and by default each keeps what it freed:

* polars' jemalloc gives every thread an arena of its own, of which a 2-core machine gets
  8. Two groups are analysed on two worker threads, then the results are combined, priced
  and written on the main thread. Each arena kept pages the others could not reuse.
  One arena (``narenas:1``) lets the end of the run reuse what the groups freed.
* jemalloc gives a page freed back in two steps: polars' options make it "dirty" for
  500 ms, then "muzzy" (``MADV_FREE``) for 1 s more, and a muzzy page still counts as
  resident until the kernel needs it. Muzzy pages are purged at once
  (``muzzy_decay_ms:0``), so what a stage freed leaves RSS half a second after, not 1.5 s
  (the pricing's temporaries were still resident while the 1 GB pi tree's report was
  rendered: its peak, 685 MB, fell to 645). Dirty pages keep their decay: purging those
  at once cost ~5 s of system time on 1 GB (reverted in 629e598).
* glibc's malloc serves the native scanner's buffers. Its mmap threshold rises each
  time a large block is freed, so later buffers come from the heap and stay resident.
  A fixed 128 KiB threshold (``M_MMAP_THRESHOLD``) maps large buffers and unmaps them
  on free. The scanner's event columns are the exception: their memory goes back to a
  bounded pool of the scanner's own (``native/read/table.rs``, ``Pool``), from which
  the next group's columns are built without a page fault per 4 KB, and which the
  pipeline frees once its scans are done (``_scanner.release_buffers``).

On the 1 GB benchmark tree, cold, with two workers, this took the peak from 323-338 MB
to 282-294 MB. The wall time stayed within the machine's noise.

``tune`` must run before polars is imported, since jemalloc reads its options once, on
its first allocation. Options already in ``_RJEM_MALLOC_CONF`` are kept, and a count of
arenas given there wins. Other options there do not stop ours: a parent process that
imported polars (a benchmark harness, a notebook's shell command) passes polars' own
options on in that variable. Where
glibc is absent (macOS, musl), only the jemalloc option applies.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable

#: jemalloc options. polars puts its own decay times in front of them, in the same variable,
#: when it is imported.
JEMALLOC_OPTIONS = "narenas:1,muzzy_decay_ms:0"
#: glibc's ``mallopt`` parameter number for the mmap threshold, and the threshold.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024


def tune() -> None:
    """Set both allocators' options (and numpy's BLAS threads) for this process (a no-op
    once polars is loaded)."""
    if "polars" in sys.modules:
        return
    given = os.environ.get("_RJEM_MALLOC_CONF", "")
    if "narenas" not in given:  # a parent that imported polars passes its own options on
        os.environ["_RJEM_MALLOC_CONF"] = (
            f"{given},{JEMALLOC_OPTIONS}" if given else JEMALLOC_OPTIONS
        )
    # numpy, where a command still loads it (plotly, Spark), starts one BLAS thread per core
    # that spins a moment after each call; agentcost does no linear algebra.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # none that has mallopt
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def release() -> None:
    """Hand the free pages inside glibc's heap back to the system (``malloc_trim``), after a
    stage that freed many small blocks: the native fold's rows and the walk's and the result
    cache's Python objects. The heap shrinks only from its top, so without this what they
    freed stays resident under the blocks still in use (on the 1 GB pi tree, 40 MB after the
    fold and some 100 MB after loading a stored analysis). Costs a walk of the heap's free
    lists (milliseconds). A no-op where glibc is absent."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # a C library without it (musl)
        return None
    return trim
