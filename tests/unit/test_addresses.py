"""Clients take several host:port addresses, comma-separated, as one channel that balances its
calls over them (gRPC round_robin over their IP addresses); an address the list cannot hold is
refused naming it."""

from __future__ import annotations

import pytest

from clients.channels import AddressError, target_of


def test_one_address_is_the_target_as_written() -> None:
    assert target_of("policyd.example:50051") == ("policyd.example:50051", [])
    assert target_of("unix:/tmp/policyd.sock") == ("unix:/tmp/policyd.sock", [])


def test_several_addresses_are_their_ip_addresses_balanced_round_robin() -> None:
    target, options = target_of("localhost:50051, 127.0.0.1:50052")  # localhost: its IPv4 address, as 127.0.0.1's
    assert target == "ipv4:127.0.0.1:50051,127.0.0.1:50052"
    assert dict(options)["grpc.default_authority"] == "localhost:50051"
    assert "round_robin" in dict(options)["grpc.service_config"]
    assert target_of("[::1]:1,[::1]:2")[0] == "ipv6:[::1]:1,[::1]:2"


@pytest.mark.parametrize(
    ("address", "named"),
    [
        ("127.0.0.1:1,policyd", "'policyd' is not host:port"),
        ("127.0.0.1:1,unix:/tmp/s.sock", "'unix:/tmp/s.sock' is not host:port"),
        ("127.0.0.1:1,[::1]:2", "mixes IPv4 and IPv6"),
        ("127.0.0.1:1,no-such-host.invalid:2", "cannot resolve 'no-such-host.invalid'"),
    ],
)
def test_an_address_a_list_cannot_hold_is_refused_naming_it(address: str, named: str) -> None:
    with pytest.raises(AddressError, match="address") as err:
        target_of(address)
    assert named in str(err.value)
