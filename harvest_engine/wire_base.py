"""The base of every client command record (`wire`): its arguments as JSON, its result across."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from harvest_engine.calls import StartOutcome
from harvest_engine.states import ExecutionId


@dataclass(frozen=True)
class Command:
    """A client command: its fields are its JSON arguments; the result is plain JSON."""

    KIND: ClassVar[str]

    def args(self) -> dict[str, Any]:
        """The arguments as the JSON object a command row holds."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The runtime's return value as JSON."""
        return value

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The JSON result back as the value an in-process call returns."""
        return data


class ReturnsExecId(Command):
    """A command whose result is a run's id."""

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The id as text."""
        return str(value)

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The id back."""
        return ExecutionId(data)


class ReturnsStartOutcome(Command):
    """A command whose result is a StartOutcome."""

    @staticmethod
    def encode_result(value: Any) -> Any:
        """The outcome as JSON."""
        return {"exec_id": str(value.exec_id), "started_fresh": value.started_fresh}

    @staticmethod
    def decode_result(data: Any) -> Any:
        """The outcome back."""
        return StartOutcome(ExecutionId(data["exec_id"]), data["started_fresh"])
