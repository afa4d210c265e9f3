"""One settings object, read from the environment once and validated at start-up.

Every knob the app has lives here, so no other module reads ``os.environ``. Variables:

| env var            | default               | meaning                                                  |
|--------------------|-----------------------|----------------------------------------------------------|
| HITL_DATA_DIR      | ``./data``            | folder for the SQLite file, the files sandbox, demo db   |
| DATABASE_URL       | ``sqlite:///<data>/hitl.sqlite`` | app tables + LangGraph checkpoints            |
| HITL_MODEL         | ``demo``              | ``demo`` or any ``init_chat_model`` spec                 |
| HITL_DEMO_WPS      | ``30``                | demo model pace in words per second (0 = no pacing)      |
| HITL_AGENT         | unset                 | ``package.module:attribute`` of a developer's agent      |
| HITL_POLICY        | unset                 | path of a TOML policy file for the built-in agent        |
| HITL_MCP           | unset                 | path of an ``mcp.json`` file: MCP servers' tools for the built-in agent |
| HITL_MCP_TIMEOUT_S | ``60``                | seconds an MCP server may take to list its tools or answer one call |
| HITL_AGENT_URL     | unset                 | URL of an agent deployed on the LangGraph server (``langgraph dev``/``up``) |
| HITL_ASSISTANT_ID  | ``agent``             | its assistant id or graph name (with HITL_AGENT_URL)     |
| HITL_AGENT_API_KEY | unset                 | the deployment's API key (sent as ``x-api-key``)          |
| HITL_MODEL_MAX_RETRIES | provider default  | retries of a real provider's client on 429/5xx/timeouts  |
| HITL_DB_POOL_SIZE  | ``10``                | connections kept per pool (engines; PG checkpointer)     |
| HITL_REDIS_URL / REFLEX_REDIS_URL | unset  | Redis for several workers: run events, run locks, Stop   |
| HITL_SESSION_HOURS | ``168``               | a sign-in session ends after this long without activity  |
| HITL_SESSION_MAX_DAYS | ``30``             | a sign-in session ends this long after sign-in, however active |
| HITL_SIGNIN_MAX_FAILURES | ``5``           | failed password tries per email+address in the window (x10: all addresses) |
| HITL_SIGNIN_MAX_FAILURES_PER_ADDRESS | ``20`` | failed sign-ins per client address within the window  |
| HITL_SIGNIN_WINDOW_MINUTES | ``15``        | length of the sliding window for the two limits above     |
| HITL_INVITE_HOURS  | ``72``                | an invite link works this long (once)                     |
| HITL_OIDC_ISSUER   | unset                 | OpenID Connect issuer URL; set it to offer single sign-on |
| HITL_OIDC_CLIENT_ID / HITL_OIDC_CLIENT_SECRET | unset | the app's client at that issuer             |
| HITL_OIDC_ROLE_CLAIM | unset               | id_token claim holding the role (else the admin sets it)  |
| HITL_SMTP_HOST / HITL_SMTP_PORT | unset / ``587`` | SMTP server for review reminder mails (unset: no mail) |
| HITL_SMTP_USER / HITL_SMTP_PASSWORD | unset | SMTP login (STARTTLS is used when the server offers it) |
| HITL_SMTP_FROM     | unset                 | sender address of reminder mails (needed with a host)     |
| HITL_REVIEW_REMINDER_MINUTES | ``30``      | a reviewer who has not opened a review by then is mailed  |
| HITL_PUBLIC_URL    | ``http://localhost:3000`` | the app's address as people open it (links in mails)  |
| HITL_MAIL_LINK_HOURS | ``72``              | a reminder mail's one-time decision link works at most this long |
| HITL_API_REQUESTS_PER_MINUTE | ``120``     | decision API calls one personal token may make per minute |
| HITL_API_TOKEN_MAX_DAYS | ``365``          | the longest lifetime of a personal API token               |
| HITL_AUDIT_PRIVATE_KEY | unset             | the admin's Ed25519 key file (``audit keygen``): /audit's signed download |
| HITL_RUN_TIMEOUT_SECONDS | ``600``         | wall-clock limit of one run; then it is stopped           |
| HITL_RUN_MAX_STEPS | ``50``                | graph steps per run (LangGraph ``recursion_limit``)       |
| HITL_RUNS_PER_OWNER | ``3``                | runs one owner may have going at once (per worker)        |
| HITL_MESSAGES_PER_MINUTE | ``30``          | new messages per owner per minute (per worker)            |
| HITL_MAX_RUNS      | ``32``                | runs going at once in one worker, all owners together     |
| HITL_ALLOWED_ORIGINS | the app's own address | origins (comma-separated) whose pages may use the app: ``allowed_origins`` |

Bounds of each demo tool call (``hitl_app.agent.limits.ToolLimits``):

| env var                     | default    | meaning                                              |
|-----------------------------|------------|------------------------------------------------------|
| HITL_SQL_TIMEOUT_S          | ``5``      | seconds one SQL statement may run                    |
| HITL_SQL_MAX_VALUE_BYTES    | 1000000    | largest string/blob SQLite may build                 |
| HITL_TOOL_RESULT_MAX_BYTES  | 65536      | largest SQL result returned (the rest is cut off)    |
| HITL_MAX_TOOL_CALLS         | ``20``     | tool calls one model message may start               |
| HITL_FILES_MAX_COUNT        | ``500``    | files one owner's sandbox may hold                   |
| HITL_FILES_MAX_BYTES        | 10000000   | bytes one owner's sandbox may hold                   |
| HITL_PREVIEW_BUDGET_S       | ``0.5``    | seconds a card's row-count preview may run (once per review) |
| HITL_PREVIEWS_AT_ONCE       | ``2``      | effect previews computed at once in one worker       |
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import (
    AliasChoices,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

_POSTGRES_PREFIXES = ("postgresql+psycopg://", "postgresql://", "postgres://")


@dataclass(frozen=True)
class DatabaseURL:
    """A parsed ``DATABASE_URL``: the one place that knows the accepted forms and the drivers.

    Accepted: ``sqlite:///path/to/file.sqlite`` and ``postgresql://user@host:port/db`` (also
    ``postgres://`` and ``postgresql+psycopg://``; query parameters are kept). Build it with
    ``DatabaseURL.parse(text)``.

    Attributes:
        raw: the URL as configured.
        is_sqlite: True for SQLite, False for PostgreSQL.
        sqlite_path: the SQLite file path (``None`` for PostgreSQL).
        sqlalchemy_sync: the URL for SQLAlchemy's sync engine (``sqlite:///...`` or
            ``postgresql+psycopg://...``, psycopg 3).
        sqlalchemy_async: the URL for the async engine (``sqlite+aiosqlite:///...`` or
            ``postgresql+psycopg://...``).
        psycopg_conninfo: a ``postgresql://...`` conninfo for psycopg (``""`` for SQLite).
    """

    raw: str
    is_sqlite: bool
    sqlite_path: Path | None
    sqlalchemy_sync: str
    sqlalchemy_async: str
    psycopg_conninfo: str

    @classmethod
    def parse(cls, text: str) -> DatabaseURL:
        """Parse ``text``. Raises ValueError naming the scheme for anything but SQLite/PostgreSQL."""
        if text.startswith("sqlite:///"):
            path = text[len("sqlite:///") :]
            return cls(text, True, Path(path), f"sqlite:///{path}", f"sqlite+aiosqlite:///{path}", "")
        for prefix in _POSTGRES_PREFIXES:
            if text.startswith(prefix):
                rest = text[len(prefix) :]
                sqlalchemy = f"postgresql+psycopg://{rest}"
                return cls(text, False, None, sqlalchemy, sqlalchemy, f"postgresql://{rest}")
        raise ValueError(
            f"DATABASE_URL must start with sqlite:/// or postgresql:// (got {text.split(':', 1)[0]!r})"
        )

    def __str__(self) -> str:
        return self.raw


class Settings(BaseSettings):
    """Application settings (read from environment variables, see the module docstring).

    Raises:
        pydantic.ValidationError: on a malformed value, naming the variable.
    """

    model_config = SettingsConfigDict(env_prefix="", extra="ignore", populate_by_name=True)

    data_dir: Path = Field(default=Path("data"), alias="HITL_DATA_DIR")
    database_url: str | None = Field(default=None, alias="DATABASE_URL")
    model: str = Field(default="demo", alias="HITL_MODEL")
    demo_words_per_second: float = Field(default=30.0, ge=0, le=10_000, alias="HITL_DEMO_WPS")
    agent: str | None = Field(default=None, alias="HITL_AGENT")
    policy_file: Path | None = Field(default=None, alias="HITL_POLICY")
    mcp_file: Path | None = Field(default=None, alias="HITL_MCP")
    mcp_timeout_s: float = Field(default=60.0, gt=0, le=3600, alias="HITL_MCP_TIMEOUT_S")
    agent_url: str | None = Field(default=None, alias="HITL_AGENT_URL")
    assistant_id: str = Field(default="agent", min_length=1, max_length=200, alias="HITL_ASSISTANT_ID")
    agent_api_key: SecretStr | None = Field(default=None, alias="HITL_AGENT_API_KEY")
    model_max_retries: int | None = Field(default=None, ge=0, le=20, alias="HITL_MODEL_MAX_RETRIES")
    db_pool_size: int = Field(default=10, ge=1, le=200, alias="HITL_DB_POOL_SIZE")
    redis_url: str | None = Field(default=None, validation_alias=AliasChoices("HITL_REDIS_URL", "REFLEX_REDIS_URL"))
    redis_prefix: str = Field(default="hitl:", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$",
                              alias="HITL_REDIS_PREFIX")
    """The prefix of the run bus's Redis keys and channels: two deployments on one Redis each need
    their own (their review signals name accounts by id, which two databases share)."""
    session_hours: float = Field(default=168.0, gt=0, le=24 * 366, alias="HITL_SESSION_HOURS")
    session_max_days: float = Field(default=30.0, gt=0, le=366, alias="HITL_SESSION_MAX_DAYS")
    signin_max_failures: int = Field(default=5, ge=1, le=1000, alias="HITL_SIGNIN_MAX_FAILURES")
    signin_max_failures_per_address: int = Field(default=20, ge=1, le=100_000, alias="HITL_SIGNIN_MAX_FAILURES_PER_ADDRESS")
    signin_window_minutes: float = Field(default=15.0, gt=0, le=24 * 60, alias="HITL_SIGNIN_WINDOW_MINUTES")
    invite_hours: float = Field(default=72.0, gt=0, le=24 * 90, alias="HITL_INVITE_HOURS")
    oidc_issuer: str | None = Field(default=None, alias="HITL_OIDC_ISSUER")
    oidc_client_id: str | None = Field(default=None, alias="HITL_OIDC_CLIENT_ID")
    oidc_client_secret: str | None = Field(default=None, alias="HITL_OIDC_CLIENT_SECRET")
    oidc_role_claim: str | None = Field(default=None, alias="HITL_OIDC_ROLE_CLAIM")
    run_timeout_seconds: float = Field(default=600.0, gt=0, le=24 * 3600, alias="HITL_RUN_TIMEOUT_SECONDS")
    inbox_refresh_seconds: float = Field(default=30.0, ge=1, le=24 * 3600, alias="HITL_INBOX_REFRESH_S")
    run_max_steps: int = Field(default=50, ge=2, le=10_000, alias="HITL_RUN_MAX_STEPS")
    runs_per_owner: int = Field(default=3, ge=1, le=1000, alias="HITL_RUNS_PER_OWNER")
    messages_per_minute: int = Field(default=30, ge=1, le=100_000, alias="HITL_MESSAGES_PER_MINUTE")
    max_runs: int = Field(default=32, ge=1, le=100_000, alias="HITL_MAX_RUNS")
    sweep_seconds: float = Field(default=1.0, ge=0.1, le=60, alias="HITL_SWEEP_SECONDS")
    """Seconds between two sweeps for due deadlines and ended undo windows (``desk.sweeper``)."""
    webhook_poll_seconds: float = Field(default=2.0, ge=0.05, le=600, alias="HITL_WEBHOOK_POLL_S")
    """Seconds between two looks at the webhook queue (``webhooks.deliverer``)."""
    webhook_timeout_seconds: float = Field(default=10.0, gt=0, le=300, alias="HITL_WEBHOOK_TIMEOUT_S")
    webhook_backoff_seconds: float = Field(default=10.0, gt=0, le=3600, alias="HITL_WEBHOOK_BACKOFF_S")
    """The first wait after a failed delivery, doubled after each further one (up to ``webhook_backoff_max_seconds``)."""
    webhook_backoff_max_seconds: float = Field(default=3600.0, gt=0, le=7 * 24 * 3600, alias="HITL_WEBHOOK_BACKOFF_MAX_S")
    webhook_max_attempts: int = Field(default=12, ge=1, le=100, alias="HITL_WEBHOOK_MAX_ATTEMPTS")
    webhook_allow_networks: str = Field(default="", max_length=2000, alias="HITL_WEBHOOK_ALLOW_NETWORKS")
    """Private or loopback networks webhooks may be sent to (comma-separated CIDRs, e.g.
    ``127.0.0.1/32``); none by default (``webhooks.destinations``)."""
    audit_private_key: Path | None = Field(default=None, alias="HITL_AUDIT_PRIVATE_KEY")
    """The PEM file ``python -m hitl_app audit keygen --private-key`` wrote: the /audit page signs its
    download with it, as ``audit export`` does; unset, the page says how to export instead."""
    _database: DatabaseURL = PrivateAttr()

    # ---- bounds of each demo tool call (read by hitl_app.agent.limits.ToolLimits.from_settings) ----
    sql_timeout_s: float = Field(default=5.0, gt=0, le=600, alias="HITL_SQL_TIMEOUT_S")
    sql_max_value_bytes: int = Field(default=1_000_000, ge=1_000, le=1_000_000_000, alias="HITL_SQL_MAX_VALUE_BYTES")
    tool_result_max_bytes: int = Field(default=65_536, ge=1_024, le=10_000_000, alias="HITL_TOOL_RESULT_MAX_BYTES")
    max_tool_calls_per_message: int = Field(default=20, ge=1, le=1_000, alias="HITL_MAX_TOOL_CALLS")
    files_max_count: int = Field(default=500, ge=1, le=1_000_000, alias="HITL_FILES_MAX_COUNT")
    files_max_bytes: int = Field(default=10_000_000, ge=1_000, le=100_000_000_000, alias="HITL_FILES_MAX_BYTES")
    preview_budget_s: float = Field(default=0.5, gt=0, le=60, alias="HITL_PREVIEW_BUDGET_S")
    """Seconds a write statement's row count may run for its card's preview (``desk.previews``)."""
    previews_at_once: int = Field(default=2, ge=1, le=64, alias="HITL_PREVIEWS_AT_ONCE")
    """Effect previews computed at the same time in one worker, all reviews together."""
    # ---- end of tool bounds ----
    smtp_host: str | None = Field(default=None, alias="HITL_SMTP_HOST")
    smtp_port: int = Field(default=587, ge=1, le=65_535, alias="HITL_SMTP_PORT")
    smtp_user: str | None = Field(default=None, alias="HITL_SMTP_USER")
    smtp_password: SecretStr | None = Field(default=None, alias="HITL_SMTP_PASSWORD")
    smtp_from: str | None = Field(default=None, alias="HITL_SMTP_FROM")
    review_reminder_minutes: float = Field(default=30.0, gt=0, le=7 * 24 * 60, alias="HITL_REVIEW_REMINDER_MINUTES")
    public_url: str = Field(default="http://localhost:3000", alias="HITL_PUBLIC_URL")
    api_requests_per_minute: int = Field(default=120, ge=1, le=100_000, alias="HITL_API_REQUESTS_PER_MINUTE")
    mail_link_hours: float = Field(default=72.0, gt=0, le=24 * 30, alias="HITL_MAIL_LINK_HOURS")
    api_token_max_days: int = Field(default=365, ge=1, le=3650, alias="HITL_API_TOKEN_MAX_DAYS")

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @model_validator(mode="after")
    def _parse_database_url(self) -> Settings:
        self._database = DatabaseURL.parse(self.database_url or f"sqlite:///{self.data_dir / 'hitl.sqlite'}")
        if self.smtp_host and not (self.smtp_from or "").strip():
            raise ValueError("HITL_SMTP_HOST is set: also set HITL_SMTP_FROM (the reminder mails' sender address)")
        if not self.public_url.startswith(("http://", "https://")):
            raise ValueError("HITL_PUBLIC_URL must start with http:// or https://")
        if self.agent_url is not None and not self.agent_url.startswith(("http://", "https://")):
            raise ValueError("HITL_AGENT_URL must start with http:// or https:// (e.g. http://127.0.0.1:2024)")
        if self.agent_url and self.agent:
            raise ValueError("set HITL_AGENT (an agent in this process) or HITL_AGENT_URL (a deployed one), not both")
        return self

    @property
    def database(self) -> DatabaseURL:
        """The parsed database URL (``DATABASE_URL``, default a SQLite file inside ``data_dir``)."""
        return self._database

    @property
    def resolved_database_url(self) -> str:
        """The database URL as text (``database.raw``)."""
        return self._database.raw

    @property
    def files_dir(self) -> Path:
        """Folder holding one files sandbox per owner (``files/<owner key>/``)."""
        return self.data_dir / "files"

    @property
    def demo_db_path(self) -> Path:
        """Base path of the demo databases: owner ``k``'s ``records`` live in ``demo_records/<k>.sqlite``."""
        return self.data_dir / "demo_records.sqlite"


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read on first use."""
    return Settings()


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def allowed_origins(env: dict[str, str] | None = None) -> list[str]:
    """The origins whose pages may call the app and open its websocket (Reflex ``cors_allowed_origins``).

    ``HITL_ALLOWED_ORIGINS`` (comma-separated, e.g. ``https://chat.example.com``) when set; else the
    app's own address: ``http://<loopback name>:<port>`` for each loopback name, plus
    ``http://<host>:<port>`` when the app listens on one specific other host. The port and host are
    the ones ``reflex run`` was given (``REFLEX_FRONTEND_PORT``, ``REFLEX_BACKEND_HOST``; default
    3000). A server reached under another name (``HOST=0.0.0.0``, a proxy) needs the variable.

    Raises:
        ValueError: an entry that is not ``scheme://host[:port]`` or is ``*``.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    explicit = [o.strip().rstrip("/") for o in environ.get("HITL_ALLOWED_ORIGINS", "").split(",") if o.strip()]
    for origin in explicit:
        scheme, sep, rest = origin.partition("://")
        if origin == "*" or not sep or scheme not in ("http", "https") or not rest or "/" in rest:
            raise ValueError(f"HITL_ALLOWED_ORIGINS: {origin!r} is not an origin like https://chat.example.com")
    if explicit:
        return explicit
    port = environ.get("REFLEX_FRONTEND_PORT") or environ.get("REFLEX_BACKEND_PORT") or "3000"
    hosts = list(_LOOPBACK)
    host = environ.get("REFLEX_BACKEND_HOST", "")
    if host and host not in ("0.0.0.0", "::", "::1", *hosts):
        hosts.append(host)
    return [f"http://{h}:{port}" for h in hosts]
