"""Where a webhook may be delivered: the one rule, checked when an endpoint is registered and again
at every connection.

An admin types a URL and the app POSTs to it from inside the network it runs in, and shows what
the other side answered: without a rule that is a port scanner and a reader of cloud metadata
services for whoever holds an admin session (QA, issue 22: ``http://169.254.169.254/...`` and
``http://10.0.0.1:6379/`` were accepted and their answers logged). So:

* link-local addresses (``169.254.0.0/16``, ``fe80::/10``: the cloud metadata services live there),
  multicast, unspecified (``0.0.0.0``, ``::``) and the IPv6 metadata address ``fd00:ec2::254`` are
  always refused;
* private, loopback, shared (``100.64.0.0/10``) and reserved addresses are refused unless a network
  of ``HITL_WEBHOOK_ALLOW_NETWORKS`` (comma-separated CIDRs, e.g. ``127.0.0.1/32,10.20.0.0/16``)
  holds them: a receiver on the same machine or the team's own network is allowed by name, nothing
  else inside is;
* a host name counts by every address it resolves to (all must be allowed), and the connection is
  made to the address that was checked (``GuardedBackend``), so a name that resolves elsewhere on
  the second look (DNS rebinding) cannot slip past the check.

Source of the address kinds: Python's ``ipaddress`` module (IANA special-purpose registries).
"""

# Tested by: tests/unit/webhooks/test_destinations.py, tests/integration/webhooks/test_webhook_delivery.py

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from hitl_app.tls import client_ssl_context

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA = (ipaddress.ip_address("fd00:ec2::254"),)
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class DestinationRefused(ValueError):
    """A webhook URL whose host is not a place the app delivers to; the message is the sentence to show."""


def parse_networks(text: str) -> tuple[Network, ...]:
    """``HITL_WEBHOOK_ALLOW_NETWORKS`` read: comma-separated CIDRs (a bare address is one host).
    Raises ValueError naming the entry that is not a network."""
    out: list[Network] = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        try:
            out.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"HITL_WEBHOOK_ALLOW_NETWORKS: {entry!r} is not a network such as 127.0.0.1/32") from None
    return tuple(out)


def refusal(address: Address, allowed: Sequence[Network] = ()) -> str | None:
    """Why ``address`` is no webhook destination (a sentence), or None when it is one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_link_local or address.is_multicast or address.is_unspecified or address in _METADATA:
        return f"{address} is a link-local, multicast or unspecified address; webhooks are never sent there."
    inside = address.is_private or address.is_loopback or address.is_reserved or address in _SHARED
    if inside and not any(address.version == n.version and address in n for n in allowed):
        return (f"{address} is a private or loopback address; allow its network with "
                "HITL_WEBHOOK_ALLOW_NETWORKS to deliver there.")
    return None


async def checked_addresses(host: str, port: int, allowed: Sequence[Network] = ()) -> list[str]:
    """Every address ``host`` resolves to, each checked (``refusal``); raises DestinationRefused
    naming the first refused one, or when the name does not resolve."""
    try:
        literal: Address | None = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        found = [str(literal)]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise DestinationRefused(f"The host {host} cannot be found.") from None
        found = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for text in found:
        if (why := refusal(ipaddress.ip_address(text.split("%", 1)[0]), allowed)) is not None:
            raise DestinationRefused(f"{host}: {why}" if literal is None else why)
    return found


def checked_url(raw: str) -> str:
    """The endpoint URL as typed, its form checked: http or https, a host, at most 2000
    characters, no user or password in it. Raises ValueError with the sentence to show."""
    url = raw.strip()
    parts = urlsplit(url)
    if len(url) > 2000:
        raise ValueError("The URL is longer than 2000 characters.")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("Give a full http:// or https:// URL, e.g. https://example.com/hooks.")
    if parts.username or parts.password:
        raise ValueError("Leave the user and password out of the URL; deliveries are signed instead.")
    return url


async def checked_destination(raw: str, allowed: Sequence[Network] = ()) -> str:
    """``checked_url``, then its host's addresses against the rule (``checked_addresses``): the
    check an admin's new endpoint gets. Raises ValueError (DestinationRefused is one) with the
    sentence to show."""
    url = checked_url(raw)
    parts = urlsplit(url)
    await checked_addresses(str(parts.hostname), parts.port or (443 if parts.scheme == "https" else 80), allowed)
    return url


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the rule at connect time: the host is resolved here, every
    address checked, and the connection made to the first one (TLS still names the host)."""

    def __init__(self, allowed: Sequence[Network] = ()) -> None:
        self._allowed = tuple(allowed)
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """Resolve and check ``host`` (``checked_addresses``), then connect to its first address;
        a refused destination raises ``httpcore.ConnectError`` with the reason (httpx's ConnectError)."""
        try:
            addresses = await checked_addresses(host, port, self._allowed)
        except DestinationRefused as exc:
            raise httpcore.ConnectError(str(exc)) from None
        return await self._inner.connect_tcp(addresses[0], port, timeout=timeout, local_address=local_address,
                                             socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        """Refused: a webhook goes over TCP only."""
        raise httpcore.ConnectError("webhooks are not sent to local sockets")

    async def sleep(self, seconds: float) -> None:
        """Httpcore's retry pause, from the inner backend."""
        await self._inner.sleep(seconds)


def guarded_client(timeout_s: float, allowed: Sequence[Network] = ()) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` whose every connection obeys the rule (``GuardedBackend``); no
    redirects followed, no proxy from the environment."""
    context = client_ssl_context()
    transport = httpx.AsyncHTTPTransport(verify=context)
    # httpx 0.28 builds its httpcore pool in the transport; the same pool, with the guarded backend
    transport._pool = httpcore.AsyncConnectionPool(ssl_context=context, network_backend=GuardedBackend(allowed))
    return httpx.AsyncClient(transport=transport, follow_redirects=False, timeout=httpx.Timeout(timeout_s),
                             trust_env=False)
