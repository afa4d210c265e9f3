"""The reminder mailer against a real SMTP server on loopback (aiosmtpd): certificates are checked
on STARTTLS, and the login password never goes over a connection without TLS."""

from __future__ import annotations

import datetime as dt
import ipaddress
import smtplib
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from hitl_app.reviewers.mailer import SmtpConfig, build_message, send_mail


class Server:
    """aiosmtpd handler and authenticator: keeps what it accepted and the logins it saw."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.logins: list[tuple[bytes, bool]] = []  # (user, over TLS)

    async def handle_DATA(self, server, session, envelope):
        self.received.append(envelope.content)
        return "250 OK"

    def __call__(self, server, session, envelope, mechanism, auth_data):
        self.logins.append((auth_data.login, session.ssl is not None))
        return AuthResult(success=True)


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def _pki(folder: Path) -> tuple[Path, Path, Path]:
    """A test CA and a server certificate for 127.0.0.1 it signed: (ca.pem, cert.pem, key.pem)."""
    now = dt.datetime.now(dt.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name("test CA")).issuer_name(_name("test CA"))
        .public_key(ca_key.public_key()).serial_number(1).not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert = (
        x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(2).not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def pki(tmp_path) -> tuple[Path, Path, Path]:
    return _pki(tmp_path)


@pytest.fixture
def smtp_server(pki) -> Iterator:
    """Start an SMTP server on loopback: ``start(starttls=bool)`` returns (Server, port)."""
    running: list[Controller] = []

    def start(*, starttls: bool) -> tuple[Server, int]:
        server, port = Server(), _free_port()
        tls = None
        if starttls:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(pki[1], pki[2])
        controller = Controller(server, hostname="127.0.0.1", port=port, tls_context=tls, require_starttls=False,
                                authenticator=server, auth_require_tls=False)
        controller.start()
        running.append(controller)
        return server, port

    yield start
    for controller in running:
        controller.stop()


def _mail(config: SmtpConfig):
    return build_message(config, to="rex@example.com", to_name="Rex", subject="A review waits", body="Please look.")


async def test_a_certificate_the_system_does_not_trust_stops_the_mail(smtp_server):
    server, port = smtp_server(starttls=True)
    config = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org", user="hitl", password="s3cret")
    with pytest.raises(ssl.SSLCertVerificationError):
        await send_mail(config, _mail(config))
    assert server.received == [] and server.logins == []


async def test_no_login_and_no_mail_without_tls_when_a_user_is_set(smtp_server):
    server, port = smtp_server(starttls=False)
    config = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org", user="hitl", password="s3cret")
    with pytest.raises(smtplib.SMTPException, match="TLS"):
        await send_mail(config, _mail(config))
    assert server.received == [] and server.logins == [], "the password went over a connection without TLS"


async def test_a_trusted_certificate_carries_the_login_and_the_mail(smtp_server, pki):
    server, port = smtp_server(starttls=True)
    trust = ssl.create_default_context(cafile=str(pki[0]))
    config = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org", user="hitl", password="s3cret",
                        tls_context=trust)
    await send_mail(config, _mail(config))
    assert server.logins == [(b"hitl", True)] and len(server.received) == 1


async def test_without_a_user_a_server_without_tls_still_gets_the_mail(smtp_server):
    server, port = smtp_server(starttls=False)  # a relay on the same host, no login
    config = SmtpConfig(host="127.0.0.1", port=port, sender="hitl@example.org")
    await send_mail(config, _mail(config))
    assert len(server.received) == 1
