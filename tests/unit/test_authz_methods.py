"""--authz names who reads and who writes: every call of the contract is one or the other, so a
call added to the contract (Admit, Default, Decide) is not refused to every caller."""

from __future__ import annotations

from policyd.contract import policy_pb2 as pb
from policyd.server.authz import READ, WRITE, Policy


def test_every_policy_service_call_is_a_read_or_a_write() -> None:
    methods = {m.name for m in pb.DESCRIPTOR.services_by_name["PolicyService"].methods}
    assert not methods - (READ | WRITE)
    assert not READ & WRITE


def test_readers_may_ask_the_webhooks_calls_and_decide() -> None:
    readers = Policy(read=frozenset({"policy-webhook"}), write=frozenset())
    for method in ("Admit", "Default", "Decide"):
        assert readers.allows(method, ["policy-webhook"])
        assert not readers.allows(method, ["someone-else"])
