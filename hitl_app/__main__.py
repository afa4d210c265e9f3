"""Command line for scripted set-ups and tests: ``python -m hitl_app users ...``.

Works on the database of ``DATABASE_URL`` (default: the SQLite file under ``HITL_DATA_DIR``) and
creates the app's tables when they are missing. Commands::

    users add EMAIL --name NAME --role ROLE (--password-stdin | --temporary | --invite)
    users list
    users disable EMAIL
    users enable EMAIL
    users set-role EMAIL ROLE

Exit status: 0 on success, 1 when the change is refused (the reason goes to stderr), 2 on bad usage.
"""

# Tested by: tests/integration/auth/test_auth_cli.py - runs `python -m hitl_app` as a person would

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncEngine

from hitl_app import auth
from hitl_app.auth import SYSTEM, AuthError, Role
from hitl_app.settings import get_settings
from hitl_app.store.db import create_schema, make_engines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hitl_app", description="Manage hitl_app accounts.")
    groups = parser.add_subparsers(dest="group", required=True)
    users = groups.add_parser("users", help="accounts").add_subparsers(dest="command", required=True)
    add = users.add_parser("add", help="create an account")
    add.add_argument("email")
    add.add_argument("--name", required=True, help="display name (plain text)")
    add.add_argument("--role", default="member", help="member, reviewer or admin (default member)")
    how = add.add_mutually_exclusive_group(required=True)
    how.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    how.add_argument("--temporary", action="store_true", help="print a temporary password that must be changed")
    how.add_argument("--invite", action="store_true", help="print a one-time invite token instead")
    users.add_parser("list", help="list accounts")
    for name, text in (("disable", "disable an account and end its sessions"), ("enable", "enable an account")):
        users.add_parser(name, help=text).add_argument("email")
    set_role = users.add_parser("set-role", help="change an account's role")
    set_role.add_argument("email")
    set_role.add_argument("role")
    return parser


async def _account_id(engine: AsyncEngine, email: str) -> int:
    found = await auth.find_account(engine=engine, email=email)
    if found is None:
        raise AuthError(f"No account with email {email!r}")
    return found.account_id


async def _add(engine: AsyncEngine, args: argparse.Namespace) -> str:
    role = Role.parse(args.role)
    if args.invite:
        token = await auth.create_invite(engine=engine, email=args.email, role=role, by=SYSTEM)
        return f"invite token for {args.email} ({role}): {token}"
    if args.temporary:
        who, temporary = await auth.create_with_temporary_password(
            engine=engine, email=args.email, display_name=args.name, role=role, by=SYSTEM
        )
        return f"added {who.email} ({who.role}); temporary password: {temporary}"
    password = sys.stdin.readline().rstrip("\r\n")
    who = await auth.add_account(
        engine=engine, email=args.email, display_name=args.name, role=role, password=password, by=SYSTEM
    )
    return f"added {who.email} ({who.role})"


async def _list(engine: AsyncEngine) -> str:
    rows = await auth.list_accounts(engine=engine)
    lines = ["id\temail\trole\tstatus\tname"]
    for r in rows:
        status = "disabled" if r.disabled else ("must-change-password" if r.must_change_password else "active")
        lines.append(f"{r.account_id}\t{r.email}\t{r.role}\t{status}\t{r.display_name}")
    return "\n".join(lines)


async def _run(args: argparse.Namespace) -> str:
    engines = make_engines(get_settings().resolved_database_url)
    try:
        create_schema(engines)
        engine = engines.async_
        if args.command == "add":
            return await _add(engine, args)
        if args.command == "list":
            return await _list(engine)
        account_id = await _account_id(engine, args.email)
        if args.command == "disable":
            ended = await auth.disable(engine=engine, account_id=account_id, by=SYSTEM)
            return f"disabled {args.email}; {ended} session(s) ended"
        if args.command == "enable":
            await auth.enable(engine=engine, account_id=account_id, by=SYSTEM)
            return f"enabled {args.email}"
        role = Role.parse(args.role)
        await auth.set_role(engine=engine, account_id=account_id, role=role, by=SYSTEM)
        return f"{args.email} is now {role}"
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    try:
        print(asyncio.run(_run(args)))
    except AuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
