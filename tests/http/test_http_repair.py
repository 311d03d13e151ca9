"""The repair routes against a real uvicorn: reset, fork, pause, unpause and the bulk forms, both stores and targets."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.http.served_api import Api, ApiSetup

PAIRS = pytest.mark.parametrize(
    ("store", "via"), [("sqlite", "runtime"), ("postgres", "client")]
)


async def _history_ends(api: Api, exec_id: str, kind: str) -> None:
    for _ in range(1000):
        got = await api.call("GET", f"/runs/{exec_id}/history", status=200)
        if got["events"][-1]["type"] == kind:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {exec_id} never recorded {kind}")


async def _state(api: Api, exec_id: str) -> Any:
    return (await api.call("GET", f"/runs/{exec_id}", status=200))["state"]


async def test_a_run_is_paused_unpaused_forked_and_reset_over_http(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        one = (await api.call("POST", "/runs", json={"workflow": "ticks"}, status=201))[
            "exec_id"
        ]
        run = f"/runs/{one}"
        await _history_ends(api, one, "ActivityCompleted")
        assert await api.call(
            "POST", f"{run}/pause", json={"reason": "look"}, status=200
        ) == {"exec_id": one, "paused": True}
        assert (await api.call("GET", run, status=200))["paused"] is True
        listed = await api.call("GET", "/runs", params={"paused": "true"}, status=200)
        assert [r["exec_id"] for r in listed["executions"]] == [one]
        others = await api.call("GET", "/runs", params={"paused": "false"}, status=200)
        assert others["executions"] == []
        bad = await api.call("GET", "/runs", params={"paused": "yes"}, status=422)
        assert bad["error"]["type"] == "InvalidFilter"
        await api.call("POST", f"{run}/unpause", status=200)
        assert (await api.call("GET", run, status=200))["paused"] is False

        forked = await api.call(
            "POST", f"{run}/fork", json={"from_step": 2, "workflow_id": "f"}, status=201
        )
        found = await api.call("GET", f"/runs/{forked['exec_id']}", status=200)
        assert (found["forked_from"], found["workflow_id"]) == (one, "f")
        far = await api.call("POST", f"{run}/fork", json={"from_step": 9}, status=422)
        assert far["error"]["type"] == "InvalidResetPoint"

        point = await api.call(
            "POST", f"{run}/reset", json={"to_event": 999, "reason": "x"}, status=422
        )
        assert point["error"]["type"] == "InvalidResetPoint"
        reset = await api.call(
            "POST", f"{run}/reset", json={"reason": "again"}, status=201
        )
        assert reset["reset_from"] == one
        assert await _state(api, one) == "TERMINATED"
        new = await api.call("GET", f"/runs/{reset['exec_id']}", status=200)
        assert new["reset_from"] == one
        closed = await api.call("POST", f"{run}/pause", json={}, status=409)
        assert closed["error"]["type"] == "WorkflowNotRunning"
        gone = "/runs/00000000-0000-0000-0000-000000000000"
        for action, body in (
            ("reset", {"reason": "x"}),
            ("fork", {"from_step": 1}),
            ("pause", {}),
            ("unpause", {}),
        ):
            got = await api.call("POST", f"{gone}/{action}", json=body, status=404)
            assert got["error"]["type"] == "ExecutionNotFound", action


@PAIRS
async def test_bulk_routes_act_on_the_runs_the_query_filter_matches(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        ids = [
            (
                await api.call(
                    "POST",
                    "/runs",
                    json={"workflow": "box", "workflow_id": f"bulk-{i}"},
                    status=201,
                )
            )["exec_id"]
            for i in range(3)
        ]
        await api.call("POST", "/runs", json={"workflow": "box"}, status=201)
        mine = {"workflow_id_prefix": "bulk-"}

        async def bulk(action: str, body: Any = None, **params: Any) -> Any:
            return await api.call(
                "POST",
                f"/runs:{action}",
                params={**mine, **params},
                json=body or {},
                status=200,
            )

        assert await bulk("pause", {"reason": "hold"}) == {"count": 3}
        assert await bulk("pause", {"reason": "hold"}) == {"count": 0}
        assert await bulk("unpause", paused="true") == {"count": 3}
        assert await bulk("signal", {"name": "add", "payload": "x"}) == {"count": 3}
        assert await bulk("cancel", {"reason": "enough"}, state="RUNNING") == {
            "count": 3
        }
        for exec_id in ids:
            for _ in range(1000):
                if await _state(api, exec_id) == "CANCELLED":
                    break
                await asyncio.sleep(0.01)
            assert await _state(api, exec_id) == "CANCELLED"
        assert await bulk("terminate", {"reason": "x"}) == {"count": 0}
        assert await bulk("reset", {"reason": "x"}, workflow_id="none") == {"count": 0}
        everything = await api.call("POST", "/runs:terminate", json={}, status=422)
        assert everything["error"]["type"] == "InvalidFilter"
        typo = await api.call(
            "POST", "/runs:cancel", params={"workflow": "box"}, status=422
        )
        assert typo["error"]["type"] == "InvalidQuery"
        counts = await api.call("GET", "/counts", status=200)
        assert counts["RUNNING"] == 1  # the run outside the filter


@PAIRS
async def test_a_read_only_api_refuses_every_repair_route(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running(read_only=True) as api:
        exec_id = str(api.rt.start_workflow("box", None))
        before = api.stored_rows()
        for path, body in (
            (f"/runs/{exec_id}/reset", {"reason": "x"}),
            (f"/runs/{exec_id}/fork", {"from_step": 1}),
            (f"/runs/{exec_id}/pause", {}),
            (f"/runs/{exec_id}/unpause", {}),
            *((f"/runs:{a}", {}) for a in ("cancel", "terminate", "pause")),
            *((f"/runs:{a}", {}) for a in ("unpause", "reset", "signal")),
        ):
            got = await api.call(
                "POST", path, params={"state": "RUNNING"}, json=body, status=403
            )
            assert got["error"]["type"] == "ReadOnly", path
        assert api.stored_rows() == before
        assert not api.rt.describe(exec_id).paused
