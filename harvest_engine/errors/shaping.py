"""The error an open circuit breaker records (a bad breaker value is `errors.flow.InvalidFlowOption`)."""

from __future__ import annotations

from harvest_engine.errors.base import SqliteError


class CircuitOpen(SqliteError):
    """An attempt refused by its activity's open circuit breaker; the body did not run.

    Never raised to a caller: it is the recorded error type (``"CircuitOpen"``)
    of such an attempt, which is retryable and follows the retry policy, so
    ``CircuitOpen.__name__`` can be listed in `non_retryable_error_types` to
    give up at once instead.
    """

    _template = "activity {activity!r}: circuit open until {until}"

    def __init__(self, *, activity: str, until: str) -> None:
        super().__init__(activity=activity, until=until)
