"""The core's item kinds (``core.items``) are the native folds' (``native/fold/kind.rs``)."""

from __future__ import annotations

import re

from analytics.core import items as kinds
from tests.conftest import REPO


def test_the_native_folds_write_the_cores_kinds() -> None:
    text = (REPO / "native" / "fold" / "kind.rs").read_text()
    native = dict(re.findall(r'pub const (\w+): &str = "(\w+)";', text))
    assert native, "no kind in kind.rs"
    assert all(getattr(kinds, name) == value for name, value in native.items())


def test_every_labelled_kind_is_a_kind() -> None:
    assert set(kinds.CONTEXT_LABELS) <= set(kinds.KINDS)
    assert len(set(kinds.KINDS)) == len(kinds.KINDS)
