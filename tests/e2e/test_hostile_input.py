"""The issue's reproductions of hostile input and poison, each through the real daemon: every one is
refused at the door with INVALID_ARGUMENT naming the field (or RESOURCE_EXHAUSTED / DEADLINE_EXCEEDED
for a limit), and nothing accepted breaks a later Select, Explain or GetObjects."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
import yaml

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.metadata_keys import FIELD_KEY

from .support import REPO, RULES

CATALOG = REPO / "examples" / "catalog"
RUNTIME = next(d for d in yaml.safe_load_all((CATALOG / "llama-runtimes.yaml").read_text()) if d)
ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama-3-2-3b-instruct", "namespace": "llama-demo"},
    "spec": {"model": {"name": "llama-3-2-3b-instruct"}, "engine": {"minReplicas": 1}},
}
BOMB = "".join(f"    l{i}: &l{i} [" + ",".join([f"*l{i - 1}" if i else "lol"] * 9) + "]\n" for i in range(9))


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    args = ["--rules", str(RULES), "--catalog", str(CATALOG), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as served:
        yield served


def _stub(address: str) -> policy_pb2_grpc.PolicyServiceStub:
    return policy_pb2_grpc.PolicyServiceStub(grpc.insecure_channel(address))


def _refused(call: Any) -> tuple[grpc.StatusCode, str, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    err = caught.value
    field = next((v for k, v in err.trailing_metadata() or () if k == FIELD_KEY), "")
    return err.code(), err.details(), field


def _select(address: str, *objects: rpb.Object, isvc: rpb.InferenceServiceInput | None = None) -> Any:
    request = pb.SelectRequest(
        inference_service=isvc or rpb.InferenceServiceInput(manifest=json.dumps(ISVC)),
        catalog=pb.RequestCatalog(objects=objects),
    )
    return lambda: _stub(address).Select(request, timeout=30)


def _runtime(mutate: Any, name: str = "hostile") -> dict[str, Any]:
    doc = copy.deepcopy(RUNTIME)
    doc["kind"], doc["metadata"] = "ClusterServingRuntime", {"name": name}
    mutate(doc["spec"]["supportedModelFormats"][0])
    return doc


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        (
            yaml.safe_dump(_runtime(lambda e: None)).replace("priority: 1", "priority: " + "9" * 5000),
            "catalog.objects[0].manifest",
            "more than 40 digits",
        ),
        (
            "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: x}\nspec: &s {self: *s}\n",
            "catalog.objects[0].spec.self",
            "an alias refers to a node that contains it",
        ),
        (
            yaml.safe_dump(_runtime(lambda e: None)).replace("engineConfig:\n", "engineConfig:\n  bomb:\n" + BOMB, 1),
            "catalog.objects[0].spec.bomb.l5[0]",
            "aliases expand the document by more than 100,000 values",
        ),
        (
            json.dumps(_runtime(lambda e: e.update(priority=100000000000000000000))),
            "catalog.objects[0].spec.supportedModelFormats[0].priority",
            "integer out of range: more than 64 bits",
        ),
        (
            json.dumps(_runtime(lambda e: e.update(priority=2**40))),
            "catalog.objects[0].spec.supportedModelFormats[0].priority",
            "must be between 1 and 2147483647",
        ),
        (
            json.dumps(_runtime(lambda e: e["modelFormat"].update(weight=3000000000))),
            "catalog.objects[0].spec.supportedModelFormats[0].modelFormat.weight",
            "must be between -2147483648 and 2147483647",
        ),
        (
            json.dumps(
                _runtime(
                    lambda e: e.update(
                        acceleratorConfig={"a100": {"tensorParallelismOverride": {"tensorParallelSize": "four"}}}
                    )
                )
            ),
            "catalog.objects[0].spec.supportedModelFormats[0].acceleratorConfig.a100",
            "tensorParallelSize",
        ),
        ("kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {x: .inf}\n", "catalog.objects[0].spec.x", "inf"),
    ],
    ids=[
        "5000-digit-priority",
        "self-referential-alias",
        "alias-bomb",
        "priority-1e20",
        "priority-2^40",
        "weight-3e9",
        "word-in-acceleratorConfig",
        "infinity",
    ],
)
def test_hostile_manifest_values_are_invalid_argument_naming_the_field(
    address: str, text: str, field: str, message: str
) -> None:
    code, details, named = _refused(_select(address, rpb.Object(manifest=text)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and named == field and message in details, (code, named, details)


def test_a_backtracking_version_is_read_as_ome_reads_it_matching_no_version(address: str) -> None:
    hostile = _runtime(lambda e: e["modelFramework"].update(version="1" + "a." * 27 + "!"))
    reply = _select(address, rpb.Object(manifest=json.dumps(hostile)))()
    assert "hostile" not in [r.name for r in reply.ranking]


def test_nan_and_infinity_in_a_typed_messages_struct_are_invalid_argument_naming_the_field(address: str) -> None:
    runtime = rpb.ServingRuntime(kind="ClusterServingRuntime", metadata=rpb.ObjectMeta(name="nan"))
    entry = runtime.spec.supported_model_formats.add()
    entry.model_format.name, entry.model_framework.name = "safetensors", "transformers"
    runtime.spec.engine_config.pod.update({"nodeSelector": {"x": float("nan")}})
    code, _, field = _refused(_select(address, rpb.Object(runtime=runtime)))
    assert (code, field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "catalog.objects[0].runtime.spec.engineConfig.pod.nodeSelector.x",
    )
    typed = rpb.InferenceServiceInput()
    typed.typed.metadata.name = "x"
    typed.typed.spec.model.name = "llama-3-2-3b-instruct"
    typed.typed.spec.accelerator_override.update({"acceleratorClass": float("inf")})
    code, _details, field = _refused(_select(address, isvc=typed))
    assert (code, field) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "inference_service.typed.spec.acceleratorOverride.acceleratorClass",
    )


def test_bytes_that_are_no_request_are_invalid_argument(address: str) -> None:
    call = grpc.insecure_channel(address).unary_unary("/ome.policy.v1.PolicyService/Select")
    with pytest.raises(grpc.RpcError) as caught:
        call(b"\xff\xff\xff\xff", timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid Select request" in caught.value.details()


def test_a_date_is_kept_as_text_and_answers_stay_answerable(address: str) -> None:
    text = yaml.safe_dump(_runtime(lambda e: None, "dated")).replace(
        "autoSelect: true", "autoSelect: true\n    created: 2024-01-01"
    )
    stub = _stub(address)
    assert stub.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=text)]), timeout=10).changes
    got = stub.GetObjects(
        pb.GetObjectsRequest(keys=[pb.ObjectKey(kind="ClusterServingRuntime", name="dated")]), timeout=10
    )
    assert json.loads(got.objects[0].manifest)["spec"]["supportedModelFormats"][0]["created"] == "2024-01-01"
    assert _select(address)().ranking
    stub.DeleteObjects(pb.DeleteObjectsRequest(keys=[pb.ObjectKey(kind="ClusterServingRuntime", name="dated")]))


@pytest.fixture(scope="module")
def limited() -> Iterator[str]:
    args = [
        "--rules",
        str(RULES),
        "--catalog",
        str(CATALOG),
        "--log-level",
        "warning",
        "--max-objects",
        "5",
        "--max-manifest-bytes",
        "20000",
        "--max-message-bytes",
        "200000",
        "--call-timeout",
        "0.001",
    ]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as served:
        yield served


@pytest.fixture(scope="module")
def one_at_a_time() -> Iterator[str]:
    """A daemon serving one call at a time (a daemon of its own: the limit would also refuse the
    other tests' calls while the last call's end is still being processed)."""
    args = ["--rules", str(RULES), "--log-level", "warning", "--max-concurrent-rpcs", "1", "--workers", "1"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as served:
        yield served


def test_limits_are_resource_exhausted_naming_the_limit(limited: str) -> None:
    objects = [rpb.Object(manifest=json.dumps(RUNTIME))] * 6
    code, details, field = _refused(_select(limited, *objects))
    assert (code, field) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "catalog.objects")
    assert "6 items are more than the limit of 5" in details
    big = rpb.Object(manifest=json.dumps({**RUNTIME, "padding": "x" * 30000}))
    code, details, field = _refused(_select(limited, big))
    assert (code, field) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "catalog.objects[0]")
    huge = rpb.Object(manifest="x" * 300000)
    code, details, _ = _refused(_select(limited, huge))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED


# five YAML parses take longer than --call-timeout 0.001 (JSON is read too quickly to be sure of it)
SLOW_OBJECTS = [rpb.Object(manifest=yaml.safe_dump(RUNTIME))] * 5


def test_a_call_past_its_deadline_is_deadline_exceeded(limited: str) -> None:
    code, details, _ = _refused(_select(limited, *SLOW_OBJECTS))
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED and "deadline" in details


# a thousand YAML parses: a call in progress for far longer than starting the others takes
BUSY_OBJECTS = [rpb.Object(manifest=yaml.safe_dump(RUNTIME))] * 1000


def test_calls_beyond_the_concurrency_limit_are_resource_exhausted(one_at_a_time: str) -> None:
    codes: list[grpc.StatusCode] = []
    call = _select(one_at_a_time, *BUSY_OBJECTS)

    def one() -> None:
        try:
            call()
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as err:
            codes.append(err.code())

    threads = [threading.Thread(target=one) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes and grpc.StatusCode.OK in codes
    assert set(codes) <= {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.OK}
