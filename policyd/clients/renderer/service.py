"""RendererService: the contract's Render RPC over the pure renderer."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import grpc

from policyd.clients.renderer.external_service import external_service
from policyd.clients.renderer.render import RenderInput, render
from policyd.contract import policy_pb2, render_pb2_grpc
from policyd.contract import render_pb2 as pb
from policyd.edge.status import abort
from policyd.errors import InvalidInput
from policyd.resources.deployment_modes import COMPONENTS, MODES
from policyd.resources.proto import isvc_manifest, object_manifest
from policyd.semantics.modes import EffectiveMode

log = logging.getLogger("policy-render")


def chosen_accelerator_config(runtime: Mapping[str, Any], entry_index: int) -> Mapping[str, Any] | None:
    """acceleratorConfig of the supportedModelFormats entry policyd matched."""
    spec = runtime.get("spec")
    formats = spec.get("supportedModelFormats") if isinstance(spec, Mapping) else None
    if (
        not isinstance(formats, list)
        or not 0 <= entry_index < len(formats)
        or not isinstance(formats[entry_index], Mapping)
    ):
        return None
    config = formats[entry_index].get("acceleratorConfig")
    return config if isinstance(config, Mapping) else None


def given_modes(modes: Iterable[policy_pb2.ComponentMode]) -> tuple[dict[str, EffectiveMode], dict[str, str]]:
    """policyd's mode for each component, and its error where it has one. The renderer decides no
    mode itself: the Effective answer is the one place modes come from."""
    decided: dict[str, EffectiveMode] = {}
    errors: dict[str, str] = {}
    for i, given in enumerate(modes):
        if given.component not in COMPONENTS:
            raise InvalidInput(
                f"modes[{i}].component", f"unknown component {given.component!r} (one of {', '.join(COMPONENTS)})"
            )
        if given.mode not in MODES:
            raise InvalidInput(
                f"modes[{i}].mode", f"unknown deployment mode {given.mode!r} (one of {', '.join(MODES)})"
            )
        decided[given.component] = EffectiveMode(given.component, given.mode, given.source)
        if given.HasField("error") and given.error.message:
            errors[given.component] = given.error.message
    return decided, errors


def render_request(request: pb.RenderRequest) -> RenderInput:
    if not request.HasField("runtime"):
        raise InvalidInput("runtime", "is required")
    runtime = object_manifest(request.runtime, "runtime")
    modes, mode_errors = given_modes(request.modes)
    return RenderInput(
        inference_service=isvc_manifest(request.inference_service, "inference_service"),
        runtime=runtime,
        runtime_kind=str(runtime.get("kind", "")),
        model=object_manifest(request.model, "model") if request.HasField("model") else None,
        accelerator_classes=dict(request.accelerator_classes),
        accelerator_config=chosen_accelerator_config(runtime, request.entry_index),
        modes=modes,
        mode_errors=mode_errors,
        accelerator_class_objects=[
            object_manifest(obj, f"accelerator_class_objects[{i}]")
            for i, obj in enumerate(request.accelerator_class_objects)
        ],
    )


class RendererServicer(render_pb2_grpc.RendererServiceServicer):
    def Render(self, request: pb.RenderRequest, context: grpc.ServicerContext) -> pb.RenderResponse:
        try:
            inp = render_request(request)
            result = render(inp)
        except InvalidInput as err:
            abort(context, err)
        except Exception:  # never a bare UNKNOWN: the traceback goes to the log, with an id to find it
            request_id = uuid.uuid4().hex[:16]
            log.exception("internal error", extra={"rpc": "Render", "request_id": request_id})
            context.abort(grpc.StatusCode.INTERNAL, f"internal error; see the renderer log for request id {request_id}")
        objects = list(result.objects)
        # beside the components' objects, the Service clients reach the InferenceService by
        reached_by = external_service(inp.inference_service, objects)
        if reached_by is not None:
            objects.append(reached_by)
        return pb.RenderResponse(objects=[json.dumps(o, sort_keys=True) for o in objects], errors=result.errors)
