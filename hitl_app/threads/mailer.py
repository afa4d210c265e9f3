"""Sending one plain-text mail over SMTP (the review reminders).

Python's own ``smtplib``, run in a worker thread (``asyncio.to_thread``) so the event loop never
waits on the network: reminders are rare (at most one per reviewer per review), so a kept,
dependency-free client is enough and ``aiosmtplib`` would add a package for no gain. STARTTLS is
used whenever the server offers it; a login is made only when a user is set.
"""

from __future__ import annotations

import asyncio
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formataddr, make_msgid

SMTP_TIMEOUT_S = 15.0
"""Longest wait for the SMTP server, per connection and per reply."""
HEADER_CHARS = 200
"""Longest subject, in characters (one line)."""


@dataclass(frozen=True)
class SmtpConfig:
    """Where and how to send: ``host``/``port``, optional ``user``/``password``, ``sender`` address."""

    host: str
    port: int
    sender: str
    user: str | None = None
    password: str | None = None
    timeout_s: float = SMTP_TIMEOUT_S


def one_line(text: str, limit: int = HEADER_CHARS) -> str:
    """``text`` folded onto one line (no CR/LF can reach a header), cut to ``limit`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def build_message(config: SmtpConfig, *, to: str, to_name: str, subject: str, body: str) -> EmailMessage:
    """A plain-text message from ``config.sender`` to ``to``; header values are made single-line."""
    message = EmailMessage()
    message["From"] = one_line(config.sender, 320)
    message["To"] = formataddr((one_line(to_name, 100), one_line(to, 320)))
    message["Subject"] = one_line(subject)
    message["Message-ID"] = make_msgid(domain="hitl-app.local")
    message.set_content(body)
    return message


def _send_blocking(config: SmtpConfig, message: EmailMessage) -> None:
    with smtplib.SMTP(config.host, config.port, timeout=config.timeout_s) as smtp:
        smtp.ehlo()
        if smtp.has_extn("starttls"):
            smtp.starttls()
            smtp.ehlo()
        if config.user:
            smtp.login(config.user, config.password or "")
        smtp.send_message(message)


async def send_mail(config: SmtpConfig, message: EmailMessage) -> None:
    """Hand ``message`` to the SMTP server (in a worker thread).

    Raises:
        smtplib.SMTPException or OSError: the server refused it or could not be reached.
    """
    await asyncio.to_thread(_send_blocking, config, message)
