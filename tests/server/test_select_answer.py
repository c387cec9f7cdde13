"""A Select answer's ranking is sent as bytes kept per shared verdict (policyd/server/responses.py):
each ranked runtime must still read as the contract's RankedRuntime — its name, kind and
namespace, its score, the index of the supported format it matched and that format — the first
time a verdict is encoded and when its bytes are reused for another request."""

from __future__ import annotations

import json

from testkit.shared import CATALOG, RULES

from policyd.catalog.directory import load_directory
from policyd.catalog.snapshot import Catalog
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.decision.decider import Decider
from policyd.policy.revision import build_revision
from policyd.resources.manifests import parse_inference_service
from policyd.server import responses
from policyd.server.fieldcheck import FieldCheck
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer


def _isvc(model: str, name: str) -> dict[str, object]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"model": {"name": model}, "engine": {"minReplicas": 1}},
    }


def test_each_ranked_runtime_reads_as_its_name_kind_score_and_matched_format() -> None:
    decider = Decider(build_revision(RULES))
    catalog = Catalog.of(load_directory(CATALOG).objects)
    decider.prepare(catalog)
    servicer = PolicyServicer(None, DecisionLog(None))  # type: ignore[arg-type]
    ranked = 0
    for key in sorted(catalog.models):
        model = catalog.models[key].meta.name
        for name in ("first", "second"):  # the second answer reuses the bytes the first kept
            doc = _isvc(model, name)
            expected = [
                pb.RankedRuntime(
                    name=e.runtime.meta.name,
                    kind=e.runtime.kind,
                    namespace=e.runtime.meta.namespace,
                    score=e.score,
                    entry_index=e.entry_index,
                    entry=responses.entry(e.runtime.entries[e.entry_index]),
                )
                for e in decider.select(catalog, parse_inference_service(doc)).ranking
            ]
            request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(doc)))
            answer = servicer._select(request, decider, catalog, FieldCheck()).message()
            assert list(answer.ranking) == expected, f"{model} ({name})"
            ranked += len(expected)
    assert ranked > 50
