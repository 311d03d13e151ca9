"""Client commands on the wire: one record per kind reads back from its row as it was written."""

from __future__ import annotations

from typing import Any

import pytest

from harvest_engine import payloads, wire, wire_repairs
from harvest_engine.calls import SignalDelivery, StartOutcome
from harvest_engine.errors import WorkflowNotRunning
from harvest_engine.states import ExecutionId

SAMPLES: list[wire.Command] = [
    wire.StartWorkflow("order", {"n": 1}),
    wire.StartWorkflowWithId("order", "o-1", [1, 2]),
    wire.StartWorkflowWithReusePolicy("order", "o-1", None, "REJECT_DUPLICATE"),
    wire.StartWorkflowWithOptions("order", 3, "o-2", {"m": 1}, {"k": "v"}),
    wire.SignalWithStartCommand("order", "o-1", "go", 1, "ALLOW_DUPLICATE", 2, "key"),
    wire.SendSignal("run-1", "go", {"x": 1}),
    wire.SendSignalIdempotent("run-1", "go", None, "key"),
    wire.SendSignalByWorkflowId("order", "o-1", "go", [1], None),
    wire.Cancel("run-1", "enough"),
    wire.Terminate("run-1", None),
    wire.Query("run-1", "status", None),
    wire.Update("run-1", "bump", 5),
    wire.UpdateWithStartCommand("order", "o-1", "bump", None, 7),
    wire_repairs.Reset("run-1", "fixed", 4),
    wire_repairs.Fork("run-1", 2, "o-3"),
    wire_repairs.Pause("run-1", "look"),
    wire_repairs.Unpause("run-1"),
    wire_repairs.CancelMany({"states": ["RUNNING"]}, "stop"),
    wire_repairs.TerminateMany({"workflow_names": ["order"]}, "end"),
    wire_repairs.SignalMany({"paused": True}, "go", [1]),
    wire_repairs.ResetMany({}, "again"),
    wire_repairs.PauseMany({}, "hold"),
    wire_repairs.UnpauseMany({"paused": True}),
]
# The schedule operations (issue 27).
SAMPLES += [
    wire.UpsertSchedule("order", {"every": 60}, {"n": 1}, 2, "allow_all"),
    wire.PauseSchedule("order"),
    wire.ResumeSchedule("order"),
    wire.DeleteSchedule("order"),
    wire.TriggerSchedule("order"),
    wire.BackfillSchedule(
        "order", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"
    ),
]


def test_every_kind_has_one_record_and_each_sample_covers_one() -> None:
    assert sorted(type(s).KIND for s in SAMPLES) == sorted(wire.KINDS)
    assert len({record.KIND for record in wire.COMMANDS.values()}) == len(wire.COMMANDS)


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).KIND)
def test_a_record_reads_back_from_its_row_as_the_same_record(
    record: wire.Command,
) -> None:
    row = payloads.dumps(record.args())
    assert wire.command(type(record).KIND, row) == record


def test_a_row_of_an_older_client_without_optional_fields_still_reads() -> None:
    got = wire.command(
        "start_workflow_with_reuse_policy", '{"name": "a", "workflow_id": "b"}'
    )
    assert got == wire.StartWorkflowWithReusePolicy("a", "b", None, "ALLOW_DUPLICATE")


def test_an_unknown_kind_or_arguments_that_are_no_object_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown client command"):
        wire.command("reboot", "{}")
    with pytest.raises(TypeError, match="JSON object"):
        wire.command("cancel", "[1]")


def test_results_and_errors_cross_as_the_in_process_values() -> None:
    outcome = StartOutcome(ExecutionId("run-1"), started_fresh=True)
    reply = wire.ok_reply(SAMPLES[2], outcome)
    assert wire.read_reply(wire.StartWorkflowWithReusePolicy, reply) == outcome
    delivery = SignalDelivery(ExecutionId("run-2"), delivered=False)
    reply = wire.ok_reply(SAMPLES[7], delivery)
    assert wire.read_reply(wire.SendSignalByWorkflowId, reply) == delivery
    reply = wire.error_reply(WorkflowNotRunning(exec_id="run-1", state="COMPLETED"))
    with pytest.raises(WorkflowNotRunning):
        wire.read_reply(wire.Cancel, reply)


def test_an_exec_id_result_reads_back_as_an_execution_id() -> None:
    got: Any = wire.read_reply(
        wire.StartWorkflow, wire.ok_reply(SAMPLES[0], ExecutionId("r"))
    )
    assert isinstance(got, ExecutionId)
    assert got == ExecutionId("r")
