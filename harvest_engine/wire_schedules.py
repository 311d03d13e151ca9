"""The client's schedule commands as `wire` records: upsert, pause, resume, delete, trigger, backfill."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harvest_engine.states import ExecutionId
from harvest_engine.wire_base import Command


@dataclass(frozen=True)
class UpsertSchedule(Command):
    """`upsert_schedule`, the WorkflowSchedule spread into fields (its spec as JSON).

    The reply carries nothing: the client reads the stored row back.
    """

    KIND = "upsert_schedule"
    workflow_name: str
    schedule: dict[str, Any]
    input: Any = None
    max_active_runs: int = 1
    overlap: str = "skip"

    @staticmethod
    def encode_result(value: Any) -> Any:
        """Nothing: the stored row is read back by the client."""
        del value


@dataclass(frozen=True)
class PauseSchedule(Command):
    """`pause_schedule`: False when there is no such schedule."""

    KIND = "pause_schedule"
    workflow_name: str


@dataclass(frozen=True)
class ResumeSchedule(Command):
    """`resume_schedule`: False when there is no such schedule."""

    KIND = "resume_schedule"
    workflow_name: str


@dataclass(frozen=True)
class DeleteSchedule(Command):
    """`delete_schedule`: False when there was none."""

    KIND = "delete_schedule"
    workflow_name: str


@dataclass(frozen=True)
class TriggerSchedule(Command):
    """`trigger_schedule`: the new run's id, or None when its overlap policy skips."""

    KIND = "trigger_schedule"
    workflow_name: str

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The id as text, or None."""
        return None if value is None else str(value)

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The id back, or None."""
        return None if data is None else ExecutionId(data)


@dataclass(frozen=True)
class BackfillSchedule(Command):
    """`backfill_schedule` over [start, end] (ISO texts, aware): the started runs' ids."""

    KIND = "backfill_schedule"
    workflow_name: str
    start: str
    end: str

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The ids as texts."""
        return [str(exec_id) for exec_id in value]

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The ids back."""
        return [ExecutionId(text) for text in data]
