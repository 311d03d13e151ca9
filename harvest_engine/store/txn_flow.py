"""FlowTxn: what flow control's admission writes of the runs it lets in (issue 26).

Part of `WriteTxn` (txn_protocol.py): the admission (runtime/flow/admission.py)
locks the runs it picked, then flips them in the same transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


class FlowTxn(Protocol):
    """Admitted runs, inside one write transaction."""

    def admit_runs(self, admitted: Sequence[tuple[str, datetime | None]]) -> None:
        """Flip admitted (locked) ENQUEUED runs RUNNING, due for a decision, with their deadlines.

        One statement for the batch where a statement is a round trip's
        worth of work (Postgres); one update a run elsewhere.
        """
        ...
