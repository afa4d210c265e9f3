"""Sending one plain-text mail over SMTP (the review reminders).

Python's own ``smtplib``, run in a worker thread (``asyncio.to_thread``) so the event loop never
waits on the network: reminders are rare (at most one per reviewer per review), so a kept,
dependency-free client is enough and ``aiosmtplib`` would add a package for no gain.

TLS: on port 465 the connection starts with TLS; elsewhere STARTTLS is used whenever the server
offers it. Either way the server's certificate and host name are checked against the system's CAs
(``ssl.create_default_context()``). A login is made only when a user is set, and only over TLS:
with a user set and no TLS on offer, nothing is sent (``InsecureSmtp``).
"""

from __future__ import annotations

import asyncio
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formataddr, make_msgid

SMTP_TIMEOUT_S = 15.0
"""Longest wait for the SMTP server, per connection and per reply."""
HEADER_CHARS = 200
"""Longest subject, in characters (one line)."""


@dataclass(frozen=True)
class SmtpConfig:
    """Where and how to send: ``host``/``port``, optional ``user``/``password``, ``sender`` address;
    ``tls_context`` for STARTTLS or implicit TLS (port 465)."""

    host: str
    port: int
    sender: str
    user: str | None = None
    password: str | None = None
    timeout_s: float = SMTP_TIMEOUT_S
    tls_context: ssl.SSLContext | None = None
    """Certificates to trust (default: ``ssl.create_default_context()``, the system's CAs)."""


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


IMPLICIT_TLS_PORT = 465
"""The SMTP port on which TLS starts with the connection (``SMTP_SSL``) instead of STARTTLS."""


class InsecureSmtp(smtplib.SMTPException):
    """The server offered no TLS, and a login was configured: the password is not sent in clear."""


def _tls(config: SmtpConfig) -> ssl.SSLContext:
    return config.tls_context or ssl.create_default_context()


def _send_blocking(config: SmtpConfig, message: EmailMessage) -> None:
    smtp: smtplib.SMTP
    if config.port == IMPLICIT_TLS_PORT:
        smtp = smtplib.SMTP_SSL(config.host, config.port, timeout=config.timeout_s, context=_tls(config))
    else:
        smtp = smtplib.SMTP(config.host, config.port, timeout=config.timeout_s)
    with smtp:
        smtp.ehlo()
        secure = isinstance(smtp, smtplib.SMTP_SSL)
        if not secure and smtp.has_extn("starttls"):
            smtp.starttls(context=_tls(config))  # verifies the certificate and the host name
            smtp.ehlo()
            secure = True
        if config.user:
            if not secure:
                raise InsecureSmtp(f"{config.host}:{config.port} offers no TLS; not logging in (the password would go in clear)")
            smtp.login(config.user, config.password or "")
        smtp.send_message(message)


async def send_mail(config: SmtpConfig, message: EmailMessage) -> None:
    """Hand ``message`` to the SMTP server (in a worker thread).

    Raises:
        smtplib.SMTPException or OSError: the server refused it or could not be reached;
            ``InsecureSmtp`` (an ``SMTPException``): a user is set and the server offers no TLS;
            ``ssl.SSLCertVerificationError`` (an ``OSError``): its certificate does not verify.
    """
    await asyncio.to_thread(_send_blocking, config, message)
