"""The run row's memo, kept in step with the MemoUpserted events its code records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_engine import payloads
from harvest_engine.workflow.run_metadata import merge_memo

if TYPE_CHECKING:
    from collections.abc import Mapping

    from harvest_engine.store.txn_protocol import WriteTxn


def project_memo(txn: WriteTxn, exec_id: str, patch: Mapping[str, Any]) -> None:
    """Merge a recorded memo patch into the row (None removes a key), in the decision's txn.

    The row is read inside the transaction, so several upserts of one
    decision each see the one before.
    """
    row = txn.execution(exec_id)
    if row is None:
        return
    current = payloads.loads(row.memo) if row.memo else None
    merged = merge_memo(current, patch)
    txn.update_execution(exec_id, memo=payloads.dumps(merged) if merged else None)
