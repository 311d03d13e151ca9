"""The schedule routes against a real uvicorn: list, upsert, pause, resume, trigger, backfill, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.http.served_api import ApiSetup


async def test_a_schedule_is_stored_switched_fired_backfilled_and_deleted(
    api_setup: ApiSetup,
) -> None:
    async with api_setup.running() as api:
        one = "/schedules/greet"
        row = await api.call(
            "PUT",
            one,
            json={"schedule": {"every": "1h"}, "input": "tick", "overlap": "allow_all"},
            status=200,
        )
        assert (row["workflow_name"], row["schedule"], row["input"], row["paused"]) == (
            "greet",
            {"every": 3600},
            "tick",
            False,
        )
        assert row["overlap"] == "allow_all"
        assert [
            r["workflow_name"] for r in await api.call("GET", "/schedules", status=200)
        ] == ["greet"]
        assert await api.call("POST", f"{one}/pause", status=200) == {
            "workflow_name": "greet",
            "pause": True,
        }
        assert (await api.call("GET", "/schedules", status=200))[0]["paused"] is True
        await api.call("POST", f"{one}/resume", status=200)
        assert (await api.call("GET", "/schedules", status=200))[0]["paused"] is False
        fired = await api.call("POST", f"{one}/trigger", status=200)
        run = await api.call("GET", f"/runs/{fired['exec_id']}", status=200)
        assert (run["workflow_name"], run["input"]) == ("greet", "tick")
        filled = await api.call(
            "POST",
            f"{one}/backfill",
            json={"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T02:00:00Z"},
            status=200,
        )
        assert len(filled["exec_ids"]) == 3
        bad = await api.call(
            "POST",
            f"{one}/backfill",
            json={"start": "soon", "end": "later"},
            status=422,
        )
        assert bad["error"]["type"] == "ValueError"
        await api.call("DELETE", one, status=200)
        for method, path in (
            ("DELETE", one),
            ("POST", f"{one}/pause"),
            ("POST", f"{one}/trigger"),
        ):
            gone = await api.call(method, path, status=404)
            assert gone["error"]["type"] == "ScheduleNotFound"
        for body, kind in (
            ({"schedule": {"cron": "not cron"}}, "ValueError"),
            ({"schedule": {"every": "1h"}, "max_active_runs": 0}, "ValueError"),
            ({"schedule": {"every": "1h"}, "overlap": "buffer_one"}, "Unsupported"),
        ):
            got = await api.call("PUT", one, json=body, status=422)
            assert got["error"]["type"] == kind, body
        unknown = await api.call(
            "PUT", "/schedules/nope", json={"schedule": {"every": "1h"}}, status=422
        )
        assert unknown["error"]["type"] == "UnknownWorkflow"
        assert await api.call("GET", "/schedules", status=200) == []
