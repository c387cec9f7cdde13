"""Hostile input, property-based (hypothesis, a fixed budget of examples, derandomized so CI runs
the same ones): every RPC of policyd and the renderer answers random bytes, mutated messages,
manifests carrying hostile values and heavy YAML with a status that names the problem — never
INTERNAL or UNKNOWN — and the daemon's memory stays bounded; the catalog loader and the rule loader
refuse what they cannot take with their own errors, never an exception of another kind."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit.catalog_dir import load_directory

from policyd.catalog.source import CatalogSource
from policyd.contract import policy_pb2 as pb
from policyd.contract import render_pb2 as rdpb
from policyd.contract import resources_pb2 as rpb
from policyd.policy.loader import RuleFileError
from policyd.policy.revision import build_revision

from .support import REPO, RULES, started

EXAMPLES = settings(
    max_examples=90,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ANSWERS = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED}
CATALOG = REPO / "examples" / "catalog"
RUNTIMES = [d for d in yaml.safe_load_all((CATALOG / "llama-runtimes.yaml").read_text()) if d]
MODELS = [d for d in yaml.safe_load_all((CATALOG / "models.yaml").read_text()) if d]
ISVC = yaml.safe_load((REPO / "examples" / "inferenceservices" / "llama-3-2-3b.yaml").read_text())
RSS_LIMIT_MB = 400  # the daemon starts near 60 MB; an alias bomb once took it past 1 GB

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
HEAVY = [
    BOMB,
    "apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {name: x}\nspec: &s {self: *s}\n",
    "[" * 5000,
    "kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {x: " + "9" * 5000 + "}\n",
    "kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {x: .inf, y: .nan}\n",
    "kind: ClusterBaseModel\nmetadata: {name: m, labels: {1: a, b: c, true: d}}\n",
    "kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {created: 2024-01-01, blob: !!binary aGk=}\n",
    yaml.safe_dump(RUNTIMES[0]).replace("version: 4.45.0.dev0", "version: '1" + "a." * 27 + "!'"),
    yaml.safe_dump(RUNTIMES[0]).replace("priority: 1", "priority: 100000000000000000000"),
]
HOSTILE = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([2**31, 2**63, 3_000_000_000, 10**20, -1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["four", "1e20", "2024-01-01", "", "1" + "a." * 27 + "!", "\x00"]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(min_value=-5, max_value=5), max_size=3),
)


def _paths(doc: Any) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            found.append((node, key))
            stack.append(value)
    return found


@st.composite
def manifests(draw: st.DrawFn) -> str:
    """A valid manifest with some values replaced by hostile ones, as JSON or YAML, or a heavy text."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(HEAVY))
    doc = copy.deepcopy(draw(st.sampled_from([ISVC, *RUNTIMES, *MODELS])))
    for _ in range(draw(st.integers(1, 3))):
        places = _paths(doc)
        parent, key = places[draw(st.integers(0, len(places) - 1))]
        parent[key] = draw(HOSTILE)
    if draw(st.booleans()):
        return json.dumps(doc, allow_nan=True)
    try:
        return yaml.safe_dump(doc)
    except (ValueError, yaml.YAMLError):
        return json.dumps(doc, allow_nan=True, default=str)


def _objects(texts: list[str]) -> list[rpb.Object]:
    return [rpb.Object(manifest=t) for t in texts]


def _typed_runtime(number: float) -> rpb.Object:
    runtime = rpb.ServingRuntime(kind="ClusterServingRuntime", metadata=rpb.ObjectMeta(name="typed"))
    entry = runtime.spec.supported_model_formats.add()
    entry.model_format.name, entry.model_framework.name = "safetensors", "transformers"
    runtime.spec.engine_config.pod.update({"x": number})
    return rpb.Object(runtime=runtime)


@st.composite
def requests(draw: st.DrawFn, rpc: str) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.binary(max_size=300))
    text = draw(manifests())
    number = draw(st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 1.5]))
    isvc = rpb.InferenceServiceInput(manifest=json.dumps(ISVC))
    extra = [*_objects([text]), _typed_runtime(number)] if kind != 3 else _objects([json.dumps(RUNTIMES[0])])
    if kind == 3:  # the InferenceService itself hostile, typed with a non-finite Struct value
        isvc = rpb.InferenceServiceInput(manifest=text) if draw(st.booleans()) else rpb.InferenceServiceInput()
        if not isvc.manifest:
            isvc.typed.metadata.name = "x"
            isvc.typed.spec.model.name = "llama-3-2-3b-instruct"
            isvc.typed.spec.accelerator_override.update({"acceleratorClass": number})
    catalog = pb.RequestCatalog(objects=extra, isolated=draw(st.booleans()))
    message: Any
    if rpc in ("Select", "Resolve", "Effective"):
        message = getattr(pb, f"{rpc}Request")(inference_service=isvc, catalog=catalog)
    elif rpc == "Explain":
        message = pb.ExplainRequest(inference_service=isvc, catalog=catalog)
    elif rpc == "InspectModel":
        message = pb.InspectModelRequest(base_model=rpb.Object(manifest=text))
        message.config.update({"architectures": ["LlamaForCausalLM"], "hidden_size": number})
    elif rpc == "ApplyObjects":
        message = pb.ApplyObjectsRequest(objects=extra)
    elif rpc in ("DeleteObjects", "GetObjects"):
        names = draw(st.lists(st.text(max_size=20), max_size=3))
        kinds = draw(st.lists(st.sampled_from(["ClusterServingRuntime", "BaseModel", "", "Pod"]), max_size=3))
        keys = [pb.ObjectKey(kind=k, name=n) for k, n in zip(kinds, names, strict=False)]
        message = getattr(pb, f"{rpc}Request")(keys=keys)
    elif rpc == "GetStatus":
        message = pb.GetStatusRequest()
    else:  # Render
        message = rdpb.RenderRequest(
            inference_service=isvc,
            runtime=draw(st.sampled_from(extra)),
            model=rpb.Object(manifest=draw(manifests())),
            modes=[pb.ComponentMode(component="engine", mode="RawDeployment")],
            entry_index=draw(st.integers(-2, 3)),
        )
    data = message.SerializeToString()
    flips = draw(st.lists(st.tuples(st.integers(0, max(len(data) - 1, 0)), st.integers(0, 255)), max_size=4))
    if draw(st.integers(0, 3)) == 0 and data:
        mutable = bytearray(data)
        for at, value in flips:
            mutable[at] = value
        data = bytes(mutable)
    return data


def _rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("fuzz")
    daemon = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--catalog", str(CATALOG)]
    renderer = [sys.executable, "-m", "policyd.clients.renderer.main"]
    with (
        started(
            [*daemon, "--log-level", "error", "--listen", "127.0.0.1:0", "--ready-file", str(tmp / "d")], tmp / "d"
        ) as policyd,
        started([*renderer, "--listen", f"unix:{tmp}/r.sock", "--ready-file", str(tmp / "r")], tmp / "r") as render,
    ):
        address = (tmp / "d").read_text()
        with grpc.insecure_channel(address) as channel, grpc.insecure_channel((tmp / "r").read_text()) as rchannel:
            yield {"policyd": policyd, "channel": channel, "renderer": render, "rchannel": rchannel}


def _status(channel: grpc.Channel, method: str, data: bytes) -> grpc.StatusCode:
    call = channel.unary_unary(method)  # bytes in, bytes out: whatever the client sends
    try:
        call(data, timeout=30)
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return,attr-defined]
    return grpc.StatusCode.OK


RPCS = ["Select", "Explain", "Resolve", "Effective", "InspectModel", "ApplyObjects", "DeleteObjects", "GetObjects"]


@pytest.mark.parametrize("rpc", [*RPCS, "GetStatus"])
def test_every_rpc_answers_hostile_input_with_a_status_naming_the_problem(servers: dict[str, Any], rpc: str) -> None:
    @EXAMPLES
    @given(requests(rpc))
    def check(data: bytes) -> None:
        code = _status(servers["channel"], f"/ome.policy.v1.PolicyService/{rpc}", data)
        assert code in ANSWERS, f"{rpc} answered {code.name}"

    check()


def test_the_renderer_answers_hostile_input_with_a_status_naming_the_problem(servers: dict[str, Any]) -> None:
    @EXAMPLES
    @given(requests("Render"))
    def check(data: bytes) -> None:
        code = _status(servers["rchannel"], "/ome.policy.v1.RendererService/Render", data)
        assert code in ANSWERS, f"Render answered {code.name}"

    check()


def test_the_daemon_stays_within_bounded_memory_and_serving_after_the_fuzzing(servers: dict[str, Any]) -> None:
    assert servers["policyd"].poll() is None and servers["renderer"].poll() is None
    assert _rss_mb(servers["policyd"].pid) < RSS_LIMIT_MB
    assert _rss_mb(servers["renderer"].pid) < RSS_LIMIT_MB
    request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(ISVC)))
    assert _status(servers["channel"], "/ome.policy.v1.PolicyService/Select", request.SerializeToString()) == (
        grpc.StatusCode.OK
    )


@EXAMPLES
@given(files=st.lists(manifests(), min_size=1, max_size=3), raw=st.binary(max_size=200))
def test_the_catalog_loader_reports_what_it_cannot_take_and_loads_the_rest(
    tmp_path_factory: pytest.TempPathFactory, files: list[str], raw: bytes
) -> None:
    directory = tmp_path_factory.mktemp("catalog")
    for i, text in enumerate(files):
        (directory / f"{i}.yaml").write_text(text)
    (directory / "raw.yaml").write_bytes(raw)
    (directory / "good.yaml").write_text(yaml.safe_dump_all(MODELS))
    loaded = load_directory(directory)
    assert {o.meta.name for o in loaded.objects} >= {m["metadata"]["name"] for m in MODELS}
    watched = CatalogSource(directory).load()  # the watched directory's loader reports the same, faults apart
    assert sorted([*watched.faults, *watched.load.errors]) == sorted(loaded.errors)


RULE_FILE = (RULES / "10-runtime.yaml").read_text()


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(value=HOSTILE, place=st.integers(0, 10_000), text=st.sampled_from(["", *HEAVY[:6]]))
def test_the_rule_loader_refuses_what_it_cannot_take_with_a_rule_file_error(
    tmp_path_factory: pytest.TempPathFactory, value: Any, place: int, text: str
) -> None:
    directory = tmp_path_factory.mktemp("rules")
    for path in RULES.glob("*.yaml"):
        (directory / path.name).write_text(path.read_text())
    if text:
        (directory / "10-runtime.yaml").write_text(text)
    else:
        doc = yaml.safe_load(RULE_FILE)
        places = _paths(doc)
        parent, key = places[place % len(places)]
        parent[key] = value
        (directory / "10-runtime.yaml").write_text(json.dumps(doc, allow_nan=True, default=str))
    with contextlib.suppress(RuleFileError):  # refused is fine; any other exception fails the test
        build_revision(directory)
