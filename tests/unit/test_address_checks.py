"""An address that cannot be one is refused before any connection, saying what is wrong with it:
gRPC would take it as a name to resolve and fail every call (`policy-webhook --policyd bogus:::`
served, denying every review)."""

from __future__ import annotations

import pytest

from policyd.clients.channels import AddressError, target_of


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("bogus:::", "no port (give host:port)"),
        ("127.0.0.1", "no port (give host:port)"),
        ("dns:///policyd", "no port (give host:port)"),
        ("127.0.0.1:99999", "port '99999' is not a number from 1 to 65535"),
        ("127.0.0.1:0", "port '0' is not a number from 1 to 65535"),
        ("127.0.0.1:²", "port '²' is not a number from 1 to 65535"),
        ("http://127.0.0.1:50051", "give host:port, without a URL scheme"),
        (":50051", "'' is not a host name or IP address (IPv6 in brackets)"),
        ("::1:50051", "'::1' is not a host name or IP address (IPv6 in brackets)"),
    ],
)
def test_an_address_that_cannot_be_one_is_refused_saying_why(address: str, why: str) -> None:
    with pytest.raises(AddressError) as err:
        target_of(address)
    assert str(err.value) == f"address {address!r}: {why}"


@pytest.mark.parametrize(
    "address",
    [
        "localhost:50051",
        "[::1]:50051",
        "policyd.ome.svc:50051",
        "dns:///policyd-headless.ome.svc:50051",
        "dns:policyd:50051",
        "dns://10.0.0.10/policyd:50051",
        "unix:/tmp/policyd.sock",
        "unix-abstract:policyd",
    ],
)
def test_every_form_gRPC_takes_is_taken_as_written(address: str) -> None:
    assert target_of(address)[0] == address
