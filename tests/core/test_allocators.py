"""``allocators.tune``: jemalloc's option is set before polars loads (polars adds its own in
front, in the same variable), a user's own value is kept, and once polars is loaded nothing
changes (jemalloc has read its options by then)."""

from __future__ import annotations

import os

import pytest

from analytics.core import allocators
from tests.conftest import python_prints

_PROBE = (
    "import os, sys\n"
    "from analytics.core.allocators import tune\n"
    "tune()\n"
    "import polars as pl\n"
    "assert pl.DataFrame({'a': [1, 2]})['a'].sum() == 3\n"
    "print(os.environ.get('_RJEM_MALLOC_CONF'))\n"
)


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    return python_prints(_PROBE, clean | env)


def test_tune_sets_the_jemalloc_option_before_polars_loads() -> None:
    # polars puts its own options first, in the same variable
    assert _probe().endswith(f",{allocators.JEMALLOC_OPTIONS}")


def test_tune_keeps_a_count_of_arenas_the_user_gave() -> None:
    assert _probe(_RJEM_MALLOC_CONF="narenas:4").endswith(",narenas:4")


def test_tune_adds_to_options_a_parent_passed_on() -> None:
    """A parent that imported polars leaves its decay options in the variable."""
    value = _probe(_RJEM_MALLOC_CONF="dirty_decay_ms:500,muzzy_decay_ms:1000")
    assert value.endswith(f",dirty_decay_ms:500,muzzy_decay_ms:1000,{allocators.JEMALLOC_OPTIONS}")


def test_tune_changes_nothing_once_polars_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import polars  # noqa: F401  (loaded, as in this test process)

    monkeypatch.delenv("_RJEM_MALLOC_CONF", raising=False)
    allocators.tune()
    assert "_RJEM_MALLOC_CONF" not in os.environ


def test_the_console_script_tunes_before_any_command() -> None:
    """``agentcost`` runs ``tune`` first: its polars then starts with one arena."""
    script = (
        "import os, sys\n"
        "from analytics.cli import commands as cli\n"
        "sys.argv = ['agentcost', '--help']\n"
        "cli.app = lambda **_: print(\n"
        "    os.environ.get('_RJEM_MALLOC_CONF'), 'polars' in sys.modules)\n"
        "cli.main()\n"
    )
    clean = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    assert python_prints(script, clean).split() == [allocators.JEMALLOC_OPTIONS, "False"]


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_tune_keeps_numpy_to_one_blas_thread_unless_told(given: str | None, expected: str) -> None:
    """numpy, where a command loads it, starts one spinning BLAS thread per core; ``tune``
    asks for one, and a value the user set wins."""
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env = clean if given is None else clean | {"OPENBLAS_NUM_THREADS": given}
    probe = (
        "import os\n"
        "from analytics.core.allocators import tune\n"
        "tune()\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    assert python_prints(probe, env) == expected


def test_release_trims_the_heap_and_never_fails() -> None:
    """``release``: after many small blocks are freed, glibc's free pages go back (where the
    C library has ``malloc_trim``); a no-op elsewhere, safe to call at any time."""
    blocks = [bytes(1000) for _ in range(20_000)]
    del blocks
    assert allocators.release() is None
    assert allocators.release() is None
