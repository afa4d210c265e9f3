"""The demo ``transfer_funds`` tool: a payment written to a ``payments`` ledger, exactly once.

A payment is one row of the ``payments`` table in the run owner's demo database (SQLite)::

    payments(tool_call_id TEXT PRIMARY KEY, amount REAL > 0, recipient TEXT, created_at TEXT, result TEXT)

``tool_call_id`` is the call's idempotency key ``"<thread_id>:<tool_call_id>"``. The row is the
payment AND its record: it is written in one ``BEGIN IMMEDIATE`` transaction that first looks the
key up, so a replay of the same tool call (Stop and Continue, a crash, a second worker) returns the
recorded result and never pays twice. The ledger can be inspected with ``payments(db)`` or with
an approved ``SELECT * FROM payments``.

Money is a float rounded to cents (a demo, not accounting); amounts must be positive, finite and
at most ``MAX_AMOUNT``.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.tools import ToolException
from pydantic import Field

from hitl_app.store import sqlite as app_sqlite

MAX_AMOUNT = 1_000_000_000.0
"""The largest amount one transfer may move."""

MAX_RECIPIENT_CHARS = 200

PAYMENTS_DDL = (
    "CREATE TABLE IF NOT EXISTS payments (tool_call_id TEXT PRIMARY KEY, amount REAL NOT NULL CHECK (amount > 0), "
    "recipient TEXT NOT NULL, created_at TEXT NOT NULL, result TEXT NOT NULL)"
)
"""The ledger table (created on the first transfer)."""

Amount = Annotated[
    float, Field(gt=0, le=MAX_AMOUNT, allow_inf_nan=False, description="the amount to pay, a positive number")
]
"""``transfer_funds``'s ``amount``: checked by the tool's schema (positive, finite, at most ``MAX_AMOUNT``)."""

Recipient = Annotated[
    str, Field(min_length=1, max_length=MAX_RECIPIENT_CHARS, description="who receives the money")
]
"""``transfer_funds``'s ``to``: a non-empty name."""


@dataclass(frozen=True)
class Payment:
    """One row of the ledger: ``amount`` (float, cents), ``recipient``, ``created_at`` (ISO 8601 UTC)."""

    tool_call_id: str
    amount: float
    recipient: str
    created_at: str


def _check(amount: Any, to: Any) -> tuple[float, str]:
    """``(amount rounded to cents, stripped name)``.

    Raises:
        ToolException: amount not a positive finite number up to ``MAX_AMOUNT`` (or under a
            cent); name empty, too long, or with a NUL byte or line break.
    """
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount):
        raise ToolException("The amount must be a number.")
    cents = round(float(amount), 2)
    if cents <= 0 or cents > MAX_AMOUNT:
        raise ToolException(f"The amount must be more than 0 and at most {MAX_AMOUNT:,.0f}.")
    name = to.strip() if isinstance(to, str) else ""
    if not name or len(name) > MAX_RECIPIENT_CHARS or any(c in name for c in "\x00\r\n"):
        raise ToolException(f"The recipient must be a name of 1 to {MAX_RECIPIENT_CHARS} characters on one line.")
    return cents, name


def transfer_once(db_path: Path, key: str, amount: float, to: str) -> str:
    """Pay ``amount`` to ``to`` in the ledger of ``db_path``, once per ``key``.

    Returns:
        ``"Paid 1,500.00 to Bob."``; for a ``key`` already paid, the recorded result (no new row).

    Raises:
        ToolException: invalid amount or recipient (see ``_check``), or the database cannot be
            written (plain message; nothing was paid).
    """
    cents, name = _check(amount, to)
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    conn = app_sqlite.connect(db_path, autocommit=True)
    try:
        conn.execute(PAYMENTS_DDL)
        conn.execute("BEGIN IMMEDIATE")  # one writer at a time: a concurrent replay waits here
        row = conn.execute("SELECT result FROM payments WHERE tool_call_id = ?", (key,)).fetchone()
        if row is not None:
            return str(row[0])
        result = f"Paid {cents:,.2f} to {name}."
        conn.execute(
            "INSERT INTO payments (tool_call_id, amount, recipient, created_at, result) VALUES (?, ?, ?, ?, ?)",
            (key, cents, name, datetime.now(UTC).isoformat(), result),
        )
        conn.execute("COMMIT")
        return result
    except sqlite3.Error as exc:
        raise ToolException(f"The payment could not be recorded ({exc}); nothing was paid.") from None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def payments(db_path: Path) -> list[Payment]:
    """Every payment in the ledger of ``db_path``, oldest first (``[]`` when there is none yet)."""
    if not Path(db_path).exists():
        return []
    conn = app_sqlite.connect(db_path, read_only=True)
    try:
        rows = conn.execute(
            "SELECT tool_call_id, amount, recipient, created_at FROM payments ORDER BY created_at, rowid"
        ).fetchall()
    except sqlite3.OperationalError:  # no payments table yet
        return []
    finally:
        conn.close()
    return [Payment(*row) for row in rows]


def _run_owner(runtime: ToolRuntime | None) -> str:
    config = getattr(runtime, "config", None) or {}
    owner = (config.get("configurable") or {}).get("owner")
    return owner if isinstance(owner, str) else ""


def make_transfer_funds(
    *, ledger_path: Callable[[str], Path], effect_key: Callable[[ToolRuntime], str]
) -> Callable[..., str]:
    """The ``transfer_funds(amount, to, runtime)`` tool function, for ``StructuredTool.from_function``.

    Args:
        ledger_path: owner (``config["configurable"]["owner"]``, ``""`` when unknown) -> the
            SQLite file holding that owner's ``payments`` table.
        effect_key: ToolRuntime -> the call's idempotency key ``"<thread_id>:<tool_call_id>"``.

    Its signature makes the tool's schema refuse a non-positive, infinite or too large amount
    and an empty name before anything runs; ``ToolException`` is raised for the rest.
    """

    def transfer_funds(amount: Amount, to: Recipient, runtime: ToolRuntime) -> str:
        """Pay `amount` to the person or account named `to` (recorded in the payments ledger)."""
        return transfer_once(ledger_path(_run_owner(runtime)), effect_key(runtime), amount, to)

    return transfer_funds
