"""Where a webhook may go (QA, issue 22: an admin's URL reached the cloud metadata address and a
private Redis, and the answers were logged): never link-local, metadata, multicast or unspecified;
private and loopback only inside an allowed network; a name counts by every address it has."""

from __future__ import annotations

import ipaddress

import pytest

from hitl_app.webhooks.destinations import (
    DestinationRefused,
    checked_addresses,
    checked_destination,
    parse_networks,
    refusal,
)

LOOPBACK = parse_networks("127.0.0.1/32")


@pytest.mark.parametrize("address", ["169.254.169.254", "fe80::1", "fd00:ec2::254", "0.0.0.0", "224.0.0.1",
                                     "::ffff:169.254.169.254"])
def test_metadata_link_local_and_unspecified_addresses_are_refused_even_when_allowed(address):
    assert refusal(ipaddress.ip_address(address), parse_networks("0.0.0.0/0,::/0")) is not None


@pytest.mark.parametrize("address", ["10.0.0.1", "192.168.1.5", "172.16.0.9", "127.0.0.1", "::1", "100.64.0.1",
                                     "::ffff:10.0.0.1"])
def test_private_and_loopback_addresses_are_refused_unless_their_network_is_allowed(address):
    ip = ipaddress.ip_address(address)
    assert "HITL_WEBHOOK_ALLOW_NETWORKS" in (refusal(ip) or "")
    widest = parse_networks("10.0.0.0/8,192.168.0.0/16,172.16.0.0/12,127.0.0.0/8,::1/128,100.64.0.0/10")
    assert refusal(ip, widest) is None


def test_a_public_address_is_a_destination():
    assert refusal(ipaddress.ip_address("93.184.216.34")) is None


async def test_a_name_counts_by_every_address_it_resolves_to():
    with pytest.raises(DestinationRefused, match="localhost: "):
        await checked_addresses("localhost", 80)
    assert "127.0.0.1" in await checked_addresses("localhost", 80, parse_networks("127.0.0.0/8,::1/128"))


async def test_a_new_endpoint_gets_the_form_and_the_destination_checks():
    with pytest.raises(ValueError, match="never sent there"):
        await checked_destination("http://169.254.169.254/latest/meta-data/", LOOPBACK)
    with pytest.raises(ValueError, match="HITL_WEBHOOK_ALLOW_NETWORKS"):
        await checked_destination("http://10.0.0.1:6379/")
    with pytest.raises(ValueError, match="user and password"):
        await checked_destination("http://a:b@127.0.0.1/hooks", LOOPBACK)
    assert await checked_destination(" http://127.0.0.1:8787/hooks ", LOOPBACK) == "http://127.0.0.1:8787/hooks"


def test_a_bad_allowed_network_is_named():
    with pytest.raises(ValueError, match="'ten-dot' is not a network"):
        parse_networks("127.0.0.1/32, ten-dot")
