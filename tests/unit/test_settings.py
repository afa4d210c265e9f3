"""Settings: the database URL is parsed once, into the forms each driver needs."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hitl_app.settings import DatabaseURL, Settings


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
