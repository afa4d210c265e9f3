"""The issue-2 happy path with the app on PostgreSQL (checkpoints + app tables), in Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from tests.e2e.test_chat_flow import test_edit_recipient_on_card_lands_in_outbox_and_survives_reload as happy_path
from tests.helpers.app_server import AppServer
from tests.helpers.postgres import fresh_database


@pytest.fixture(scope="module")
def pg_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app with ``DATABASE_URL`` on a fresh PostgreSQL database."""
    with fresh_database() as url:
        server = AppServer(tmp_path_factory.mktemp("pg-app"), env={"DATABASE_URL": url})
        server.start()
        yield server
        server.stop()


def test_happy_path_on_postgres(page: Page, pg_app: AppServer):
    happy_path(page, pg_app)
    assert not (pg_app.data_dir / "hitl.sqlite").exists(), "nothing may be stored in SQLite"
