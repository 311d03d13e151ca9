"""The Qt binding keeps CPython's reference counts: PySide6 6.12.0 on 3.11 did not."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QObject, Signal

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 12),
    reason="None, True and False are immortal from Python 3.12",
)

CALLS = 5000


class _Emitter(QObject):
    fired = Signal()


def test_signals_and_slots_do_not_drop_references_to_singletons() -> None:
    # 6.12.0 lost one reference per emit/slot call; a few thousand calls then freed
    # True or None and aborted the interpreter ("bool_dealloc" / "none_dealloc").
    emitter = _Emitter()
    hits: list[int] = []
    emitter.fired.connect(lambda: hits.append(1))
    before = {
        name: sys.getrefcount(obj) for name, obj in (("None", None), ("True", True))
    }
    for _ in range(CALLS):
        emitter.fired.emit()
    after = {
        name: sys.getrefcount(obj) for name, obj in (("None", None), ("True", True))
    }
    assert len(hits) == CALLS
    for name in before:
        assert abs(after[name] - before[name]) < CALLS // 10, (
            name,
            before[name],
            after[name],
        )
