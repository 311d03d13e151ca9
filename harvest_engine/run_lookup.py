"""Which run a command names: an exec id as given, or a workflow id's RUNNING run, else its newest.

One rule for every command that takes a run (the client's, the CLI's): a
business workflow id stands for the run of that id that is RUNNING now, or,
when none is, the one started last. Any reader of runs answers it (a
store, a SqliteReader, a PostgresReader: anything with `list_executions`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from harvest_engine.calls import check_workflow_id
from harvest_engine.errors import ExecutionNotFound, HarvestError, WorkflowIdNotFound
from harvest_engine.filters import ExecutionFilter

if TYPE_CHECKING:
    from harvest_engine.states import ExecutionId
    from harvest_engine.store.records import ExecutionPage


class RunLister(Protocol):
    """What the lookup needs: a listing of runs, newest first."""

    def list_executions(self, flt: ExecutionFilter, /) -> ExecutionPage:
        """One page of runs matching `flt`, newest first."""
        ...


def run_of(
    lister: RunLister,
    exec_id: str | ExecutionId | None,
    workflow_id: str | None,
) -> str:
    """The exec id a command names, by its exec id or by `workflow_id` (exactly one of them).

    Raises:
        TypeError: neither or both were given.
        InvalidName, BlankWorkflowId: a workflow id no run could have.
        WorkflowIdNotFound: no run has this workflow id.
        ExecutionNotFound: a blank exec id.
    """
    if workflow_id is None:
        if exec_id is None:
            raise TypeError("name a run: give its exec id, or workflow_id=")
        text = str(exec_id).strip()
        if not text:
            raise ExecutionNotFound(exec_id=str(exec_id))
        return text
    if exec_id is not None:
        raise TypeError("name a run by its exec id or by workflow_id=, not both")
    wid = check_workflow_id(workflow_id)
    for flt in (
        ExecutionFilter().workflow_id(wid).state("RUNNING").limit(1),
        ExecutionFilter().workflow_id(wid).limit(1),
    ):
        found = lister.list_executions(flt).executions
        if found:
            return str(found[0].exec_id)
    raise WorkflowIdNotFound(workflow_name=None, workflow_id=wid)


def workflow_id_exists(lister: RunLister, workflow_id: str) -> bool:
    """Whether some run has this workflow id (for a hint when an exec id is not found)."""
    try:
        run_of(lister, None, workflow_id)
    except HarvestError:
        return False
    return True
