"""ShapingTxn: the held-start and circuit-breaker operations of a write transaction (issue 26).

Part of `WriteTxn` (txn_protocol.py): debounced and batched starts wait in
held rows until their window closes, and each activity's breaker is read and
written in the transaction that records its attempt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from harvest_engine.store.sql.shaping import BreakerRow, HeldRow


class ShapingTxn(Protocol):
    """Held starts and circuit breakers, inside one write transaction."""

    def held_start(self, workflow_name: str, workflow_id: str) -> HeldRow | None:
        """The held start of a key, locked for this transaction."""
        ...

    def hold_start(self, held: HeldRow) -> bool:
        """Insert a held start; False when the key already has one."""
        ...

    def update_held(self, held: HeldRow) -> None:
        """Write a held start's due time, counts, last input, memo and attributes."""
        ...

    def add_held_input(
        self, exec_id: str, position: int, input: str, at: datetime
    ) -> None:
        """Append one batch input."""
        ...

    def held_inputs(self, exec_id: str) -> list[str]:
        """A batch's inputs in arrival order."""
        ...

    def drop_held(self, exec_id: str) -> None:
        """Forget a held start and its inputs."""
        ...

    def breaker(self, activity: str) -> BreakerRow:
        """An activity's breaker, made if missing and locked for this transaction."""
        ...

    def put_breaker(self, row: BreakerRow) -> None:
        """Write an activity's breaker."""
        ...
