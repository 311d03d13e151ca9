"""Activity task rows: the insert statements, their values, and the record a claimed insert wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harvest_engine.store.rows import TaskRecord
from harvest_engine.timestamps import from_micros, micros

if TYPE_CHECKING:
    from harvest_engine.store.rows import NewTask

TASK_INSERT_COLUMNS = (
    "exec_id, activity_id, activity_name, input, queue, max_attempts, ready_at, "
    "scheduled_at, retry_policy, start_to_close, schedule_to_close_at, "
    "idempotency_key, local"
)
INSERT_TASK = (
    f"INSERT INTO harvest_tasks ({TASK_INSERT_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# One statement inserts a task already claimed (group commit claims what a
# decision schedules in the decision's transaction).
INSERT_CLAIMED_TASK = (
    f"INSERT INTO harvest_tasks ({TASK_INSERT_COLUMNS}, status, claimed_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'RUNNING', ?)"
)
# The attempt log is clustered on (exec_id, id) (schema V4): a new row takes
# its run's largest id + 1, read from the end of the run's rows, where the
# insert writes anyway. The first two parameters are both the run's id.
INSERT_ATTEMPT = (
    "INSERT INTO harvest_activity_attempts (exec_id, id, activity_id, activity_name, "
    "attempt, started_at, ended_at, outcome, error) VALUES (?, COALESCE((SELECT id "
    "FROM harvest_activity_attempts WHERE exec_id = ? ORDER BY id DESC LIMIT 1), 0) + 1, "
    "?, ?, ?, ?, ?, ?, ?)"
)


# exec_id, activity_id, activity_name, input, queue, max_attempts, ready_at,
# scheduled_at, retry_policy, start_to_close, schedule_to_close_at,
# idempotency_key, local: as TASK_INSERT_COLUMNS names them.
TaskValues = tuple[
    str,
    int,
    str,
    str,
    str,
    int,
    int,
    int,
    str | None,
    float | None,
    int | None,
    str,
    int,
]


def task_values(task: NewTask) -> TaskValues:
    """The INSERT_TASK parameters of a new task (times as stored)."""
    return (
        task.exec_id,
        int(task.activity_id),
        task.activity_name,
        task.input,
        task.queue,
        int(task.max_attempts),
        micros(task.ready_at),
        micros(task.ready_at),
        task.retry_policy,
        task.start_to_close,
        None
        if task.schedule_to_close_at is None
        else micros(task.schedule_to_close_at),
        task.idempotency_key,
        int(task.local),
    )


def claimed_task_record(task_id: int, values: TaskValues) -> TaskRecord:
    """The row a claimed insert of `values` (`task_values`) wrote, as a read returns it.

    The values are what SQLite stored (times already microseconds); the
    defaults are the schema's, and `start_to_close` reads back as a REAL.
    Built without the frozen dataclass's `__init__` (one `object.__setattr__`
    per field, 2 us for these 18; one per activity a run schedules), which
    a record nothing else holds yet allows, as `run_cache.with_fields` does;
    every field is set.
    """
    (exec_id, activity_id, name, input_, queue, max_attempts, ready_at, scheduled_at,
     retry_policy, start_to_close, schedule_to_close_at, key, local) = values  # fmt: skip
    ready = from_micros(ready_at)
    record = object.__new__(TaskRecord)
    record.__dict__.update(
        id=task_id,
        exec_id=exec_id,
        activity_id=activity_id,
        activity_name=name,
        input=input_,
        queue=queue,
        status="RUNNING",
        attempt=1,
        max_attempts=max_attempts,
        ready_at=ready,
        scheduled_at=ready if scheduled_at == ready_at else from_micros(scheduled_at),
        heartbeat=None,
        last_error=None,
        retry_policy=retry_policy,
        start_to_close=None if start_to_close is None else float(start_to_close),
        schedule_to_close_at=None
        if schedule_to_close_at is None
        else from_micros(schedule_to_close_at),
        idempotency_key=key,
        local=bool(local),
    )
    return record
