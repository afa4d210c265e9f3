"""A plain HTML ``<form>`` that the browser submits itself (a real POST and page load).

``rx.el.form`` always adds an ``onSubmit`` that calls ``preventDefault`` (Reflex handles forms over
the websocket), so a form posting to an HTTP route (sign-in, sign-out: the server answers with a
``Set-Cookie`` and a redirect) needs this element instead.
"""

# Tested by: tests/e2e/test_accounts.py

from __future__ import annotations

from reflex.components.component import field
from reflex.vars.base import Var
from reflex_components_core.el.elements.base import BaseHTML


class PlainForm(BaseHTML):
    """``<form action method>`` without Reflex's submit handler."""

    tag = "form"

    action: Var[str] = field(doc="URL the form posts to")
    method: Var[str] = field(doc="HTTP method (post)")


plain_form = PlainForm.create
"""``plain_form(*children, action="/auth/sign-in", method="post", **props)``."""
