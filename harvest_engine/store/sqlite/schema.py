"""The schema: tables, indexes and the append-only triggers of harvest_events.

Times are integer microseconds since the Unix epoch (UTC); payloads are JSON
text. `harvest_executions.id` (the rowid) is the list cursor. Every
projection table is written in the same transaction as the events it derives
from.
"""

from __future__ import annotations

SCHEMA_VERSION = 10
APPLICATION_MARK = "harvest"

# Version 1: the whole engine. Later versions append steps in migrations.py.
V1 = """
CREATE TABLE harvest_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE harvest_executions (
    id                  INTEGER PRIMARY KEY,
    exec_id             TEXT NOT NULL UNIQUE,
    workflow_name       TEXT NOT NULL,
    workflow_id         TEXT NOT NULL,
    state               TEXT NOT NULL,
    attempt             INTEGER NOT NULL DEFAULT 1,
    input               TEXT,
    output              TEXT,
    error               TEXT,
    memo                TEXT,
    search_attributes   TEXT,
    parent_exec_id      TEXT,
    parent_close_policy TEXT,
    predecessor         TEXT,
    successor           TEXT,
    started_at          INTEGER,
    closed_at           INTEGER,
    deadline            INTEGER,
    retry_policy        TEXT,
    cancel_reason       TEXT,
    cancel_seq          INTEGER,
    not_before          INTEGER,
    next_seq            INTEGER NOT NULL DEFAULT 1,
    history_bytes       INTEGER NOT NULL DEFAULT 0,
    needs_decision      INTEGER NOT NULL DEFAULT 1,
    panic_count         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX harvest_executions_state ON harvest_executions (state, id);
CREATE INDEX harvest_executions_key ON harvest_executions (workflow_name, workflow_id, id);
CREATE INDEX harvest_executions_closed ON harvest_executions (closed_at)
    WHERE closed_at IS NOT NULL;
CREATE INDEX harvest_executions_parent ON harvest_executions (parent_exec_id)
    WHERE parent_exec_id IS NOT NULL;
CREATE INDEX harvest_executions_decide ON harvest_executions (needs_decision)
    WHERE needs_decision = 1;

CREATE TABLE harvest_events (
    exec_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    type    TEXT NOT NULL,
    at      INTEGER NOT NULL,
    attrs   TEXT NOT NULL,
    PRIMARY KEY (exec_id, seq)
) WITHOUT ROWID;

CREATE TABLE harvest_tasks (
    id                   INTEGER PRIMARY KEY,
    exec_id              TEXT NOT NULL,
    activity_id          INTEGER NOT NULL,
    activity_name        TEXT NOT NULL,
    input                TEXT NOT NULL,
    queue                TEXT NOT NULL DEFAULT 'default',
    status               TEXT NOT NULL DEFAULT 'PENDING',
    attempt              INTEGER NOT NULL DEFAULT 1,
    max_attempts         INTEGER NOT NULL DEFAULT 1,
    ready_at             INTEGER NOT NULL,
    scheduled_at         INTEGER NOT NULL,
    claimed_at           INTEGER,
    heartbeat            TEXT,
    last_error           TEXT,
    retry_policy         TEXT,
    start_to_close       REAL,
    schedule_to_close_at INTEGER,
    idempotency_key      TEXT NOT NULL,
    local                INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX harvest_tasks_ready ON harvest_tasks (status, ready_at);
CREATE INDEX harvest_tasks_exec ON harvest_tasks (exec_id);

CREATE TABLE harvest_timers (
    exec_id  TEXT NOT NULL,
    timer_id TEXT NOT NULL,
    fire_at  INTEGER NOT NULL,
    PRIMARY KEY (exec_id, timer_id)
) WITHOUT ROWID;
CREATE INDEX harvest_timers_due ON harvest_timers (fire_at);

CREATE TABLE harvest_signals (
    id              INTEGER PRIMARY KEY,
    exec_id         TEXT NOT NULL,
    name            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    idempotency_key TEXT,
    received_at     INTEGER NOT NULL,
    delivered       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX harvest_signals_key ON harvest_signals (exec_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX harvest_signals_staged ON harvest_signals (exec_id, delivered, id);

CREATE TABLE harvest_activity_attempts (
    id            INTEGER PRIMARY KEY,
    exec_id       TEXT NOT NULL,
    activity_id   INTEGER NOT NULL,
    activity_name TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    outcome       TEXT NOT NULL,
    error         TEXT
);
CREATE INDEX harvest_activity_attempts_exec ON harvest_activity_attempts (exec_id, activity_name);

CREATE TABLE harvest_schedules (
    workflow_name   TEXT PRIMARY KEY,
    spec            TEXT NOT NULL,
    input           TEXT NOT NULL DEFAULT 'null',
    overlap         TEXT NOT NULL DEFAULT 'skip',
    max_active_runs INTEGER NOT NULL DEFAULT 1,
    next_fire_at    INTEGER,
    paused          INTEGER NOT NULL DEFAULT 0,
    last_fired_at   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

CREATE TABLE harvest_workflow_logs (
    exec_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    message TEXT NOT NULL,
    marker  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (exec_id, seq)
) WITHOUT ROWID;

CREATE TABLE harvest_llm_ledger (
    id            INTEGER PRIMARY KEY,
    exec_id       TEXT NOT NULL,
    activity      TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency       REAL,
    recorded_at   INTEGER NOT NULL
);
CREATE INDEX harvest_llm_ledger_exec ON harvest_llm_ledger (exec_id);

CREATE TABLE harvest_mutexes (
    key       TEXT NOT NULL,
    exec_id   TEXT NOT NULL,
    queued_at INTEGER NOT NULL,
    granted   INTEGER NOT NULL DEFAULT 0,
    lock_seq  INTEGER,
    PRIMARY KEY (key, exec_id)
) WITHOUT ROWID;
CREATE INDEX harvest_mutexes_exec ON harvest_mutexes (exec_id);

CREATE TABLE harvest_memory_writer_lock (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    owner TEXT NOT NULL
);
"""

# Version 2: a workflow-name filter pages newest first by seeking, not by
# scanning every run of the name (1M-run files in the inspector).
V2 = """
CREATE INDEX IF NOT EXISTS harvest_executions_name ON harvest_executions (workflow_name, id);
"""

# Version 3: client commands (DESIGN "Serving"). A client in another process
# inserts one row (kind, JSON args, submitted_at); the serving process applies
# pending rows in id order, writing the effect, `reply` and `applied_at` in one
# transaction. `exec_id` names the run the command touched, so a purge of the
# run takes its commands along.
V3 = """
CREATE TABLE IF NOT EXISTS harvest_commands (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    command_id    TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    args          TEXT NOT NULL,
    submitted_at  INTEGER NOT NULL,
    applied_at    INTEGER,
    exec_id       TEXT,
    reply         TEXT
);
CREATE INDEX IF NOT EXISTS harvest_commands_pending ON harvest_commands (id)
    WHERE applied_at IS NULL;
CREATE INDEX IF NOT EXISTS harvest_commands_applied ON harvest_commands (applied_at)
    WHERE applied_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS harvest_commands_exec ON harvest_commands (exec_id);
"""

# Version 4: fewer b-trees written per commit (issue 13: each page a commit
# writes costs the WAL about 10 us). The ready-task index holds PENDING tasks
# only: a task inserted already claimed (RUNNING), the common case, and its
# delete touch no index page of it. The attempt log is clustered on the run:
# one b-tree instead of a table and its index, `id` ordering a run's attempts
# (new rows take the run's largest id + 1; rows of older files keep theirs).
V4 = """
CREATE INDEX IF NOT EXISTS harvest_tasks_pending ON harvest_tasks (ready_at)
    WHERE status = 'PENDING';
CREATE TABLE harvest_activity_attempts (
    exec_id       TEXT NOT NULL,
    id            INTEGER NOT NULL,
    activity_id   INTEGER NOT NULL,
    activity_name TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    outcome       TEXT NOT NULL,
    error         TEXT,
    PRIMARY KEY (exec_id, id)
) WITHOUT ROWID;
"""

# Version 5: progress out of a run (issue 28). A run's label (`summary`,
# `details`, given at start) and what it says it is doing now
# (`current_details`, ctx.set_current_details) live on its row; events are
# one row per (run, key), the last value set; a stream is rows of (run, key,
# position), the closing row holding `closed = 1` and no value. Every row is
# written in the decision's transaction, so a rolled-back decision leaves none.
V5 = PROGRESS = """
ALTER TABLE harvest_executions ADD COLUMN summary TEXT;
ALTER TABLE harvest_executions ADD COLUMN details TEXT;
ALTER TABLE harvest_executions ADD COLUMN current_details TEXT;
CREATE TABLE IF NOT EXISTS harvest_run_events (
    exec_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    PRIMARY KEY (exec_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS harvest_streams (
    exec_id  TEXT NOT NULL,
    key      TEXT NOT NULL,
    position INTEGER NOT NULL,
    value    TEXT,
    closed   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (exec_id, key, position)
) WITHOUT ROWID;
"""

# Version 6: start shaping and circuit breakers (issue 26). A debounced or
# batched start waits in harvest_held_starts (one row per workflow name and
# id, naming the run to be) until its window closes; a batch's inputs wait in
# harvest_held_inputs in arrival order. harvest_breakers keeps each activity's
# recent failure times (JSON micros) and its open and probe times.
HELD_STARTS_VERSION = 6
"""The first version with the held-start and breaker tables."""
V6 = FLOW_SHAPING = """
CREATE TABLE IF NOT EXISTS harvest_held_starts (
    workflow_name     TEXT NOT NULL,
    workflow_id       TEXT NOT NULL,
    exec_id           TEXT NOT NULL UNIQUE,
    kind              TEXT NOT NULL,
    opened_at         INTEGER NOT NULL,
    due_at            INTEGER NOT NULL,
    inputs            INTEGER NOT NULL,
    bytes             INTEGER NOT NULL,
    input             TEXT,
    memo              TEXT,
    search_attributes TEXT,
    PRIMARY KEY (workflow_name, workflow_id)
);
CREATE INDEX IF NOT EXISTS harvest_held_starts_due ON harvest_held_starts (due_at);
CREATE TABLE IF NOT EXISTS harvest_held_inputs (
    exec_id    TEXT NOT NULL,
    position   INTEGER NOT NULL,
    input      TEXT NOT NULL,
    arrived_at INTEGER NOT NULL,
    PRIMARY KEY (exec_id, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS harvest_breakers (
    activity   TEXT PRIMARY KEY,
    failures   TEXT NOT NULL,
    open_until INTEGER,
    probe_at   INTEGER
) WITHOUT ROWID;
"""

# Version 7: flow control (issue 26). `harvest_flow_queues` holds each queue's
# limits and its rate state (the next token's time, a quota's window), one row
# per registered queue and per workflow or activity declaring its own limits
# ("workflow:NAME", "activity:NAME"). `harvest_flow_waits` holds one row per
# run started into a queue: ENQUEUED while `admitted_at` is NULL, then holding
# its slot while the run is RUNNING. An activity attempt waiting for a slot is
# a task in status 'WAITING'; its slot is its PENDING or RUNNING task row, so
# a lost worker's slot comes back with the task (lease or reopen), never leaks.
V7 = FLOW_CONTROL = """
CREATE TABLE IF NOT EXISTS harvest_flow_queues (
    name                  TEXT PRIMARY KEY,
    concurrency           INTEGER,
    worker_concurrency    INTEGER,
    rate_limit            INTEGER,
    rate_per              REAL,
    partition_concurrency INTEGER,
    priority              INTEGER NOT NULL DEFAULT 0,
    quota_limit           INTEGER,
    quota_per             REAL,
    next_token_at         INTEGER NOT NULL DEFAULT 0,
    quota_start           INTEGER NOT NULL DEFAULT 0,
    quota_used            INTEGER NOT NULL DEFAULT 0,
    updated_at            INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS harvest_flow_waits (
    id             INTEGER PRIMARY KEY,
    exec_id        TEXT NOT NULL UNIQUE,
    queue          TEXT NOT NULL,
    workflow_queue TEXT,
    priority       INTEGER NOT NULL DEFAULT 0,
    partition_key  TEXT,
    dedup_id       TEXT,
    enqueued_at    INTEGER NOT NULL,
    due_at         INTEGER NOT NULL,
    admitted_at    INTEGER,
    admitted_by    TEXT
);
CREATE INDEX IF NOT EXISTS harvest_flow_waits_queue
    ON harvest_flow_waits (queue, admitted_at, priority, id);
CREATE INDEX IF NOT EXISTS harvest_flow_waits_due
    ON harvest_flow_waits (queue, due_at) WHERE admitted_at IS NULL;
CREATE INDEX IF NOT EXISTS harvest_flow_waits_also
    ON harvest_flow_waits (workflow_queue) WHERE workflow_queue IS NOT NULL;
CREATE INDEX IF NOT EXISTS harvest_flow_waits_dedup
    ON harvest_flow_waits (queue, dedup_id) WHERE dedup_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS harvest_tasks_waiting
    ON harvest_tasks (activity_name, ready_at) WHERE status = 'WAITING';
"""

# Version 8: headers (interceptors, issue 29). A small text map stored with
# a run's start (`kind` 'start', `ref` ''), an activity its decision
# scheduled ('activity', the activity id) or a staged signal ('signal', its
# row id), so context such as a W3C traceparent crosses processes and
# survives a reopen. Written only when a call carries headers: a file
# without interceptors never holds a row.
V8 = HEADERS = """
CREATE TABLE IF NOT EXISTS harvest_headers (
    exec_id TEXT NOT NULL,
    kind    TEXT NOT NULL,
    ref     TEXT NOT NULL,
    headers TEXT NOT NULL,
    PRIMARY KEY (exec_id, kind, ref)
) WITHOUT ROWID;
"""

# Version 9: repairing and steering runs (issue 27). A paused run has its
# reason in `pause_reason` (NULL: not paused); no decision and no new attempt
# is taken for it until unpaused. A reset links the old run and the new one
# (`reset_to`, `reset_from`), a fork the new run to its source (`forked_from`).
V9 = REPAIRS = """
ALTER TABLE harvest_executions ADD COLUMN pause_reason TEXT;
ALTER TABLE harvest_executions ADD COLUMN reset_from TEXT;
ALTER TABLE harvest_executions ADD COLUMN reset_to TEXT;
ALTER TABLE harvest_executions ADD COLUMN forked_from TEXT;
CREATE INDEX IF NOT EXISTS harvest_executions_paused ON harvest_executions (id)
    WHERE pause_reason IS NOT NULL;
"""

# Version 10: runs watching a run that is not their child
# (`await_external_workflow`). A waiter links itself to the run it waits on
# (`exec_id`) and keeps no decision flag; the run's seal deletes its links
# and flags each RUNNING watcher, so a waiter costs nothing while it waits.
V10 = RUN_WATCHERS = """
CREATE TABLE IF NOT EXISTS harvest_run_watchers (
    exec_id TEXT NOT NULL,
    watcher TEXT NOT NULL,
    PRIMARY KEY (exec_id, watcher)
) WITHOUT ROWID;
"""

# Created on every open, so a file from before the guard gains it (guide §7).
APPEND_ONLY_TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS harvest_events_no_update
BEFORE UPDATE ON harvest_events
BEGIN
    SELECT RAISE(ABORT, 'harvest_events is append-only: UPDATE refused');
END;
CREATE TRIGGER IF NOT EXISTS harvest_events_no_overwrite
BEFORE INSERT ON harvest_events
WHEN EXISTS (SELECT 1 FROM harvest_events WHERE exec_id = NEW.exec_id AND seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'harvest_events is append-only: overwrite refused');
END;
"""

TRIGGER_NAMES = ("harvest_events_no_update", "harvest_events_no_overwrite")
