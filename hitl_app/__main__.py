"""Command line for scripted set-ups and tests: ``python -m hitl_app users ...``.

Works on the database of ``DATABASE_URL`` (default: the SQLite file under ``HITL_DATA_DIR``) and
creates the app's tables when they are missing. Commands::

    users add EMAIL --name NAME --role ROLE (--password-stdin | --temporary | --invite)
    users list
    users disable EMAIL
    users enable EMAIL
    users set-role EMAIL ROLE
    audit verify [--export FILE | --against FILE] [--public-key PEM]
    audit export --format json|csv --private-key PEM [--out FILE]
    audit keygen --private-key PEM --public-key PEM

Exit status: 0 on success, 1 when the change is refused or ``audit verify`` finds a problem (the
reason goes to stderr), 2 on bad usage.
"""

# Tested by: tests/integration/auth/test_auth_cli.py - runs `python -m hitl_app` as a person would

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app import auth
from hitl_app.auth import SYSTEM, AuthError, Role
from hitl_app.review.audience import Audience
from hitl_app.settings import get_settings
from hitl_app.store import audit_proof
from hitl_app.store.audit_chain import read_chain
from hitl_app.store.db import Engines, create_schema, make_engines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hitl_app", description="Manage hitl_app accounts and prove its audit.")
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
    _audit_parser(groups)
    return parser


def _audit_parser(groups: argparse._SubParsersAction) -> None:
    audit = groups.add_parser("audit", help="prove the audit").add_subparsers(dest="command", required=True)
    verify = audit.add_parser("verify", help="walk the audit chain (or check an export offline)")
    verify.add_argument("--export", help="check this export file instead of the database (offline)")
    verify.add_argument("--public-key", help="the admin's Ed25519 public key (PEM) the export must be signed with")
    verify.add_argument("--against", help="an earlier signed export: the live chain must still hold all of it")
    export = audit.add_parser("export", help="write the chain with a signature")
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.add_argument("--private-key", required=True, help="the admin's Ed25519 private key (PEM)")
    export.add_argument("--out", help="file to write (default: standard output)")
    keygen = audit.add_parser("keygen", help="make the admin's Ed25519 signing key pair")
    keygen.add_argument("--private-key", required=True, help="where to write the private key (kept by the admin)")
    keygen.add_argument("--public-key", required=True, help="where to write the public key (given to auditors)")


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


class AuditProblem(Exception):
    """``audit verify`` found the audit changed; the message lists what (first problem first)."""


def _verdict(verdict: audit_proof.Verdict, what: str) -> str:
    if verdict.ok:
        entries = f"{verdict.links} chain {'entry' if verdict.links == 1 else 'entries'}"
        return f"{what}: intact ({entries}, head {verdict.head_hash[:16]})"
    lines = [f"{what}: NOT intact; first problem: {verdict.problems[0]}"]
    lines += [f"  also: {p}" for p in verdict.problems[1:20]]
    raise AuditProblem("\n".join(lines))


def _public_key(args: argparse.Namespace) -> audit_proof.Ed25519PublicKey:
    if not args.public_key:
        raise AuthError("--export and --against need --public-key: the admin's public key the export is signed with")
    return audit_proof.load_public_key(Path(args.public_key).read_bytes())


def _audit_offline(args: argparse.Namespace) -> str | None:
    """The audit commands that need no database (None for the others)."""
    if args.command == "keygen":
        private, public = audit_proof.generate_keys()
        key_path = Path(args.private_key)
        key_path.touch(mode=0o600, exist_ok=False)
        key_path.write_bytes(private)
        Path(args.public_key).write_bytes(public)
        return f"wrote the private key to {args.private_key} (keep it) and the public key to {args.public_key}"
    if args.command == "verify" and args.export:
        key = _public_key(args)
        return _verdict(audit_proof.verify_export(Path(args.export).read_text(encoding="utf-8"), key), args.export)
    return None


async def _audit(engines: Engines, args: argparse.Namespace) -> str:
    async with AsyncSession(engines.async_) as session:
        if args.command == "verify":
            verdict = await audit_proof.verify_database(session=session)
            if verdict.ok and args.against:
                live = [audit_proof.Link.of(r) for r in await read_chain(session=session)]
                anchor = Path(args.against).read_text(encoding="utf-8")
                checked = audit_proof.verify_against(live, anchor, _public_key(args))
                return _verdict(checked, f"the audit chain against {args.against}")
            return _verdict(verdict, "the audit chain")
        key = audit_proof.load_private_key(Path(args.private_key).read_bytes())
        text, count = await audit_proof.signed_export(session=session, key=key, fmt=args.format)
    if not args.out:
        return text.rstrip("\n")
    Path(args.out).write_text(text, encoding="utf-8")
    return f"wrote {count} chain {'entry' if count == 1 else 'entries'}, signed, to {args.out}"


async def _tell_open_tabs(account_id: int) -> str:
    """Tell the running app's open tabs of ``account_id`` that their person changed, as the Accounts
    page does (``ui/state/inbox.py`` ``tabs_signed_out``): through the review signal on Redis when the
    app runs with it, so a disabled person's tabs go to the sign-in page at once and a new role shows
    at once. Without Redis this process cannot reach the app's; its tabs find out at their next
    action or their inbox's periodic re-read (``HITL_INBOX_REFRESH_S``). Returns what it did, for
    the command's output; a Redis that does not answer is said, never raised."""
    settings = get_settings()
    if not settings.redis_url:
        return f"open tabs follow within {settings.inbox_refresh_seconds:g} s (at once when the app runs with Redis)"
    from hitl_app.bus.redis_bus import RedisRunBus

    bus = RedisRunBus(settings.redis_url, prefix=settings.redis_prefix)
    try:
        # no policy key here (this process reads no policy): every open inbox re-reads once, its person's tabs with it
        await bus.reviews.announce(Audience(owner_id=str(account_id), policy="-"))
    finally:
        await bus.aclose()
    return "open tabs told"


async def _run(args: argparse.Namespace) -> str:
    if args.group == "audit" and (done := _audit_offline(args)) is not None:
        return done
    engines = make_engines(get_settings().resolved_database_url)
    try:
        create_schema(engines)
        if args.group == "audit":
            return await _audit(engines, args)
        engine = engines.async_
        if args.command == "add":
            return await _add(engine, args)
        if args.command == "list":
            return await _list(engine)
        account_id = await _account_id(engine, args.email)
        if args.command == "disable":
            ended = await auth.disable(engine=engine, account_id=account_id, by=SYSTEM)
            return f"disabled {args.email}; {ended} session(s) ended; {await _tell_open_tabs(account_id)}"
        if args.command == "enable":
            await auth.enable(engine=engine, account_id=account_id, by=SYSTEM)
            return f"enabled {args.email}"
        role = Role.parse(args.role)
        await auth.set_role(engine=engine, account_id=account_id, role=role, by=SYSTEM)
        return f"{args.email} is now {role}; {await _tell_open_tabs(account_id)}"
    finally:
        await engines.async_.dispose()
        engines.sync.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    try:
        print(asyncio.run(_run(args)))
    except AuditProblem as exc:
        print(exc, file=sys.stderr)
        return 1
    except (AuthError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
