"""RunInfo: the facts `ctx.info()` reports about a run.

A plain frozen record, shared by the instance that carries it, the
replayer that builds one from a history and the runtime that builds one
from a run's row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class RunInfo:
    """What `ctx.info()` reports about the run."""

    workflow_name: str
    workflow_id: str
    exec_id: str
    attempt: int
    parent_execution_id: str | None = None
    started_at: datetime | None = None
    deadline: datetime | None = None
    predecessor: str | None = None
