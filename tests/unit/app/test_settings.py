"""Settings: the database URL is parsed once, into the forms each driver needs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hitl_app.settings import DatabaseURL, Settings, allowed_origins


def test_the_default_database_is_a_sqlite_file_in_the_data_folder(tmp_path: Path):
    db = Settings(HITL_DATA_DIR=tmp_path).database
    assert db.is_sqlite and db.sqlite_path == tmp_path / "hitl.sqlite"
    assert db.sqlalchemy_sync == f"sqlite:///{tmp_path}/hitl.sqlite"
    assert db.sqlalchemy_async == f"sqlite+aiosqlite:///{tmp_path}/hitl.sqlite"
    assert db.psycopg_conninfo == ""


@pytest.mark.parametrize(
    "url", ["postgresql://hitl:pw@db:5432/app?sslmode=disable", "postgres://hitl:pw@db:5432/app?sslmode=disable", "postgresql+psycopg://hitl:pw@db:5432/app?sslmode=disable"]
)
def test_every_postgres_spelling_gives_the_same_driver_urls(url: str):
    db = Settings(DATABASE_URL=url).database
    assert not db.is_sqlite and db.sqlite_path is None and db.raw == url
    assert db.sqlalchemy_sync == db.sqlalchemy_async == "postgresql+psycopg://hitl:pw@db:5432/app?sslmode=disable"
    assert db.psycopg_conninfo == "postgresql://hitl:pw@db:5432/app?sslmode=disable"


def test_an_unsupported_database_is_refused_at_start_up_naming_the_variable():
    with pytest.raises(ValidationError, match="DATABASE_URL must start with sqlite:/// or postgresql://"):
        Settings(DATABASE_URL="mysql://root@db/app")
    with pytest.raises(ValueError, match="got 'sqlite'"):
        DatabaseURL.parse("sqlite://relative.db")


def test_allowed_origins_default_to_the_apps_own_address_and_refuse_a_wildcard():
    assert allowed_origins({"REFLEX_FRONTEND_PORT": "3541"}) == [
        "http://127.0.0.1:3541", "http://localhost:3541", "http://[::1]:3541",
    ]
    assert "http://chat.lan:3000" in allowed_origins({"REFLEX_BACKEND_HOST": "chat.lan"})
    assert "http://0.0.0.0:3000" not in allowed_origins({"REFLEX_BACKEND_HOST": "0.0.0.0"})
    assert allowed_origins({"HITL_ALLOWED_ORIGINS": " https://chat.example.com/, http://10.0.0.5:3000"}) == [
        "https://chat.example.com", "http://10.0.0.5:3000",
    ]
    for bad in ("*", "chat.example.com", "https://chat.example.com/app", "ftp://x"):
        with pytest.raises(ValueError, match="HITL_ALLOWED_ORIGINS"):
            allowed_origins({"HITL_ALLOWED_ORIGINS": bad})
