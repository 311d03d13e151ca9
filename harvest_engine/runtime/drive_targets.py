"""Driving the runs a parked run waits on, in the same `run_until_blocked` call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.errors import HarvestError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime

    from harvest_engine.runtime.runtime import SqliteRuntime


async def drive_targets(
    rt: SqliteRuntime,
    targets: Sequence[str],
    now: Callable[[], datetime],
    visiting: frozenset[str],
) -> bool:
    """Drive each waited-on run to its own stopping point; True if one of them ended.

    An error from a target returns from the call, unless that target is now
    terminal (a rejected child was sealed FAILED): the waiter then records
    the typed failure on its next cycle. A run already being driven up the
    chain is skipped, so two runs that wait on each other cannot loop.
    """
    ended = False
    for target in targets:
        if target in visiting:
            continue
        try:
            state = await rt._run_until_blocked(target, now, visiting)
        except HarvestError:
            row = rt.store.execution(target)
            if row is None or row.state == "RUNNING":
                raise
            ended = True
            continue
        ended = ended or state.is_terminal
    return ended
