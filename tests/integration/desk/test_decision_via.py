"""How each decision arrived (the audit's ``via``), on SQLite and PostgreSQL, with
examples/policies/team.toml: a payment decided on the page, one approved through the API then the
mail link (two approvals). Each card's audit row says the door of
the decision that completed it, its deciders say each one's, the chain's ``decided`` fact carries
it, ``audit verify`` still passes, and the audit page's rows and its CSV/JSON say it.
"""

from __future__ import annotations

import csv
import io
import json

from sqlmodel.ext.asyncio.session import AsyncSession

from hitl_app.review.via import API, MAIL, PAGE
from hitl_app.store import audit as audit_store
from hitl_app.store.audit_chain import read_chain
from hitl_app.store.audit_proof import verify_database
from tests.integration.desk.test_review_rights import ADA, APPROVE, DANA, ask, audit, service  # noqa: F401


async def test_each_audit_row_and_its_chain_fact_say_how_the_decision_arrived(service):  # noqa: F811
    small, small_review = await ask(service, "pay 500 to Bob")
    assert await service.submit_review(small, small_review, APPROVE, person=DANA)  # the page's default door
    await service.wait(small)
    big, big_review = await ask(service, "pay 1500 to Cat")  # needs two approvals
    assert await service.submit_review(big, big_review, APPROVE, person=DANA, via=API) is None
    assert await service.submit_review(big, big_review, APPROVE, person=ADA, via=MAIL)
    await service.wait(big)

    [page_row], [two] = audit(service, small), audit(service, big)
    assert page_row.via == PAGE and two.via == MAIL
    assert [(d["display_name"], d["via"]) for d in two.deciders] == [("Dana", API), ("Ada", MAIL)]
    async with AsyncSession(service.engines.async_) as s:
        chain = await read_chain(session=s)
        verdict = await verify_database(session=s)
    assert verdict.ok, verdict.problems
    facts = [row for link in chain if link.kind == "decided" for row in json.loads(link.body)["audit"]]
    by_thread = {f["thread_id"]: f for f in facts}
    assert by_thread[small]["via"] == PAGE and by_thread[big]["via"] == MAIL
    assert [d["via"] for d in by_thread[big]["deciders"]] == [API, MAIL]

    rows = await audit_store.list_decisions(engine=service.engines.async_, viewer=ADA)
    shown = {r.thread_id: r for r in rows}
    assert (shown[small].via_label, shown[big].via_label) == ("page", "mail link")
    assert shown[big].deciders == "Dana (reviewer, #3) approved by API token; Ada (admin, #5) approved by mail link"
    table = {r["thread_id"]: r for r in csv.DictReader(io.StringIO(audit_store.to_csv(rows=rows)))}
    assert (table[small]["via"], table[big]["via"]) == (PAGE, MAIL)
    assert {r["thread_id"]: r["via"] for r in json.loads(audit_store.to_json(rows=rows))} == {small: PAGE, big: MAIL}
