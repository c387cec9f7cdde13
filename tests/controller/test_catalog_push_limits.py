"""A policyd that takes fewer objects in one request (--max-objects) than the controller pushes
at once: the push goes again with half as many objects per request until policyd takes them,
and policyd's catalog becomes the cluster's — replaced, updated and deleted alike — with the
keys that changed there reported as changed. Against a real daemon over a real socket."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from testkit.shared import RULES

from policyd.clients.controller.catalog_sync import CHUNK, CatalogSync
from policyd.clients.controller.kube import CatalogKey
from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .manifests import named_runtime

MAX_OBJECTS = 3


def runtimes(count: int, start: int = 0) -> dict[CatalogKey, dict[str, Any]]:
    out = {}
    for i in range(start, start + count):
        runtime = copy.deepcopy(named_runtime())
        runtime["metadata"]["name"] = f"rt-{i}"
        out[("ClusterServingRuntime", "", f"rt-{i}")] = runtime
    return out


@pytest.fixture
def policy() -> Iterator[policy_pb2_grpc.PolicyServiceStub]:
    args = ["--rules", str(RULES), "--max-objects", str(MAX_OBJECTS), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address, grpc.insecure_channel(address) as channel:
        yield policy_pb2_grpc.PolicyServiceStub(channel)


def held(policy: policy_pb2_grpc.PolicyServiceStub) -> int:
    return int(policy.GetStatus(pb.GetStatusRequest()).runtimes)


def test_a_push_over_policyds_max_objects_goes_again_in_halves_until_policyd_takes_it(
    policy: policy_pb2_grpc.PolicyServiceStub,
) -> None:
    sync = CatalogSync(policy, "policyd")
    desired = runtimes(10)
    assert sorted(sync.replace(desired)) == sorted(desired)
    assert held(policy) == 10
    assert sync.chunk <= MAX_OBJECTS < CHUNK

    added, gone = runtimes(4, start=10), list(desired)[:5]
    changes: dict[CatalogKey, dict[str, Any] | None] = {**added, **dict.fromkeys(gone)}
    assert sorted(sync.update(changes)) == sorted([*added, *gone])
    assert held(policy) == 10 - 5 + 4


def test_a_daemon_that_takes_the_whole_push_gets_it_in_one_request(
    policy: policy_pb2_grpc.PolicyServiceStub,
) -> None:
    sync = CatalogSync(policy, "policyd")
    assert sorted(sync.replace(runtimes(MAX_OBJECTS))) == sorted(runtimes(MAX_OBJECTS))
    assert sync.chunk == CHUNK and held(policy) == MAX_OBJECTS
