"""The TLS client context the app's outbound HTTPS shares (``hitl_app/tls.py``)."""

from __future__ import annotations

import ssl

from hitl_app.tls import client_ssl_context
from hitl_app.webhooks.destinations import guarded_client


def test_one_verifying_context_serves_every_client_of_the_process():
    context = client_ssl_context()
    assert context is client_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the CA bundle is loaded: public HTTPS verifies


async def test_webhook_clients_use_the_shared_context_and_keep_their_guarded_pool():
    client = guarded_client(5.0)
    try:
        pool = client._transport._pool  # the guarded pool guarded_client puts in place
        assert pool._ssl_context is client_ssl_context()
        assert type(pool._network_backend).__name__ == "GuardedBackend"
    finally:
        await client.aclose()
