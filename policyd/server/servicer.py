"""PolicyService: proto in, domain decision, proto out; InvalidInput → INVALID_ARGUMENT."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import grpc
from google.protobuf.message import Message

from policyd import metadata, version
from policyd.catalog.snapshot import Catalog, key_of
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.decision import admission
from policyd.decision.answers import Choice, Effective
from policyd.decision.decider import Decider
from policyd.decision.lookup import check_lookup
from policyd.decision.runtime_alone import first_catalog_refusal
from policyd.edge.metadata_keys import AT_LEAST_KEY
from policyd.edge.status import abort, grpc_code, warning_trailers
from policyd.errors import CallError, InvalidInput, NotHere, NotServing
from policyd.kube.sync import ClusterCatalog, Refusal, parse_at_least
from policyd.resources.objects import MODEL_KINDS, InferenceService, ModelRef, ServingRuntime
from policyd.resources.proto import object_manifest, struct_to_dict
from policyd.server import observability as obs
from policyd.server import responses, wire
from policyd.server.cachekey import request_digest
from policyd.server.fieldcheck import FieldCheck, mode_of
from policyd.server.heavy import HeavyCalls, brings_objects
from policyd.server.requests import (
    ISVC_FIELD,
    catalog_keys,
    catalog_object,
    full_view,
    object_key,
    parse_isvc,
    under,
)
from policyd.server.state import CacheKey, Change, ServingState
from policyd.server.whatif_calls import WhatIf
from policyd.server.wire import Encoded, encode

log = logging.getLogger("policyd.rpc")
Resp = TypeVar("Resp", bound=Message)
# Admit is not cached: a review is of an object just written (a new resourceVersion, managed
# fields, generation), so its answer is never asked for again and would only evict decisions
LOGGED = frozenset({"Select", "Explain", "Resolve", "Effective", "Decide", "Admit"})
CACHEABLE = LOGGED - {"Admit"}
ADMIT_FIELD = "object"
# answered before the cluster is listed: they read no catalog
UNGATED = frozenset({"GetStatus", "InspectModel"})
CATALOG_WRITES = frozenset({"ApplyObjects", "DeleteObjects"})
AT_LEAST_WAIT = 10.0  # seconds a call waits for the catalog to see what its caller has seen


def _request_catalog(base: Catalog, value: pb.RequestCatalog, fields: FieldCheck) -> Catalog:
    objects = [catalog_object(o, f"catalog.objects[{i}]", fields) for i, o in enumerate(value.objects)]
    for i, obj in enumerate(objects):
        if isinstance(obj, InferenceService):
            # the catalog keeps InferenceServices for what-if; a decision reads only its own subject
            raise InvalidInput(
                f"catalog.objects[{i}].kind", "an InferenceService is the request's subject, not one of its objects"
            )
    return base.overlay(objects, value.isolated)


def _looked_up(
    request: pb.ResolveRequest | pb.EffectiveRequest | pb.DecideRequest, base: Catalog, fields: FieldCheck
) -> tuple[str, InferenceService, Catalog]:
    """A request about one InferenceService and how its runtime is looked up: the lookup
    mode, the InferenceService and the catalog it is decided on."""
    lookup = check_lookup(request.lookup)
    isvc = parse_isvc(request.inference_service, fields)
    return lookup, isvc, _request_catalog(base, request.catalog, fields)


def _modes(result: Effective) -> list[pb.ComponentMode]:
    return [
        pb.ComponentMode(component=m.component, mode=m.mode, source=m.source, error=responses.rejection(m.error))
        for m in result.modes
    ]


def _selection(choice: Choice) -> pb.RuntimeSelection:
    """How Effective's runtime was chosen, as the contract has it."""
    runtime = choice.chosen.runtime
    out = pb.RuntimeSelection(
        runtime=object_key(key_of(runtime)),
        named=choice.named,
        decided_by=choice.decided_by,
        selectable=choice.selectable,
        entry_index=choice.entry_index,
        score=0 if choice.named else choice.chosen.score,
        compatible=choice.compatible,
        reasons=[r for reason in choice.reasons if (r := responses.reason(reason)) is not None],
    )
    if 0 <= choice.entry_index < len(runtime.entries):
        out.entry.CopyFrom(responses.entry(runtime.entries[choice.entry_index]))
    if choice.runner_up is not None and choice.decided is not None:
        out.rank_key, value, runner_up_value = choice.decided
        out.value, out.runner_up_value = str(value), str(runner_up_value)
        out.runner_up.CopyFrom(object_key(key_of(choice.runner_up.runtime)))
    return out


def object_change(change: Change, kept: bool) -> pb.ObjectChange:
    return pb.ObjectChange(
        key=object_key(change.key), action=change.action, overrides_file=change.file, kept=kept and bool(change.file)
    )


class _RequestId:
    """The call's x-request-id, or one made when first asked for."""

    def __init__(self, given: str | None) -> None:
        self._id = given

    def __str__(self) -> str:
        if self._id is None:
            self._id = uuid.uuid4().hex[:16]
        return self._id


class PolicyServicer(policy_pb2_grpc.PolicyServiceServicer):
    def __init__(
        self,
        state: ServingState,
        decisions: obs.DecisionLog,
        endpoints: Sequence[str] = (),
        cluster: ClusterCatalog | None = None,
        heavy: HeavyCalls | None = None,
    ) -> None:
        self.state = state
        self.heavy = heavy or HeavyCalls(2)  # calls that bring objects of their own (heavy.py)
        self.cluster = cluster  # policyd --cluster: the catalog is the cluster's, read by these watches
        self.decisions = decisions
        self.whatif = WhatIf(state)
        self.endpoints = list(endpoints)  # each process's own address, under --processes

    # -- plumbing -------------------------------------------------------------------------
    def _serve(
        self,
        rpc: str,
        request: Message,
        context: grpc.ServicerContext,
        handler: Callable[[Any, Decider, Catalog, FieldCheck], Resp | Encoded[Resp]],
    ) -> Resp:
        """The handler's answer. An Encoded one stands for its message: the Gate sends its bytes
        as they are (policyd.edge.gate)."""
        with self.state.hold_decider() as decider:
            return cast(Resp, self._serve_on(decider, rpc, request, context, handler))

    def _serve_on(
        self,
        decider: Decider,
        rpc: str,
        request: Message,
        context: grpc.ServicerContext,
        handler: Callable[[Any, Decider, Catalog, FieldCheck], Resp | Encoded[Resp]],
    ) -> Resp | Encoded[Resp]:
        started = time.perf_counter()
        revision = decider.revision
        metadata = dict(context.invocation_metadata())
        # made only when something names it (the log, the decision log): a uuid is a syscall
        request_id = _RequestId(metadata.get("x-request-id"))
        code = grpc.StatusCode.OK
        fields = FieldCheck()
        try:
            try:
                fields.mode = mode_of(metadata)
                if self.cluster is not None and rpc not in UNGATED:
                    self._in_sync(rpc, metadata, context)
                catalog = self.state.catalog  # read once: the call decides on one catalog
                # the mode decides between an answer and a refusal: answers are cached per mode
                salt = b"" if fields.mode == "Warn" else fields.mode.encode()
                # the digest keys the cache and the decision log: none when neither is kept
                cacheable = rpc in CACHEABLE and self.state.cache.enabled
                keyed = cacheable or (rpc in LOGGED and self.decisions.enabled)
                digest = request_digest(request, revision.policy, salt) if keyed else b""
                key = (revision.id, catalog.revision, rpc, digest)
                cached = self.state.cache.get(key) if cacheable else None
                if cached is not None:
                    obs.CACHE_HITS.inc()
                    self._log_decision(key, request_id, cached[0], cached=True)
                    if cached[1]:
                        context.set_trailing_metadata(warning_trailers(cached[1]))
                    return cached[0]
                with self.heavy.scope(rpc, request):
                    response = handler(request, self._decider(rpc, request, decider), catalog, fields)
            except CallError as err:
                code = grpc_code(err)
                if isinstance(err, InvalidInput):
                    log.info(
                        "invalid argument",
                        extra={"rpc": rpc, "request_id": str(request_id), "field": err.field, "error": err.message},
                    )
                abort(context, err, fields.warnings if isinstance(err, InvalidInput) else ())
            except Exception:
                code = grpc.StatusCode.INTERNAL
                log.exception("internal error", extra={"rpc": rpc, "request_id": str(request_id)})
                context.abort(code, f"internal error; see the policyd log for request id {request_id}")
            if fields.warnings:
                context.set_trailing_metadata(warning_trailers(fields.warnings))
            if keyed:
                answer = response if isinstance(response, Encoded) else encode(response)
                if cacheable:
                    self.state.cache.put(key, answer, tuple(fields.warnings))
                self._log_decision(key, request_id, answer, cached=False)
            return response
        finally:
            obs.count_call(rpc, code)
            obs.observe_latency(rpc, time.perf_counter() - started)

    def _in_sync(self, rpc: str, metadata: dict[str, Any], context: grpc.ServicerContext) -> None:
        """Under --cluster: the catalog is the cluster's, and has seen what the caller asks it to
        have seen (AT_LEAST_KEY); NotServing otherwise. Catalog writes are the cluster's alone."""
        assert self.cluster is not None
        if rpc in CATALOG_WRITES:
            raise NotHere(
                f"policyd reads its catalog from the cluster (--cluster): change the objects with kubectl; "
                f"{rpc} is for a policyd without --cluster (local, offline and what-if use)"
            )
        unsynced = self.cluster.unsynced()
        if unsynced:
            raise NotServing(f"policyd is listing the cluster: {', '.join(unsynced)} not synced yet")
        wanted = parse_at_least(str(metadata.get(AT_LEAST_KEY, "")))
        if wanted:
            remaining = context.time_remaining()
            wait = AT_LEAST_WAIT if remaining is None else max(0.0, min(AT_LEAST_WAIT, remaining - 0.1))
            behind = self.cluster.behind(wanted, wait)
            if behind:
                raise NotServing(f"policyd's catalog is behind the cluster: {behind}")

    def _log_decision(self, key: CacheKey, request_id: _RequestId, outcome: Encoded[Any], cached: bool) -> None:
        if not self.decisions.enabled:
            return
        rules_revision, catalog_revision, rpc, digest = key
        self.decisions.write(
            outcome.message(),
            request_id=str(request_id),
            rpc=rpc,
            request_digest=digest.hex(),
            rules_revision=rules_revision,
            catalog_revision=catalog_revision,
            cached=cached,
        )

    def _decider(self, rpc: str, request: Message, serving: Decider) -> Decider:
        """The serving decider keeps the verdicts it judged, by runtime, for later calls: not of
        objects a call brings (heavy.py), which a plain one judges."""
        return serving.plain() if brings_objects(rpc, request) else serving

    @staticmethod
    def _revisions(decider: Decider, catalog: Catalog) -> pb.Revisions:
        return pb.Revisions(rules_revision=decider.revision.id, catalog_revision=catalog.revision)

    # -- decisions ------------------------------------------------------------------------
    def Select(self, request: pb.SelectRequest, context: grpc.ServicerContext) -> pb.SelectResponse:
        return self._serve("Select", request, context, self._select)

    def _select(
        self, request: pb.SelectRequest, decider: Decider, base: Catalog, fields: FieldCheck
    ) -> Encoded[pb.SelectResponse]:
        full = full_view(request.view)
        isvc = parse_isvc(request.inference_service, fields)
        catalog = _request_catalog(base, request.catalog, fields)
        with under(ISVC_FIELD):
            result = decider.select(catalog, isvc)
        head = pb.SelectResponse(
            error=result.error,
            warnings=list(result.warnings),
            revisions=self._revisions(decider, catalog),
            rejection=responses.rejection(result.refusal),
        )
        identities = wire.identities(e.runtime for e in result.excluded)
        verdicts = [e.verdict for e in result.excluded]
        excluded = wire.Rows(identities, verdicts, full=full, by_verdict=True)
        return wire.with_rows(head, "excluded", excluded, "excluded_omitted", wire.ranking(result.ranking))

    def Explain(self, request: pb.ExplainRequest, context: grpc.ServicerContext) -> pb.ExplainResponse:
        return self._serve("Explain", request, context, self._explain)

    def _explain(
        self, request: pb.ExplainRequest, decider: Decider, base: Catalog, fields: FieldCheck
    ) -> Encoded[pb.ExplainResponse]:
        full = full_view(request.view)
        catalog = _request_catalog(base, request.catalog, fields)
        which = request.WhichOneof("subject")
        if which == "inference_service":
            isvc = parse_isvc(request.inference_service, fields)
            with under(ISVC_FIELD):
                explanation = decider.explain_isvc(catalog, isvc)
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
                explanation = decider.explain_model(catalog, ref, request.model.namespace)
        else:
            raise InvalidInput("subject", "is required: set inference_service or model")
        head = pb.ExplainResponse(
            model_format=explanation.model_format,
            model_name=explanation.model.meta.name,
            revisions=self._revisions(decider, catalog),
        )
        identities = wire.scope_identities(explanation.scope)
        rows = wire.Rows(identities, explanation.verdicts, explanation.kept, full=full)
        return wire.with_rows(head, "runtimes", rows, "runtimes_omitted")

    def Resolve(self, request: pb.ResolveRequest, context: grpc.ServicerContext) -> pb.ResolveResponse:
        return self._serve("Resolve", request, context, self._resolve)

    def _resolve(
        self, request: pb.ResolveRequest, decider: Decider, base: Catalog, fields: FieldCheck
    ) -> pb.ResolveResponse:
        lookup, isvc, catalog = _looked_up(request, base, fields)
        with under(ISVC_FIELD):
            result = decider.resolve(catalog, isvc, lookup)
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
            revisions=self._revisions(decider, catalog),
        )

    def Effective(self, request: pb.EffectiveRequest, context: grpc.ServicerContext) -> pb.EffectiveResponse:
        return self._serve("Effective", request, context, self._effective)

    def _effective(
        self, request: pb.EffectiveRequest, decider: Decider, base: Catalog, fields: FieldCheck
    ) -> pb.EffectiveResponse:
        lookup, isvc, catalog = _looked_up(request, base, fields)
        with under(ISVC_FIELD):
            result = decider.effective(catalog, isvc, lookup)
        runtime = result.runtime
        answer = pb.EffectiveResponse(
            runtime=runtime.meta.name if runtime else "",
            runtime_kind=runtime.kind if runtime else "",
            components=_modes(result),
            errors=[r for e in result.errors if (r := responses.rejection(e)) is not None],
            revisions=self._revisions(decider, catalog),
        )
        if result.choice is not None:
            answer.selection.CopyFrom(_selection(result.choice))
        responses.put_backends(answer, result.backends)
        return answer

    def Decide(self, request: pb.DecideRequest, context: grpc.ServicerContext) -> pb.DecideResponse:
        return self._serve("Decide", request, context, self._decide)

    def _decide(
        self, request: pb.DecideRequest, decider: Decider, base: Catalog, fields: FieldCheck
    ) -> pb.DecideResponse:
        lookup, isvc, catalog = _looked_up(request, base, fields)
        with under(ISVC_FIELD):
            result = decider.decide(catalog, isvc, lookup)
        answer = pb.DecideResponse(revisions=self._revisions(decider, catalog), named=isvc.runtime is not None)
        runtime: ServingRuntime | None = None
        if (resolution := result.resolution) is not None:
            refusal, runtime, answer.entry_index = resolution.refusal, resolution.runtime, resolution.entry_index
            answer.warnings.extend([resolution.warning] if resolution.warning else [])
            answer.event, answer.event_reason = resolution.event, resolution.event_reason
        else:
            assert result.selection is not None
            refusal, answer.entry_index = result.selection.refusal, -1
            if result.selection.ranking:
                top = result.selection.ranking[0]
                runtime, answer.entry_index = top.runtime, top.entry_index
            answer.warnings.extend(result.selection.warnings)
        if (rejection := responses.rejection(refusal)) is not None:
            answer.rejection.CopyFrom(rejection)
            return answer
        if runtime is not None:
            answer.runtime, answer.runtime_kind = runtime.meta.name, runtime.kind
            answer.runtime_namespace = runtime.meta.namespace
        if (effective := result.effective) is not None:
            answer.components.extend(_modes(effective))
            answer.accelerator_classes.update(isvc.placements)
            responses.put_backends(answer, effective.backends)
        return answer

    def Admit(self, request: pb.AdmitRequest, context: grpc.ServicerContext) -> pb.AdmitResponse:
        return self._serve("Admit", request, context, self._admit)

    def _admit(self, request: pb.AdmitRequest, decider: Decider, base: Catalog, fields: FieldCheck) -> pb.AdmitResponse:
        if not request.HasField("object"):
            raise InvalidInput(
                ADMIT_FIELD, "is required: the InferenceService, ServingRuntime or ClusterServingRuntime under review"
            )
        obj = catalog_object(request.object, ADMIT_FIELD, fields)
        catalog = _request_catalog(base, request.catalog, fields)
        with under(ADMIT_FIELD):
            if isinstance(obj, InferenceService):
                result = admission.admit_isvc(catalog, obj, decider)
            elif isinstance(obj, ServingRuntime):
                result = admission.admit_runtime(catalog, obj, decider)
            else:
                kinds = "InferenceService, ServingRuntime, ClusterServingRuntime"
                raise InvalidInput("kind", f"{obj.kind} has no admission webhook (one of {kinds})")
        return pb.AdmitResponse(
            allowed=result.allowed,
            denial=responses.rejection(result.denial),
            warnings=list(result.warnings),
            missing=[object_key(k) for k in result.missing],
            revisions=self._revisions(decider, catalog),
        )

    def Default(self, request: pb.DefaultRequest, context: grpc.ServicerContext) -> pb.DefaultResponse:
        return self._serve("Default", request, context, self._default)

    def _default(
        self, request: pb.DefaultRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.DefaultResponse:
        isvc = parse_isvc(request.inference_service, fields)
        return pb.DefaultResponse(
            patch=admission.default_patch(isvc, decider.revision), revisions=self._revisions(decider, catalog)
        )

    def InspectModel(self, request: pb.InspectModelRequest, context: grpc.ServicerContext) -> pb.InspectModelResponse:
        return self._serve("InspectModel", request, context, self._inspect)

    def _inspect(
        self, request: pb.InspectModelRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.InspectModelResponse:
        base = object_manifest(request.base_model, "base_model") if request.HasField("base_model") else None
        if base is not None and base.get("kind") not in MODEL_KINDS:
            raise InvalidInput("base_model.kind", f"must be one of {', '.join(MODEL_KINDS)}, got {base.get('kind')!r}")
        which = request.WhichOneof("file")
        if which not in ("model_index", "config"):
            raise InvalidInput("file", "is required: set model_index or config")
        inspect = metadata.inspect_model_index if which == "model_index" else metadata.inspect_config
        data = struct_to_dict(getattr(request, which), which)
        try:
            spec = inspect(data, base)
        except InvalidInput as err:
            # the metadata module names the base model as a manifest does; the request calls it base_model
            if err.field.startswith("baseModel"):
                raise InvalidInput("base_model" + err.field.removeprefix("baseModel"), err.message) from None
            raise err.under(which) from None
        return pb.InspectModelResponse(spec_json=json.dumps(spec, sort_keys=True))

    # -- catalog --------------------------------------------------------------------------
    def ApplyObjects(self, request: pb.ApplyObjectsRequest, context: grpc.ServicerContext) -> pb.ApplyObjectsResponse:
        return self._serve("ApplyObjects", request, context, self._apply)

    def _apply(
        self, request: pb.ApplyObjectsRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.ApplyObjectsResponse:
        objects = [catalog_object(o, f"objects[{i}]", fields) for i, o in enumerate(request.objects)]
        if (refused := first_catalog_refusal(decider, objects)) is not None:
            i, refusal = refused
            raise InvalidInput(f"objects[{i}].{refusal.field}", refusal.message)
        updated, changes = self.state.replace(objects) if request.replace else self.state.apply(objects)
        return pb.ApplyObjectsResponse(
            catalog_revision=updated.revision,
            runtimes=len(updated.runtimes),
            models=len(updated.models),
            changes=[object_change(c, self.state.changes_kept) for c in changes],
            inference_services=len(updated.inference_services),
            accelerator_classes=len(updated.accelerator_classes),
        )

    def DeleteObjects(
        self, request: pb.DeleteObjectsRequest, context: grpc.ServicerContext
    ) -> pb.DeleteObjectsResponse:
        return self._serve("DeleteObjects", request, context, self._delete)

    def _delete(
        self, request: pb.DeleteObjectsRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.DeleteObjectsResponse:
        updated, changes = self.state.delete(catalog_keys(request.keys))
        return pb.DeleteObjectsResponse(
            catalog_revision=updated.revision,
            deleted=sum(1 for c in changes if c.action == "deleted"),
            changes=[object_change(c, self.state.changes_kept) for c in changes],
        )

    def GetObjects(self, request: pb.GetObjectsRequest, context: grpc.ServicerContext) -> pb.GetObjectsResponse:
        return self._serve("GetObjects", request, context, self._get_objects)

    def _get_objects(
        self, request: pb.GetObjectsRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.GetObjectsResponse:
        found = []
        for key in catalog_keys(request.keys):
            obj = catalog.get(key)
            found.append(rpb.Object(manifest=json.dumps(obj.raw)) if obj is not None else rpb.Object())
        return pb.GetObjectsResponse(objects=found, catalog_revision=catalog.revision)

    def GetStatus(self, request: pb.GetStatusRequest, context: grpc.ServicerContext) -> pb.GetStatusResponse:
        return self._serve("GetStatus", request, context, self._status)

    def _status(
        self, request: pb.GetStatusRequest, decider: Decider, catalog: Catalog, fields: FieldCheck
    ) -> pb.GetStatusResponse:
        a = self.state.last_attempt
        reply = pb.GetStatusResponse(
            revisions=self._revisions(decider, catalog),
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
            inference_services=len(catalog.inference_services),
            accelerator_classes=len(catalog.accelerator_classes),
            catalog_errors=self.state.catalog_errors if self.cluster is None else self._refused(),
            endpoints=self.endpoints,
            overrides=[
                pb.CatalogOverride(
                    key=object_key(key), action=o.action, at_unix_seconds=o.at, file=file, kept=self.state.changes_kept
                )
                for key, o, file in self.state.overrides()
            ],
            catalog_source="local" if self.cluster is None else "cluster",
            version=version.VERSION,
        )
        if self.cluster is not None:
            reply.stale_since_unix_seconds, reply.stale_reason = self.cluster.stale()
            for state, refused, lists, watches in self.cluster.kinds():
                reply.kinds.add(
                    kind=state.kind.name,
                    synced=state.synced,
                    objects=len(state.keys),
                    refused=refused,
                    resource_version=state.resource_version,
                    lists=lists,
                    watches=watches,
                )
            for r in self._sorted_refused():
                reply.refused.add(key=object_key(r.key), field=r.field, message=r.message)
        return reply

    def _sorted_refused(self) -> list[Refusal]:
        assert self.cluster is not None
        return sorted(self.cluster.refused.values(), key=lambda r: r.key)

    def _refused(self) -> list[str]:
        return [str(r) for r in self._sorted_refused()]

    # -- what-if (reads: nothing is applied) ----------------------------------------------
    def Simulate(self, request: pb.SimulateRequest, context: grpc.ServicerContext) -> pb.SimulateResponse:
        return self._serve("Simulate", request, context, self.whatif.simulate)

    def Lint(self, request: pb.LintRequest, context: grpc.ServicerContext) -> pb.LintResponse:
        return self._serve("Lint", request, context, self.whatif.lint)
