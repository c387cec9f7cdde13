"""Where OME puts the base model in a component's pods (components/base.go): a hostPath volume
named after the model at its storage path in every pod, mounted read-only at that path in the
engine's and the decoder's runners, whose pods also go only to nodes where the model agent
reports the model ready."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.model import Model
from policyd.clients.renderer.names import model_node_label
from policyd.clients.renderer.parts import Runner

MODEL_READY = "Ready"  # the value of the model agent's node label once the model is on the node


def mount_model(runner: Runner, model: Model) -> Runner:
    """The runner with the model mounted, unless something is already mounted at its path."""
    mounts = list(runner.get("volumeMounts") or [])
    if any(isinstance(m, Mapping) and m.get("mountPath") == model.path for m in mounts):
        return runner
    return {**runner, "volumeMounts": [*mounts, {"name": model.name, "mountPath": model.path, "readOnly": True}]}


def add_model_volume(pod: dict[str, Any], model: Model) -> None:
    pod["volumes"] = [*(pod.get("volumes") or []), {"name": model.name, "hostPath": {"path": model.path}}]


def require_model_node(pod: dict[str, Any], model: Model) -> None:
    pod["nodeSelector"] = {
        **(pod.get("nodeSelector") or {}),
        model_node_label(model.name, model.namespace): MODEL_READY,
    }
