"""The status line's words for a RunState (harvest_gui.driving.state_text)."""

from __future__ import annotations

from harvest_engine import RunState
from harvest_gui.driving import state_text


def test_a_wait_on_one_signal_names_it() -> None:
    assert state_text(RunState.WaitingSignal(name="go")) == "waiting for signal 'go'"


def test_a_wait_any_of_several_handlers_can_end_names_them_all() -> None:
    state = RunState.WaitingSignal(name="approve", names=("approve", "reject"))
    assert state_text(state) == "waiting for a signal: 'approve', 'reject'"
