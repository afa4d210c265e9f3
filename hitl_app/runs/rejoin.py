"""A run a deployed agent is running that no worker follows (the app restarted mid-run, C23) is joined.

The LangGraph server keeps running a run when the app that started it stops (``on_disconnect=
"continue"``). When a thread is next loaded, ``rejoin`` asks the runtime for such a run (``live_run``)
and, when nothing in any worker follows the thread, starts a run of the driver whose input is
``JoinRun(run_id)``: its text streams on from where it is now (never replayed, so never doubled), a
pause shows its cards, and Stop cancels it, as for any run. No second run is ever started: the
server also refuses one while a run is going on (``multitask_strategy="reject"``).
"""

# Tested by: tests/integration/remote/test_remote_restart.py

from __future__ import annotations

import logging

from hitl_app.errors import ThreadError
from hitl_app.runs.agent_runtime import JoinRun
from hitl_app.runs.run_driver import RunDriver

log = logging.getLogger("hitl_app.runs")


async def rejoin(driver: RunDriver, thread_id: str, owner: str) -> bool:
    """Follow the deployed run going on on ``thread_id`` (see the module); True when one was joined.

    False at once for an agent in this process (no ``live_run``), while a run of the thread is followed
    (here or in another worker), when the server runs nothing on it, or when the join could not start.
    """
    live_run = getattr(driver.graph, "live_run", None)
    if live_run is None or thread_id in driver.tasks or await driver.bus.is_live(thread_id):
        return False
    run_id = await live_run(thread_id)
    if run_id is None:
        return False
    try:
        await driver.launch(thread_id, JoinRun(run_id), "continue", owner=owner)
    except ThreadError:
        return False
    log.info("joined the deployed run thread=%s run=%s", thread_id, run_id)
    return True
