r"""The workflow-id reuse-policy matrix: what a start does about the runs of its id.

The matrix. The prior is the newest run of the
(workflow_name, workflow_id) key; a RUNNING run of the key wins over it.

| prior \ policy | ALLOW_DUPLICATE | ALLOW_DUPLICATE_FAILED_ONLY | REJECT_DUPLICATE | TERMINATE_IF_RUNNING |
| --- | --- | --- | --- | --- |
| none | fresh | fresh | fresh | fresh |
| RUNNING | attach | attach | refused | replace |
| COMPLETED | fresh | refused | refused | fresh |
| FAILED, TIMED_OUT | fresh | fresh | refused | fresh |
| CANCELLED | fresh | fresh | refused | fresh |
| TERMINATED | fresh | fresh | fresh | fresh |

- *attach*: the call returns the RUNNING run (`started_fresh=False`); the new
  input, memo and search attributes are discarded, so a retried webhook does
  not repeat side effects.
- *refused*: `WorkflowAlreadyStarted`, carrying the prior's exec id; nothing
  is written.
- *replace*: in one transaction every RUNNING run of the key gets
  `WorkflowCancelled` and is sealed CONTINUED_AS_NEW with the fresh run as
  its successor (so `outcome(prior)` is `Terminated("CONTINUED_AS_NEW")`),
  then the fresh run starts.
- A TERMINATED prior frees its workflow id for every policy.
- A blank or whitespace-only workflow id has no reuse key: always a fresh run.

Signal-with-start (see `signal_with_start.py`) differs for a prior that is not
RUNNING: a RUNNING run with a pending cancel counts as CANCELLED, and a start
over a closed prior seals that prior CONTINUED_AS_NEW as well.

The checks before anything persists are in `harvest_engine/calls.py`; the writes and
the start calls, `start_calls.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harvest_engine.calls import WorkflowIdReusePolicy
from harvest_engine.store.rows import ExecutionRecord

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime


@dataclass(frozen=True)
class StartPlan:
    """The matrix's answer for one start.

    Attributes:
        action: "fresh", "attach" or "refuse".
        prior: the run the answer is about (attached to, refusing, or replaced).
        replace: RUNNING runs to seal CONTINUED_AS_NEW before the fresh run starts.
        reseal: a closed prior to mark CONTINUED_AS_NEW (signal-with-start only).
    """

    action: str
    prior: ExecutionRecord | None = None
    replace: tuple[ExecutionRecord, ...] = ()
    reseal: ExecutionRecord | None = None


_FREES_THE_ID = frozenset({"TERMINATED", "CONTINUED_AS_NEW"})
_LIVE = frozenset({"RUNNING", "ENQUEUED"})


def plan_start(
    runs: Sequence[ExecutionRecord], policy: WorkflowIdReusePolicy
) -> StartPlan:
    """Apply the plain start matrix to the runs of a key (newest first).

    A run waiting in its queue (ENQUEUED) is live as a RUNNING one is.
    """
    running = tuple(r for r in runs if r.state in _LIVE)
    if running:
        if policy is WorkflowIdReusePolicy.TERMINATE_IF_RUNNING:
            return StartPlan("fresh", prior=running[0], replace=running)
        if policy is WorkflowIdReusePolicy.REJECT_DUPLICATE:
            return StartPlan("refuse", prior=running[0])
        return StartPlan("attach", prior=running[0])
    prior = runs[0] if runs else None
    if prior is None or prior.state in _FREES_THE_ID:
        return StartPlan("fresh", prior=prior)
    return _closed_prior(prior, prior.state, policy)


def _closed_prior(
    prior: ExecutionRecord, state: str, policy: WorkflowIdReusePolicy
) -> StartPlan:
    """The matrix row of a closed prior that did not free its id."""
    if policy is WorkflowIdReusePolicy.REJECT_DUPLICATE:
        return StartPlan("refuse", prior=prior)
    if (
        policy is WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY
        and state == "COMPLETED"
    ):
        return StartPlan("refuse", prior=prior)
    return StartPlan("fresh", prior=prior)


def plan_signal_with_start(
    runs: Sequence[ExecutionRecord], policy: WorkflowIdReusePolicy, now: datetime
) -> StartPlan:
    """The signal-with-start matrix: a signal cannot land on a run about to end.

    A RUNNING run without a pending cancel is signalled (attach), unless the
    policy is TERMINATE_IF_RUNNING, which replaces it. A RUNNING run with a
    pending cancel counts as CANCELLED, and one past its execution deadline
    as TIMED_OUT: its next drive ends it. A fresh start replaces every
    RUNNING run of the key and reseals a closed prior CONTINUED_AS_NEW; a
    TERMINATED prior frees the id and stays as it is.
    """
    running = tuple(r for r in runs if r.state == "RUNNING")
    live = [r for r in running if _can_take_signals(r, now)]
    if live:
        if policy is WorkflowIdReusePolicy.TERMINATE_IF_RUNNING:
            return StartPlan("fresh", prior=live[0], replace=running)
        return StartPlan("attach", prior=live[0])
    prior = runs[0] if runs else None
    if prior is None or prior.state in _FREES_THE_ID:
        return StartPlan("fresh", prior=prior, replace=running)
    state = prior.state
    if state == "RUNNING":
        state = "CANCELLED" if prior.cancel_reason is not None else "TIMED_OUT"
    plan = _closed_prior(prior, state, policy)
    if plan.action != "fresh":
        return plan
    reseal = None if prior.state == "RUNNING" else prior
    return StartPlan("fresh", prior=prior, replace=running, reseal=reseal)


def _can_take_signals(row: ExecutionRecord, now: datetime) -> bool:
    """A RUNNING run whose next drive does not end it (no pending cancel, deadline ahead)."""
    if row.cancel_reason is not None:
        return False
    return row.deadline is None or now < row.deadline
