"""The Postgres schema: the SQLite store's tables, plus task leases and the append-only trigger.

Columns keep the SQLite store's types (times as integer microseconds since
the Unix epoch, payloads as JSON text, flags as integers), so one history is
the same JSON on both stores and the row converters are shared. Task rows
add a lease (`worker_id`, `lease_expires_at`, in the database server's own
clock so workers on several machines agree).
"""

from __future__ import annotations

SCHEMA_VERSION = 7

# Version 1: the whole engine. Later versions append steps to MIGRATIONS.
V1 = """
CREATE TABLE harvest_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE harvest_executions (
    id                  BIGSERIAL PRIMARY KEY,
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
    started_at          BIGINT,
    closed_at           BIGINT,
    deadline            BIGINT,
    retry_policy        TEXT,
    cancel_reason       TEXT,
    cancel_seq          INTEGER,
    not_before          BIGINT,
    next_seq            INTEGER NOT NULL DEFAULT 1,
    history_bytes       BIGINT NOT NULL DEFAULT 0,
    needs_decision      INTEGER NOT NULL DEFAULT 1,
    panic_count         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX harvest_executions_state ON harvest_executions (state, id);
CREATE INDEX harvest_executions_key ON harvest_executions (workflow_name, workflow_id, id);
CREATE INDEX harvest_executions_name ON harvest_executions (workflow_name, id);
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
    at      BIGINT NOT NULL,
    attrs   TEXT NOT NULL,
    PRIMARY KEY (exec_id, seq)
);

CREATE TABLE harvest_tasks (
    id                   BIGSERIAL PRIMARY KEY,
    exec_id              TEXT NOT NULL,
    activity_id          INTEGER NOT NULL,
    activity_name        TEXT NOT NULL,
    input                TEXT NOT NULL,
    queue                TEXT NOT NULL DEFAULT 'default',
    status               TEXT NOT NULL DEFAULT 'PENDING',
    attempt              INTEGER NOT NULL DEFAULT 1,
    max_attempts         INTEGER NOT NULL DEFAULT 1,
    ready_at             BIGINT NOT NULL,
    scheduled_at         BIGINT NOT NULL,
    claimed_at           BIGINT,
    heartbeat            TEXT,
    last_error           TEXT,
    retry_policy         TEXT,
    start_to_close       DOUBLE PRECISION,
    schedule_to_close_at BIGINT,
    idempotency_key      TEXT NOT NULL,
    local                INTEGER NOT NULL DEFAULT 0,
    worker_id            TEXT,
    lease_expires_at     TIMESTAMPTZ,
    heartbeat_timeout    DOUBLE PRECISION
);
CREATE INDEX harvest_tasks_ready ON harvest_tasks (status, ready_at);
CREATE INDEX harvest_tasks_exec ON harvest_tasks (exec_id);
CREATE INDEX harvest_tasks_lease ON harvest_tasks (lease_expires_at)
    WHERE status = 'RUNNING';

CREATE TABLE harvest_timers (
    exec_id  TEXT NOT NULL,
    timer_id TEXT NOT NULL,
    fire_at  BIGINT NOT NULL,
    PRIMARY KEY (exec_id, timer_id)
);
CREATE INDEX harvest_timers_due ON harvest_timers (fire_at);

CREATE TABLE harvest_signals (
    id              BIGSERIAL PRIMARY KEY,
    exec_id         TEXT NOT NULL,
    name            TEXT NOT NULL,
    payload         TEXT NOT NULL,
    idempotency_key TEXT,
    received_at     BIGINT NOT NULL,
    delivered       INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX harvest_signals_key ON harvest_signals (exec_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX harvest_signals_staged ON harvest_signals (exec_id, delivered, id);

CREATE TABLE harvest_activity_attempts (
    id            BIGSERIAL PRIMARY KEY,
    exec_id       TEXT NOT NULL,
    activity_id   INTEGER NOT NULL,
    activity_name TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    started_at    BIGINT NOT NULL,
    ended_at      BIGINT,
    outcome       TEXT NOT NULL,
    error         TEXT
);
CREATE INDEX harvest_activity_attempts_exec
    ON harvest_activity_attempts (exec_id, activity_name);

CREATE TABLE harvest_schedules (
    workflow_name   TEXT PRIMARY KEY,
    spec            TEXT NOT NULL,
    input           TEXT NOT NULL DEFAULT 'null',
    overlap         TEXT NOT NULL DEFAULT 'skip',
    max_active_runs INTEGER NOT NULL DEFAULT 1,
    next_fire_at    BIGINT,
    paused          INTEGER NOT NULL DEFAULT 0,
    last_fired_at   BIGINT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE TABLE harvest_workflow_logs (
    exec_id TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    at      BIGINT NOT NULL,
    message TEXT NOT NULL,
    marker  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (exec_id, seq)
);

CREATE TABLE harvest_llm_ledger (
    id            BIGSERIAL PRIMARY KEY,
    exec_id       TEXT NOT NULL,
    activity      TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    latency       DOUBLE PRECISION,
    recorded_at   BIGINT NOT NULL
);
CREATE INDEX harvest_llm_ledger_exec ON harvest_llm_ledger (exec_id);

CREATE TABLE harvest_mutexes (
    key       TEXT NOT NULL,
    exec_id   TEXT NOT NULL,
    queued_at BIGINT NOT NULL,
    granted   INTEGER NOT NULL DEFAULT 0,
    lock_seq  BIGINT,
    PRIMARY KEY (key, exec_id)
);
CREATE INDEX harvest_mutexes_exec ON harvest_mutexes (exec_id);

-- Client commands (DESIGN "Serving"): a client inserts one row; a serving
-- worker applies it, writing the effect, `reply` and `applied_at` together.
CREATE TABLE harvest_commands (
    id            BIGSERIAL PRIMARY KEY,
    command_id    TEXT NOT NULL UNIQUE,
    kind          TEXT NOT NULL,
    args          TEXT NOT NULL,
    submitted_at  BIGINT NOT NULL,
    applied_at    BIGINT,
    exec_id       TEXT,
    reply         TEXT
);
CREATE INDEX harvest_commands_pending ON harvest_commands (id) WHERE applied_at IS NULL;
CREATE INDEX harvest_commands_applied ON harvest_commands (applied_at)
    WHERE applied_at IS NOT NULL;
CREATE INDEX harvest_commands_exec ON harvest_commands (exec_id);

-- The event log is the truth (DESIGN): an UPDATE of a stored event is refused
-- whoever sends it; the primary key already refuses an overwrite.
CREATE FUNCTION harvest_events_refuse_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'harvest_events is append-only: UPDATE refused'
        USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER harvest_events_no_update BEFORE UPDATE ON harvest_events
    FOR EACH ROW EXECUTE FUNCTION harvest_events_refuse_update();

-- Search-attribute filters read a run's attributes through this: a text that
-- is not a JSON object reads as {} instead of failing the whole page.
CREATE FUNCTION harvest_json_object(value TEXT) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    parsed jsonb;
BEGIN
    parsed := value::jsonb;
    IF jsonb_typeof(parsed) = 'object' THEN
        RETURN parsed;
    END IF;
    RETURN '{}'::jsonb;
EXCEPTION WHEN others THEN
    RETURN '{}'::jsonb;
END;
$$;
"""

# Version 2: progress out of a run (issue 28), as SQLite's V5: a run's
# summary, details and current details on its row; its events (the last
# value per key) and streams (one row per position, the closing row
# `closed = 1`), written in the decision's transaction.
V2 = PROGRESS = """
ALTER TABLE harvest_executions ADD COLUMN summary TEXT;
ALTER TABLE harvest_executions ADD COLUMN details TEXT;
ALTER TABLE harvest_executions ADD COLUMN current_details TEXT;
CREATE TABLE harvest_run_events (
    exec_id TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   TEXT NOT NULL,
    seq     BIGINT NOT NULL,
    PRIMARY KEY (exec_id, key)
);
CREATE TABLE harvest_streams (
    exec_id  TEXT NOT NULL,
    key      TEXT NOT NULL,
    position BIGINT NOT NULL,
    value    TEXT,
    closed   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (exec_id, key, position)
);
"""

# Step 3: start shaping and circuit breakers (issue 26); see the SQLite
# schema's V6 for what each table keeps.
V3 = FLOW_SHAPING = """
CREATE TABLE harvest_held_starts (
    workflow_name     TEXT NOT NULL,
    workflow_id       TEXT NOT NULL,
    exec_id           TEXT NOT NULL UNIQUE,
    kind              TEXT NOT NULL,
    opened_at         BIGINT NOT NULL,
    due_at            BIGINT NOT NULL,
    inputs            INTEGER NOT NULL,
    bytes             BIGINT NOT NULL,
    input             TEXT,
    memo              TEXT,
    search_attributes TEXT,
    PRIMARY KEY (workflow_name, workflow_id)
);
CREATE INDEX harvest_held_starts_due ON harvest_held_starts (due_at);
CREATE TABLE harvest_held_inputs (
    exec_id    TEXT NOT NULL,
    position   INTEGER NOT NULL,
    input      TEXT NOT NULL,
    arrived_at BIGINT NOT NULL,
    PRIMARY KEY (exec_id, position)
);
CREATE TABLE harvest_breakers (
    activity   TEXT PRIMARY KEY,
    failures   TEXT NOT NULL,
    open_until BIGINT,
    probe_at   BIGINT
);
"""

# Step 4: flow control (issue 26), as SQLite's V7: queues with their limits and
# rate state, one row per run started into a queue, and the index of activity
# tasks waiting for a slot (status 'WAITING').
V4 = FLOW_CONTROL = """
CREATE TABLE harvest_flow_queues (
    name                  TEXT PRIMARY KEY,
    concurrency           INTEGER,
    worker_concurrency    INTEGER,
    rate_limit            INTEGER,
    rate_per              DOUBLE PRECISION,
    partition_concurrency INTEGER,
    priority              INTEGER NOT NULL DEFAULT 0,
    quota_limit           INTEGER,
    quota_per             DOUBLE PRECISION,
    next_token_at         BIGINT NOT NULL DEFAULT 0,
    quota_start           BIGINT NOT NULL DEFAULT 0,
    quota_used            INTEGER NOT NULL DEFAULT 0,
    updated_at            BIGINT NOT NULL
);
CREATE TABLE harvest_flow_waits (
    id             BIGSERIAL PRIMARY KEY,
    exec_id        TEXT NOT NULL UNIQUE,
    queue          TEXT NOT NULL,
    workflow_queue TEXT,
    priority       INTEGER NOT NULL DEFAULT 0,
    partition_key  TEXT,
    dedup_id       TEXT,
    enqueued_at    BIGINT NOT NULL,
    due_at         BIGINT NOT NULL,
    admitted_at    BIGINT,
    admitted_by    TEXT
);
CREATE INDEX harvest_flow_waits_queue
    ON harvest_flow_waits (queue, admitted_at, priority, id);
CREATE INDEX harvest_flow_waits_due
    ON harvest_flow_waits (queue, due_at) WHERE admitted_at IS NULL;
CREATE INDEX harvest_flow_waits_also
    ON harvest_flow_waits (workflow_queue) WHERE workflow_queue IS NOT NULL;
CREATE INDEX harvest_flow_waits_dedup
    ON harvest_flow_waits (queue, dedup_id) WHERE dedup_id IS NOT NULL;
CREATE INDEX harvest_tasks_waiting
    ON harvest_tasks (activity_name, ready_at) WHERE status = 'WAITING';
"""

# Step 5: headers (interceptors, issue 29), as SQLite's V8: a small text
# map stored with a run's start, an activity its decision scheduled or a
# staged signal, written only when a call carries headers.
V5 = HEADERS = """
CREATE TABLE IF NOT EXISTS harvest_headers (
    exec_id TEXT NOT NULL,
    kind    TEXT NOT NULL,
    ref     TEXT NOT NULL,
    headers TEXT NOT NULL,
    PRIMARY KEY (exec_id, kind, ref)
);
"""

# Step 6: repairing and steering runs (issue 27), as SQLite's V9. A paused
# run has its reason in `pause_reason` (NULL: not paused); no decision and no
# new attempt is taken for it until unpaused. A reset links the old run and
# the new one (`reset_to`, `reset_from`), a fork the new run to its source
# (`forked_from`).
V6 = REPAIRS = """
ALTER TABLE harvest_executions ADD COLUMN IF NOT EXISTS pause_reason TEXT;
ALTER TABLE harvest_executions ADD COLUMN IF NOT EXISTS reset_from TEXT;
ALTER TABLE harvest_executions ADD COLUMN IF NOT EXISTS reset_to TEXT;
ALTER TABLE harvest_executions ADD COLUMN IF NOT EXISTS forked_from TEXT;
CREATE INDEX IF NOT EXISTS harvest_executions_paused ON harvest_executions (id)
    WHERE pause_reason IS NOT NULL;
"""

# Step 7: runs watching a run that is not their child
# (`await_external_workflow`), as SQLite's V10. A waiter links itself to the
# run it waits on (`exec_id`) and keeps no decision flag; the run's seal
# deletes its links and flags each RUNNING watcher.
V7 = RUN_WATCHERS = """
CREATE TABLE IF NOT EXISTS harvest_run_watchers (
    exec_id TEXT NOT NULL,
    watcher TEXT NOT NULL,
    PRIMARY KEY (exec_id, watcher)
);
"""

# MIGRATIONS[n] takes a database from version n to n + 1 (index 0 creates it).
MIGRATIONS: tuple[str, ...] = (V1, V2, V3, V4, V5, V6, V7)
