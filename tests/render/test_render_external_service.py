"""The Service clients reach an InferenceService by, as OME's install makes it (ingress creation
disabled, its chart's default; reconcilers/external_service)."""

from __future__ import annotations

from typing import Any

from policyd.clients.renderer.external_service import external_service


def _isvc(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "chat", "namespace": "demo", "uid": "u1"}
    meta.update({"labels": labels} if labels else {})
    meta.update({"annotations": annotations} if annotations else {})
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta, "spec": spec}


def _service(name: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"port": port}, {"port": 9999}]},
    }


def test_it_is_named_after_the_inferenceservice_and_selects_the_engine_on_its_services_first_port() -> None:
    service = external_service(_isvc(engine={}), [_service("chat-engine", 30000)])
    assert service is not None
    assert service["metadata"]["name"] == "chat" and service["metadata"]["namespace"] == "demo"
    assert service["metadata"]["labels"] == {"ome.io/inferenceservice": "chat", "component": "external-service"}
    assert service["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert service["spec"] == {
        "selector": {"ome.io/inferenceservice": "chat", "component": "engine"},
        "ports": [{"name": "http", "port": 30000, "targetPort": 30000, "protocol": "TCP"}],
        "type": "ClusterIP",
    }


def test_a_declared_router_is_what_it_selects() -> None:
    rendered = [_service("chat-engine", 30000), _service("chat-router", 8080)]
    service = external_service(_isvc(engine={}, router={}), rendered)
    assert service is not None
    assert service["spec"]["selector"]["component"] == "router" and service["spec"]["ports"][0]["port"] == 8080


def test_the_service_type_annotation_and_the_cloud_load_balancer_annotations_carry_over() -> None:
    annotations = {
        "ome.io/service-type": "LoadBalancer",
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        "cloud.google.com/neg": "{}",
        "team": "llm",
    }
    service = external_service(_isvc(annotations=annotations, engine={}), [_service("chat-engine", 8080)])
    assert service is not None and service["spec"]["type"] == "LoadBalancer"
    assert service["metadata"]["annotations"] == {
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        "cloud.google.com/neg": "{}",
    }


def test_none_for_a_cluster_local_inferenceservice_or_a_target_component_that_rendered_no_service() -> None:
    cluster_local = _isvc({"networking.knative.dev/visibility": "cluster-local"}, engine={})
    assert external_service(cluster_local, [_service("chat-engine", 8080)]) is None
    assert external_service(_isvc(engine={}), []) is None  # VirtualDeployment, or the engine failed to render
    assert external_service(_isvc(decoder={}), [_service("chat-decoder", 8080)]) is None
