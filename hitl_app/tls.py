"""The TLS client context the app's outbound HTTPS shares (webhook deliveries, single sign-on).

Building a context loads the whole CA bundle (httpx's ``create_ssl_context``: certifi's file, or
``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set): about 30 ms of CPU each time on this 2-core machine
(``python -c "import httpx; ..."``, 10 contexts in 0.32 s), and every ``httpx`` client or transport
made without one builds its own. One context serves every client of the process: Python's ``ssl``
documentation describes ``SSLContext`` as the holder of the settings and certificates that outlive
single connections, meant to be shared by them.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def client_ssl_context() -> ssl.SSLContext:
    """The process's verifying client context (httpx's defaults: certificate and host name checked;
    built on first use, then the same object). Pass it as ``verify=`` to ``httpx`` clients."""
    return httpx.create_ssl_context()
