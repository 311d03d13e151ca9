"""The inspector's reset points are the events the engine's `rt.reset(to_event=)` accepts."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from harvest_engine import InvalidResetPoint, SqliteRuntime, reset_points
from harvest_gui.inspect.reset_points import point_text
from tests.gui.helpers import stamp, three_steps, waits_for_go

if TYPE_CHECKING:
    from pathlib import Path


def test_the_points_the_slider_offers_are_the_ones_the_engine_accepts(
    tmp_path: Path,
) -> None:
    with SqliteRuntime.open(tmp_path / "runs.db") as rt:
        rt.register_workflow(three_steps)
        rt.register_workflow(waits_for_go)
        rt.register_activity(stamp)
        done = str(rt.start_workflow_with_id("three_steps", "wf-steps", None))
        waiting = str(rt.start_workflow_with_id("waits_for_go", "wf-wait", None))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(rt.run_until_idle())
        finally:
            loop.close()
        events = rt.load_history(done)
        offered = reset_points(events)
        assert offered == [1, 3, 5, 7]
        accepted = []
        for event in events:
            try:
                rt.reset(done, to_event=event.seq, reason="probe")
            except InvalidResetPoint:
                continue
            accepted.append(event.seq)
        assert accepted == offered
        # A run with nothing but its start was never decided: no point at all.
        assert reset_points(rt.load_history(waiting)) == []
        assert point_text(rt.load_history(waiting), 1) == (
            False,
            "This run was never decided: there is no event to reset it to.",
        )
