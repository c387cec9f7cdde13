"""The InferenceService of the spec's cluster forms (``explain --isvc NAME -n NS``,
``effective NAME -n NS``), read from the Kubernetes API as kubectl finds it: --kubeconfig,
else $KUBECONFIG, else ~/.kube/config, else the in-cluster service account; the namespace from
-n, else the context's, else ``default``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from policyd.clients.policyctl.inputs import InputError
from policyd.clients.policyctl.kinds import GROUP, INFERENCE_SERVICE

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _client(kubeconfig: str | None, context: str | None) -> tuple[client.ApiClient, str]:
    """An API client and the namespace of the chosen context."""
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    files = [p for p in path.split(os.pathsep) if p]
    if kubeconfig or any(Path(p).expanduser().exists() for p in files):
        try:
            api = config.new_client_from_config(config_file=path, context=context)
            contexts, current = config.list_kube_config_contexts(config_file=path)
        except (ConfigException, OSError) as err:
            raise InputError(f"kubeconfig {path}: {err}") from None
        chosen = next((c for c in contexts if c["name"] == context), current) if context else current
        return api, str((chosen or {}).get("context", {}).get("namespace") or "")
    try:
        config.load_incluster_config()
    except ConfigException:
        raise InputError(
            "no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not in a cluster: "
            "pass -f FILE to read the InferenceService from a file"
        ) from None
    namespace = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() if SERVICE_ACCOUNT_NAMESPACE.exists() else ""
    return client.ApiClient(), namespace


def inference_service(name: str, namespace: str | None, kubeconfig: str | None, context: str | None) -> dict[str, Any]:
    api, context_namespace = _client(kubeconfig, context)
    namespace = namespace or context_namespace or "default"
    try:
        found: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, "v1beta1", namespace, INFERENCE_SERVICE.plural, name
        )
    except ApiException as err:
        if err.status == 404:
            raise InputError(
                f'Error from server (NotFound): {INFERENCE_SERVICE.plural}.{GROUP} "{name}" not found '
                f'in namespace "{namespace}"'
            ) from None
        raise InputError(f"Error from server ({err.reason}): {err.body or err}") from None
    except OSError as err:  # urllib3's connection errors are OSErrors
        raise InputError(f"cannot reach the Kubernetes API: {err}") from None
    finally:
        api.close()
    manifest: dict[str, Any] = found
    return manifest
