"""The audit's ``via`` words: which say a person decided, and how the audit page names them."""

from hitl_app.review.via import API, DEADLINE, MAIL, PAGE, by_machine, via_label


def test_only_the_deadline_and_grants_are_machines():
    assert by_machine(DEADLINE) and by_machine("grant:12")
    assert not any(by_machine(v) for v in (PAGE, API, MAIL, None, ""))


def test_each_door_has_a_plain_label():
    assert [via_label(v) for v in (PAGE, API, MAIL, DEADLINE, "grant:7", None, "fax")] == [
        "page", "API token", "mail link", "deadline", "grant #7", "page", "fax"]
