"""The roots every harvest error derives from, and how errors pickle.

`HarvestError` builds its message from keyword-only structured fields and
rebuilds from them across processes; `SqliteError` is the branch for
everything the store and the runtime raise; `HarvestInternalError` is a bug.
The families (storage, inputs, runs, handlers, workflow code) live beside it.
"""

from __future__ import annotations

from typing import Any

from harvest_engine.states import ExecutionId


class HarvestError(Exception):
    """Root of every error the engine raises.

    Subclasses declare their structured fields as keyword-only constructor
    arguments and a ``_template`` that formats them into the message.
    """

    _template = "{message}"

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        self._fields = dict(fields)
        for key, value in fields.items():
            setattr(self, key, value)
        if message is None:
            message = self._template.format(**fields)
        self.message = message
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (crash demo, e2e tests): rebuild
        # from the message and the structured fields.
        return (_rebuild, (type(self), self.message, self._fields))

    def __str__(self) -> str:
        return self.message


def _rebuild(
    cls: type[HarvestError], message: str, fields: dict[str, Any]
) -> HarvestError:
    err = cls.__new__(cls)
    if "exec_id" in fields:  # JSON from another process carries the id as text
        fields = {**fields, "exec_id": _run_id(fields["exec_id"])}
    HarvestError.__init__(err, message, **fields)
    return err


def _run_id(value: Any) -> Any:
    """An error's id field: the `ExecutionId` passed or found, parsed from its text.

    So ``err.exec_id == exec_id`` holds for the id a caller has in hand.
    A value that is no id at all (blank text, a number) is kept as given.
    """
    if isinstance(value, ExecutionId):
        return value
    if isinstance(value, str) and value.strip():
        return ExecutionId.parse(value)
    return value


class HarvestInternalError(HarvestError):
    """A broken invariant inside harvest: a bug to report, never user error."""

    _template = "internal error (please report): {detail}"

    def __init__(self, detail: str) -> None:
        super().__init__(detail=detail)


class SqliteError(HarvestError):
    """Everything the store and the runtime raise."""
