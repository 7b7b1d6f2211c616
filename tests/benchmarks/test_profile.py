"""The profile ``make bench`` ends its Copilot run with wraps stage functions by name: each
must still exist where it is named, or the whole run's measurements are lost at its end."""

from __future__ import annotations

from benchmarks import profile


def test_every_stage_the_profile_wraps_exists() -> None:
    missing = [
        f"{owner.__name__}.{name}" for owner, name in profile._STAGES if not hasattr(owner, name)
    ]
    assert missing == []
