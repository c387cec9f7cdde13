"""Clients take several host:port addresses, comma-separated, as one channel that balances its
calls over them (gRPC round_robin over their IP addresses); an address the list cannot hold is
refused naming it."""

from __future__ import annotations

import json

import pytest

from policyd.clients.channels import AddressError, target_of


def test_one_address_is_the_target_as_written() -> None:
    assert target_of("policyd.example:50051")[0] == "policyd.example:50051"
    assert target_of("unix:/tmp/policyd.sock")[0] == "unix:/tmp/policyd.sock"
    assert "round_robin" not in dict(target_of("policyd.example:50051")[1])["grpc.service_config"]


def test_a_dns_name_is_balanced_over_every_address_it_resolves_to_sending_calls_to_serving_replicas() -> None:
    target, options = target_of("dns:///policyd-headless.ome.svc:50051")
    config = json.loads(dict(options)["grpc.service_config"])
    assert target == "dns:///policyd-headless.ome.svc:50051"
    assert config["loadBalancingConfig"] == [{"round_robin": {}}]
    assert config["healthCheckConfig"] == {"serviceName": ""}  # a replica still listing the cluster gets no call


@pytest.mark.parametrize("address", ["policyd.example:50051", "127.0.0.1:1,127.0.0.1:2", "dns:///policyd:50051"])
def test_a_call_a_replica_could_not_take_goes_again_and_a_policyd_back_is_dialled_within_seconds(
    address: str,
) -> None:
    options = dict(target_of(address)[1])
    (method,) = json.loads(options["grpc.service_config"])["methodConfig"]
    assert method["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert options["grpc.max_reconnect_backoff_ms"] <= 2000


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
