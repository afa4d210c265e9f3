"""The Reflex app: pages and the lifespan that opens the database, checkpointer and agent once."""

from __future__ import annotations

import contextlib
import logging

import reflex as rx

from hitl_app.runtime import open_runtime
from hitl_app.ui.pages import IndexState, index, thread_page
from hitl_app.ui.state import LIVE_JS, ChatState

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@contextlib.asynccontextmanager
async def lifespan():
    """Open the runtime (database, checkpointer, agent) for the server's lifetime."""
    async with open_runtime():
        yield


app = rx.App(head_components=[rx.script(LIVE_JS)])
app.register_lifespan_task(lifespan)
app.add_page(index, route="/", on_load=IndexState.open_new_thread, title="hitl_app")
app.add_page(thread_page, route="/thread/[thread_id]", on_load=ChatState.load_thread, title="hitl_app · chat")
