"""Writing and reading the headers stored with starts, activities and signals (interceptors).

Each write stores the headers the call in progress carries
(`interceptors.carried()`) in the same transaction as the row they travel
with; with none carried nothing is written, so a runtime without
interceptors never touches the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine import payloads
from harvest_engine.interceptors import ACTIVITY, START, carried

if TYPE_CHECKING:
    from harvest_engine.runtime.header_memory import HeaderMemory
    from harvest_engine.store.txn_protocol import WriteTxn


def store_start(txn: WriteTxn, exec_id: str) -> None:
    """Store the carried headers with a run just inserted."""
    headers = carried()
    if headers:
        txn.put_headers(exec_id, START, "", payloads.dumps(headers))


def store_activity(
    txn: WriteTxn, exec_id: str, activity_id: int, memory: HeaderMemory
) -> None:
    """Store the carried headers with an activity just scheduled (and remember them)."""
    headers = carried()
    if headers is None:
        return  # no hook ran: the attempt's hooks (if any) read the store
    if headers:
        txn.put_headers(exec_id, ACTIVITY, str(activity_id), payloads.dumps(headers))
    memory.scheduled(exec_id, activity_id, headers)


def signal_text() -> str | None:
    """The carried headers as `stage_signal` stores them with the signal's row; None for none."""
    headers = carried()
    return payloads.dumps(headers) if headers else None


def stored_headers(text: str | None) -> dict[str, str]:
    """Headers as a row holds them (JSON text); {} for none or a damaged row."""
    if not text:
        return {}
    try:
        value = payloads.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}
