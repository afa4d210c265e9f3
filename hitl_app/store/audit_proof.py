"""Proving the audit: walk the chain, compare it with the tables, sign and check exports.

``verify_database`` walks the chain (``hitl_app.store.audit_chain``) from its first link and
replays its facts into the audit rows and review events they say exist, then compares those with
the tables as they are. It names, first to last, every link or row that was changed, removed or
inserted behind the app's back (``ChainProblem``).

Exports (``export_json``, ``export_csv``) carry the whole chain and an Ed25519 signature over a
statement naming the number of links and the head's hash, made with a private key the admin keeps
(``generate_keys``); ``verify_export`` checks one offline against the admin's public key. Ed25519
(the ``cryptography`` library) rather than an HMAC: whoever checks an export needs only the public
key, which cannot make a signature, so an auditor can verify without being able to forge.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.store.audit_chain import GENESIS, AuditLink, canonical, iso_utc, link_hash, read_chain, row_fact
from hitl_app.store.desk_tables import ReviewEvent
from hitl_app.store.tables import AuditRecord, utcnow

EXPORT_FORMAT = "hitl-audit-export/1"
"""The ``format`` of an export (JSON key; the CSV's signature row says it too)."""

CSV_FIELDS = ("seq", "at", "kind", "prev_hash", "hash", "body")
"""The CSV export's columns; its last row is the signature (``seq`` = ``signature``)."""


@dataclass(frozen=True)
class Link:
    """One link as read from the database or an export (``at`` as ISO 8601 UTC text)."""

    seq: int
    at: str
    kind: str
    prev_hash: str
    hash: str
    body: str

    @classmethod
    def of(cls, row: AuditLink) -> Link:
        """A stored link as plain values."""
        return cls(row.seq, iso_utc(row.at), row.kind, row.prev_hash, row.hash, row.body)


@dataclass(frozen=True)
class ChainProblem:
    """One thing found wrong: ``where`` (``"chain entry #5"``, ``"audit record #3"``, ``"review
    event #2"``, ``"signature"``), ``what`` happened (``changed``, ``removed``, ``inserted``) and
    the detail."""

    where: str
    what: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where} was {self.what}: {self.detail}"


def walk(links: Sequence[Link]) -> list[ChainProblem]:
    """The problems of the chain itself, in ``seq`` order: a missing ``seq`` (removed), a link whose
    hash does not match its content (changed), a link that does not follow the one before it
    (inserted, or the one before it rewritten with a new hash)."""
    problems: list[ChainProblem] = []
    expected, prev = 1, GENESIS
    for link in sorted(links, key=lambda x: x.seq):
        gap = link.seq != expected
        if gap:
            missing = f"#{expected}" if link.seq == expected + 1 else f"#{expected} to #{link.seq - 1}"
            gone = f"the chain goes from #{expected - 1} to #{link.seq}"
            problems.append(ChainProblem(f"chain entry {missing}", "removed", gone))
        if link_hash(seq=link.seq, at=link.at, kind=link.kind, prev_hash=link.prev_hash, body=link.body) != link.hash:
            problems.append(ChainProblem(f"chain entry #{link.seq}", "changed", "its content does not match its hash"))
        elif link.prev_hash != prev and not gap:
            problems.append(ChainProblem(
                f"chain entry #{link.seq}", "inserted",
                f"it does not follow entry #{link.seq - 1} (put in, or the entry before it rewritten)",
            ))
        expected, prev = link.seq + 1, link.hash
    return problems


@dataclass
class Replayed:
    """What the chain says exists: audit rows and review events by id, each with the ``seq`` of
    the link that last wrote it."""

    audit: dict[int, tuple[dict[str, Any], int]]
    events: dict[int, tuple[dict[str, Any], int]]


def replay(links: Sequence[Link]) -> Replayed:
    """Apply the links' facts in order (a body that is not JSON is skipped: ``walk`` reports it)."""
    out = Replayed({}, {})
    for link in sorted(links, key=lambda x: x.seq):
        try:
            body = json.loads(link.body)
        except ValueError:
            continue
        for row in body.get("audit", []) if link.kind in ("adopted", "decided") else []:
            out.audit[int(row["id"])] = (row, link.seq)
        for row in body.get("events", []) if link.kind == "adopted" else []:
            out.events[int(row["id"])] = (row, link.seq)
        if link.kind == "event":
            out.events[int(body["event"]["id"])] = (body["event"], link.seq)
        for row_id in body.get("ids", []) if link.kind == "released" else []:
            out.audit.pop(int(row_id), None)
        for row_id in body.get("ids", []) if link.kind == "cleared" else []:
            if int(row_id) in out.audit:
                out.audit[int(row_id)] = ({**out.audit[int(row_id)][0], "args_executed": None}, link.seq)
        for row_id, args in (body.get("rows") or {}).items() if link.kind == "restored" else ():
            if int(row_id) in out.audit:
                out.audit[int(row_id)] = ({**out.audit[int(row_id)][0], "args_executed": args}, link.seq)
    return out


def _short(value: Any) -> str:
    text = canonical(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compare(label: str, expected: dict[int, tuple[dict[str, Any], int]], actual: dict[int, dict[str, Any]]) -> list[ChainProblem]:
    """Rows the chain says exist (``expected``) against the table's (``actual``), by id: each row
    removed, inserted or changed (naming the first field that differs)."""
    problems = []
    for row_id in sorted(set(expected) | set(actual)):
        where = f"{label} #{row_id}"
        if row_id not in actual:
            seq = expected[row_id][1]
            problems.append(ChainProblem(where, "removed", f"chain entry #{seq} wrote it and nothing released it"))
        elif row_id not in expected:
            problems.append(ChainProblem(where, "inserted", "no chain entry wrote it"))
        else:
            row, seq = expected[row_id]
            for field in sorted(set(row) | set(actual[row_id])):
                if canonical(row.get(field)) != canonical(actual[row_id].get(field)):
                    problems.append(ChainProblem(
                        where, "changed",
                        f"{field} is {_short(actual[row_id].get(field))}, chain entry #{seq} says {_short(row.get(field))}",
                    ))
                    break
    return problems


@dataclass(frozen=True)
class Verdict:
    """The result of a check: how many links were walked, the problems (first = the first one
    found; empty when the audit is intact) and, for an export, its head."""

    links: int
    problems: tuple[ChainProblem, ...]
    head_hash: str = GENESIS

    @property
    def ok(self) -> bool:
        """True when nothing was found wrong."""
        return not self.problems


async def verify_database(*, session: AsyncSession) -> Verdict:
    """Walk the stored chain and compare what it says with ``audit_records`` and ``review_events``."""
    links = [Link.of(r) for r in await read_chain(session=session)]
    said = replay(links)
    rows = (await session.exec(select(AuditRecord).order_by(col(AuditRecord.id)))).all()
    audit = {r.id: row_fact(r) for r in rows if r.id is not None}
    kept = (await session.exec(select(ReviewEvent).order_by(col(ReviewEvent.id)))).all()
    events = {e.id: row_fact(e) for e in kept if e.id is not None}
    problems = walk(links) + compare("audit record", said.audit, audit) + compare("review event", said.events, events)
    return Verdict(len(links), tuple(problems), links[-1].hash if links else GENESIS)


def generate_keys() -> tuple[bytes, bytes]:
    """A new Ed25519 key pair as PEM: (private key, PKCS 8 unencrypted; public key, SPKI)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM. Raises ValueError when it is not one."""
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("the private key is not an Ed25519 key (make one with: python -m hitl_app audit keygen)")
    return key


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM. Raises ValueError when it is not one."""
    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the public key is not an Ed25519 key")
    return key


def _raw(key: Ed25519PublicKey) -> str:
    return base64.b64encode(key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def _statement(links: Sequence[Link], exported_at: str) -> dict[str, Any]:
    return {
        "format": EXPORT_FORMAT, "links": len(links), "head_seq": links[-1].seq if links else 0,
        "head_hash": links[-1].hash if links else GENESIS, "exported_at": exported_at,
    }


def _signed(links: Sequence[Link], key: Ed25519PrivateKey) -> tuple[dict[str, Any], dict[str, str]]:
    statement = _statement(links, iso_utc(utcnow()))
    value = base64.b64encode(key.sign(canonical(statement).encode("utf-8"))).decode()
    return statement, {"alg": "Ed25519", "public_key": _raw(key.public_key()), "value": value}


def export_json(links: Sequence[Link], key: Ed25519PrivateKey) -> str:
    """The chain as one JSON document: ``format``, ``links`` (each link's fields), ``signed`` (the
    statement) and ``signature`` (``alg``, ``public_key`` raw base64, ``value`` base64)."""
    statement, signature = _signed(links, key)
    doc = {"format": EXPORT_FORMAT, "links": [vars(link) for link in links], "signed": statement, "signature": signature}
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def export_csv(links: Sequence[Link], key: Ed25519PrivateKey) -> str:
    """The chain as CSV (``CSV_FIELDS``), one link a row; the last row is the signature: ``seq`` =
    ``signature``, ``at`` the public key (raw base64), ``kind`` = ``Ed25519``, ``hash`` the
    signature, ``body`` the signed statement."""
    statement, signature = _signed(links, key)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for link in links:
        writer.writerow([link.seq, link.at, link.kind, link.prev_hash, link.hash, link.body])
    writer.writerow(["signature", signature["public_key"], "Ed25519", "", signature["value"], canonical(statement)])
    return out.getvalue()


async def signed_export(*, session: AsyncSession, key: Ed25519PrivateKey, fmt: str = "json") -> tuple[str, int]:
    """The whole chain as ``audit export`` writes it (``fmt`` ``json`` or ``csv``), signed with
    ``key``; returns (the text, how many links). Raises ValueError for another ``fmt``."""
    if fmt not in ("json", "csv"):
        raise ValueError(f"an export is json or csv, not {fmt!r}")
    links = [Link.of(r) for r in await read_chain(session=session)]
    return (export_json if fmt == "json" else export_csv)(links, key), len(links)


def _read_export(text: str) -> tuple[list[Link], dict[str, Any], str, str]:
    """(links, statement, signature base64, signer's public key base64) of a JSON or CSV export."""
    if text.lstrip().startswith("{"):
        doc = json.loads(text)
        links = [Link(int(x["seq"]), x["at"], x["kind"], x["prev_hash"], x["hash"], x["body"]) for x in doc["links"]]
        return links, doc["signed"], doc["signature"]["value"], doc["signature"]["public_key"]
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(rows[0]) != CSV_FIELDS or rows[-1][0] != "signature":
        raise ValueError("not an audit export: a CSV export starts with the header row and ends with the signature row")
    links = [Link(int(r[0]), r[1], r[2], r[3], r[4], r[5]) for r in rows[1:-1]]
    return links, json.loads(rows[-1][5]), rows[-1][4], rows[-1][1]


def verify_export(text: str, public_key: Ed25519PublicKey) -> Verdict:
    """Check an export offline: its chain (``walk``), that the signed statement names its head and
    length, and the signature against ``public_key`` (the admin's). Raises ValueError when ``text``
    is not an export at all."""
    try:
        links, statement, signature, signer = _read_export(text)
    except (KeyError, IndexError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not an audit export ({exc.__class__.__name__}: {exc})") from None
    problems = walk(links)
    if canonical(statement) != canonical(_statement(links, str(statement.get("exported_at", "")))):
        problems.append(ChainProblem("the export", "changed", "its links do not match the signed statement (length or head)"))
    try:
        public_key.verify(base64.b64decode(signature), canonical(statement).encode("utf-8"))
    except (InvalidSignature, ValueError):
        who = "" if signer == _raw(public_key) else " (it names another key as its signer)"
        problems.append(ChainProblem("signature", "changed", f"it does not verify with the public key given{who}"))
    return Verdict(len(links), tuple(problems), links[-1].hash if links else GENESIS)


def verify_against(live: Sequence[Link], text: str, public_key: Ed25519PublicKey) -> Verdict:
    """Check the live chain against an earlier signed export (an anchor the admin kept): the export
    must verify (``verify_export``) and every link it holds must still be in the live chain with the
    same hash. This catches what ``walk`` alone cannot: a chain rewritten from some link on with
    every hash recomputed, or links cut off its end. Raises ValueError when ``text`` is not an export."""
    anchor = verify_export(text, public_key)
    if not anchor.ok:
        return Verdict(anchor.links, tuple(ChainProblem(f"the anchor export's {p.where}", p.what, p.detail)
                                          for p in anchor.problems), anchor.head_hash)
    exported, _, _, _ = _read_export(text)
    by_seq = {link.seq: link for link in live}
    problems = []
    for link in exported:
        now = by_seq.get(link.seq)
        if now is None:
            gone = "the signed export holds it, the chain no longer does"
            problems.append(ChainProblem(f"chain entry #{link.seq}", "removed", gone))
        elif now.hash != link.hash:
            problems.append(ChainProblem(f"chain entry #{link.seq}", "changed",
                                         f"its hash is {now.hash[:16]}, the signed export says {link.hash[:16]}"))
        if problems:
            break
    return Verdict(len(live), tuple(problems), live[-1].hash if live else GENESIS)
