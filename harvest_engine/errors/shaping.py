"""Errors of the start-shaping and breaker options: a bad declared value, an open breaker."""

from __future__ import annotations

from harvest_engine.errors.base import SqliteError


class InvalidFlowOption(SqliteError, ValueError):
    """A declared debounce, batch, input cap or circuit breaker with a bad value.

    Raised when the value is built (`Batch(0, ...)`) or at registration
    (`debounce=0`, `max_input_bytes` over the ceiling); nothing is written
    and nothing is registered. A `ValueError` too.
    """

    _template = "{owner}: {option} {why}"

    def __init__(self, *, owner: str, option: str, why: str) -> None:
        super().__init__(owner=owner, option=option, why=why)


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
