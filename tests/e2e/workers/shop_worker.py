"""The repair story's shop: charge the card, then ship; serve DB until SIGTERM.

    shop_worker.py DB CHARGES [--fixed]

Without ``--fixed``, ship_order has the bug (the order has no "amount":
KeyError); with it, the fixed code. Every charge appends a line to the
file CHARGES, so a test counts the card's charges from the body itself.
Logs at WARNING on stderr; prints ``serving`` once the file is open.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from harvest_engine import (
    ActivityContext,
    RetryPolicy,
    SqliteRuntime,
    WorkflowContext,
    activity,
    workflow,
)

FIXED = "--fixed" in sys.argv
CHARGES = Path(sys.argv[2])


@activity
async def charge_card(ctx: ActivityContext, order: dict[str, Any]) -> str:
    with CHARGES.open("a") as charges:  # noqa: ASYNC230 - one short line, on purpose
        charges.write(f"{order['id']}\n")
    return f"charged {order['id']}"


@activity(retry=RetryPolicy(max_attempts=2, initial_interval="10ms"))
async def ship_order(ctx: ActivityContext, order: dict[str, Any]) -> str:
    if FIXED:
        return f"shipped {order['id']}"
    return f"shipped {order['amount']}"  # BUG: orders carry no amount


@workflow
async def process_order(ctx: WorkflowContext, order: dict[str, Any]) -> list[str]:
    charged = await ctx.execute_activity(charge_card, order)
    shipped = await ctx.execute_activity(ship_order, order)
    return [charged, shipped]


async def main(path: str) -> None:
    """Serve `path` until SIGTERM."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    with SqliteRuntime.open(path) as rt:
        rt.register_workflow(process_order)
        rt.register_activity(charge_card)
        rt.register_activity(ship_order)
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        print("serving", flush=True)
        await rt.serve(stop)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
