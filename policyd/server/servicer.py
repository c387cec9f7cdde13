"""PolicyService: proto in, domain decision, proto out; InvalidInput → INVALID_ARGUMENT."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from policyd import metadata
from policyd.catalog.snapshot import Catalog, CatalogObject, Key, make_key
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.decision import orchestrator as decide
from policyd.decision.lookup import check_lookup
from policyd.errors import InvalidInput
from policyd.policy.revision import Revision
from policyd.resources.manifests import parse_inference_service, parse_object
from policyd.resources.objects import MODEL_KINDS, RUNTIME_KINDS, InferenceService, ModelRef, ServingRuntime
from policyd.resources.proto import isvc_manifest, object_manifest, struct_to_dict
from policyd.server import observability as obs
from policyd.server import responses
from policyd.server.cachekey import request_digest
from policyd.server.state import CacheKey, ServingState

log = logging.getLogger("policyd.rpc")
Resp = TypeVar("Resp", bound=Message)
CACHEABLE = frozenset({"Select", "Explain", "Resolve", "Effective"})


ISVC_FIELD = "inference_service"


@contextmanager
def under(prefix: str) -> Iterator[None]:
    """Name fields of a nested object from the request's root."""
    try:
        yield
    except InvalidInput as err:
        raise err.under(prefix) from None


def _parse_isvc(value: rpb.InferenceServiceInput) -> InferenceService:
    manifest = isvc_manifest(value, ISVC_FIELD)
    with under(ISVC_FIELD):
        return parse_inference_service(manifest)


def catalog_object(obj: rpb.Object, field: str) -> CatalogObject:
    manifest = object_manifest(obj, field)
    with under(field):
        parsed = parse_object(manifest)
    if isinstance(parsed, InferenceService):
        raise InvalidInput(f"{field}.kind", "an InferenceService is not a catalog object")
    return parsed


def _request_catalog(base: Catalog, value: pb.RequestCatalog) -> Catalog:
    objects = [catalog_object(o, f"catalog.objects[{i}]") for i, o in enumerate(value.objects)]
    return base.overlay(objects, value.isolated)


def _keys(keys: Sequence[pb.ObjectKey]) -> list[Key]:
    out = []
    for i, k in enumerate(keys):
        if k.kind not in (*MODEL_KINDS, *RUNTIME_KINDS):
            raise InvalidInput(
                f"keys[{i}].kind", f"unknown kind {k.kind!r} (one of {', '.join((*MODEL_KINDS, *RUNTIME_KINDS))})"
            )
        if not k.name:
            raise InvalidInput(f"keys[{i}].name", "is required")
        out.append(make_key(k.kind, k.namespace, k.name))
    return out


class PolicyServicer(policy_pb2_grpc.PolicyServiceServicer):
    def __init__(self, state: ServingState, decisions: obs.DecisionLog, fast: bool = True) -> None:
        self.state = state
        self.decisions = decisions
        self.fast = fast  # False: judge every runtime in scope (the plain path the fast one must equal)

    # -- plumbing -------------------------------------------------------------------------
    def _serve(
        self,
        rpc: str,
        request: Message,
        context: grpc.ServicerContext,
        handler: Callable[[Any, Revision, Catalog], Resp],
    ) -> Resp:
        started = time.perf_counter()
        revision, catalog = self.state.revision, self.state.catalog
        request_id = dict(context.invocation_metadata()).get("x-request-id") or uuid.uuid4().hex[:16]
        cacheable = rpc in CACHEABLE
        digest = request_digest(request, revision.policy) if cacheable else b""
        key = (revision.id, catalog.revision, rpc, digest)
        code = grpc.StatusCode.OK
        try:
            cached = self.state.cache.get(key) if cacheable else None
            if cached is not None:
                obs.CACHE_HITS.inc()
                self._log_decision(key, request_id, cached, cached=True)
                return cached  # type: ignore[return-value]  # stored under this RPC's key, so of its type
            try:
                response = handler(request, revision, catalog)
            except InvalidInput as err:
                code = grpc.StatusCode.INVALID_ARGUMENT
                context.set_trailing_metadata((("policyd-field", err.field),))
                log.info(
                    "invalid argument",
                    extra={"rpc": rpc, "request_id": request_id, "field": err.field, "error": err.message},
                )
                context.abort(code, str(err))
            except Exception:
                code = grpc.StatusCode.INTERNAL
                log.exception("internal error", extra={"rpc": rpc, "request_id": request_id})
                context.abort(code, f"internal error; see the policyd log for request id {request_id}")
            if cacheable:
                self.state.cache.put(key, response)
                self._log_decision(key, request_id, response, cached=False)
            return response
        finally:
            obs.CALLS.labels(rpc, code.name).inc()
            obs.LATENCY.labels(rpc).observe(time.perf_counter() - started)

    def _log_decision(self, key: CacheKey, request_id: str, outcome: Message, cached: bool) -> None:
        rules_revision, catalog_revision, rpc, digest = key
        self.decisions.write(
            outcome,
            request_id=request_id,
            rpc=rpc,
            request_digest=digest.hex(),
            rules_revision=rules_revision,
            catalog_revision=catalog_revision,
            cached=cached,
        )

    @staticmethod
    def _revisions(revision: Revision, catalog: Catalog) -> pb.Revisions:
        return pb.Revisions(rules_revision=revision.id, catalog_revision=catalog.revision)

    # -- decisions ------------------------------------------------------------------------
    def Select(self, request: pb.SelectRequest, context: grpc.ServicerContext) -> pb.SelectResponse:
        return self._serve("Select", request, context, self._select)

    def _select(self, request: pb.SelectRequest, revision: Revision, base: Catalog) -> pb.SelectResponse:
        isvc = _parse_isvc(request.inference_service)
        catalog = _request_catalog(base, request.catalog)
        with under(ISVC_FIELD):
            result = decide.select(catalog, isvc, revision, fast=self.fast)
        response = pb.SelectResponse(
            ranking=[responses.ranked(e) for e in result.ranking],
            error=result.error,
            warnings=list(result.warnings),
            revisions=self._revisions(revision, catalog),
            rejection=responses.rejection(result.refusal),
        )
        response.MergeFromString(responses.excluded_runtimes(result.excluded))
        return response

    def Explain(self, request: pb.ExplainRequest, context: grpc.ServicerContext) -> pb.ExplainResponse:
        return self._serve("Explain", request, context, self._explain)

    def _explain(self, request: pb.ExplainRequest, revision: Revision, base: Catalog) -> pb.ExplainResponse:
        catalog = _request_catalog(base, request.catalog)
        which = request.WhichOneof("subject")
        if which == "inference_service":
            isvc = _parse_isvc(request.inference_service)
            with under(ISVC_FIELD):
                explanation = decide.explain_isvc(catalog, isvc, revision, fast=self.fast)
        elif which == "model":
            if not request.model.model.name:
                raise InvalidInput("model.model.name", "is required")
            kind = request.model.model.kind or "ClusterBaseModel"
            if kind not in ("ClusterBaseModel", "BaseModel"):
                raise InvalidInput(
                    "model.model.kind", f"unknown model kind {kind!r} (one of ClusterBaseModel, BaseModel)"
                )
            ref = ModelRef(request.model.model.name, kind)
            with under("model"):
                explanation = decide.explain_model(catalog, ref, request.model.namespace, revision, fast=self.fast)
        else:
            raise InvalidInput("subject", "is required: set inference_service or model")
        response = responses.explain_runtimes(explanation.rows)
        response.model_format = explanation.model_format
        response.model_name = explanation.model.meta.name
        response.revisions.CopyFrom(self._revisions(revision, catalog))
        return response

    def Resolve(self, request: pb.ResolveRequest, context: grpc.ServicerContext) -> pb.ResolveResponse:
        return self._serve("Resolve", request, context, self._resolve)

    def _resolve(self, request: pb.ResolveRequest, revision: Revision, base: Catalog) -> pb.ResolveResponse:
        lookup = check_lookup(request.lookup)
        isvc = _parse_isvc(request.inference_service)
        catalog = _request_catalog(base, request.catalog)
        with under(ISVC_FIELD):
            result = decide.resolve(catalog, isvc, revision, lookup)
        verdict = result.verdict
        resolved = result.runtime if result.refusal is None else None
        return pb.ResolveResponse(
            runtime=resolved.meta.name if resolved else "",
            runtime_kind=resolved.kind if resolved else "",
            runtime_namespace=resolved.meta.namespace if resolved else "",
            compatible=verdict.compatible if verdict and result.refusal is None else result.refusal is None,
            reason=responses.reason(verdict.compat_reason if verdict else None),
            warning=result.warning,
            event=result.event,
            event_reason=result.event_reason,
            rejection=responses.rejection(result.refusal),
            entry_index=result.entry_index,
            revisions=self._revisions(revision, catalog),
        )

    def Effective(self, request: pb.EffectiveRequest, context: grpc.ServicerContext) -> pb.EffectiveResponse:
        return self._serve("Effective", request, context, self._effective)

    def _effective(self, request: pb.EffectiveRequest, revision: Revision, base: Catalog) -> pb.EffectiveResponse:
        lookup = check_lookup(request.lookup)
        isvc = _parse_isvc(request.inference_service)
        catalog = _request_catalog(base, request.catalog)
        with under(ISVC_FIELD):
            result = decide.effective(catalog, isvc, revision, lookup, fast=self.fast)
        runtime = result.runtime
        return pb.EffectiveResponse(
            runtime=runtime.meta.name if runtime else "",
            runtime_kind=runtime.kind if runtime else "",
            components=[
                pb.ComponentMode(
                    component=m.component, mode=m.mode, source=m.source, error=responses.rejection(m.error)
                )
                for m in result.modes
            ],
            errors=[r for e in result.errors if (r := responses.rejection(e)) is not None],
            revisions=self._revisions(revision, catalog),
        )

    def InspectModel(self, request: pb.InspectModelRequest, context: grpc.ServicerContext) -> pb.InspectModelResponse:
        return self._serve("InspectModel", request, context, self._inspect)

    def _inspect(
        self, request: pb.InspectModelRequest, revision: Revision, catalog: Catalog
    ) -> pb.InspectModelResponse:
        base = object_manifest(request.base_model, "base_model") if request.HasField("base_model") else None
        if base is not None and base.get("kind") not in MODEL_KINDS:
            raise InvalidInput("base_model.kind", f"must be one of {', '.join(MODEL_KINDS)}, got {base.get('kind')!r}")
        which = request.WhichOneof("file")
        if which not in ("model_index", "config"):
            raise InvalidInput("file", "is required: set model_index or config")
        inspect = metadata.inspect_model_index if which == "model_index" else metadata.inspect_config
        try:
            spec = inspect(struct_to_dict(getattr(request, which)), base)
        except InvalidInput as err:
            # the metadata module names the base model as a manifest does; the request calls it base_model
            if err.field.startswith("baseModel"):
                raise InvalidInput("base_model" + err.field.removeprefix("baseModel"), err.message) from None
            raise err.under(which) from None
        return pb.InspectModelResponse(spec_json=json.dumps(spec, sort_keys=True))

    # -- catalog --------------------------------------------------------------------------
    def ApplyObjects(self, request: pb.ApplyObjectsRequest, context: grpc.ServicerContext) -> pb.ApplyObjectsResponse:
        return self._serve("ApplyObjects", request, context, self._apply)

    def _apply(self, request: pb.ApplyObjectsRequest, revision: Revision, catalog: Catalog) -> pb.ApplyObjectsResponse:
        objects = [catalog_object(o, f"objects[{i}]") for i, o in enumerate(request.objects)]
        for i, obj in enumerate(objects):
            if isinstance(obj, ServingRuntime):
                for refusal in decide.catalog_refusals(revision, obj):
                    raise InvalidInput(f"objects[{i}].{refusal.field}", refusal.message)
        updated = self.state.apply(objects)
        return pb.ApplyObjectsResponse(
            catalog_revision=updated.revision, runtimes=len(updated.runtimes), models=len(updated.models)
        )

    def DeleteObjects(
        self, request: pb.DeleteObjectsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteObjectsResponse:
        return self._serve("DeleteObjects", request, context, self._delete)

    def _delete(
        self, request: pb.DeleteObjectsRequest, revision: Revision, catalog: Catalog
    ) -> pb.DeleteObjectsResponse:
        updated, deleted = self.state.delete(_keys(request.keys))
        return pb.DeleteObjectsResponse(catalog_revision=updated.revision, deleted=deleted)

    def GetObjects(self, request: pb.GetObjectsRequest, context: grpc.ServicerContext) -> pb.GetObjectsResponse:
        return self._serve("GetObjects", request, context, self._get_objects)

    def _get_objects(
        self, request: pb.GetObjectsRequest, revision: Revision, catalog: Catalog
    ) -> pb.GetObjectsResponse:
        found = []
        for key in _keys(request.keys):
            obj = catalog.runtimes.get(key) or catalog.models.get(key)
            found.append(rpb.Object(manifest=json.dumps(obj.raw)) if obj is not None else rpb.Object())
        return pb.GetObjectsResponse(objects=found, catalog_revision=catalog.revision)

    def GetStatus(self, request: pb.GetStatusRequest, context: grpc.ServicerContext) -> pb.GetStatusResponse:
        return self._serve("GetStatus", request, context, self._status)

    def _status(self, request: pb.GetStatusRequest, revision: Revision, catalog: Catalog) -> pb.GetStatusResponse:
        a = self.state.last_attempt
        return pb.GetStatusResponse(
            revisions=self._revisions(revision, catalog),
            last_attempt=pb.RuleLoadAttempt(
                revision=a.revision,
                ok=a.ok,
                error=a.error,
                file=a.file,
                rule_id=a.rule_id,
                line=a.line,
                at_unix_seconds=a.at,
            ),
            runtimes=len(catalog.runtimes),
            models=len(catalog.models),
            catalog_errors=self.state.catalog_errors,
        )
