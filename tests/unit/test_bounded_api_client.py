"""A call to an API server that stopped answering fails instead of holding its thread for good
(policyd/kubeconfig.py BoundedApiClient, the controller's and its lease lock's client): a real
kubernetes client against a real socket that takes connections and never answers."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
import urllib3
from kubernetes import client

from policyd.kubeconfig import BoundedApiClient

NEVER = 60  # seconds: far past the bounds below; reaching it is the failure


@contextmanager
def silent_api_server() -> Iterator[client.Configuration]:
    """A listening socket nobody reads: the kernel takes each connection and its request, no answer
    ever comes. Closed at the end, which ends any read still waiting on it."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(16)
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{listening.getsockname()[1]}"
        configuration.retries = False  # one try: the bound is the timeout's, not urllib3's retries'
        yield configuration


def outcome(call: Callable[[], Any]) -> BaseException | None:
    with ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(call).result(timeout=NEVER)
        except TimeoutError:
            pytest.fail(f"the call was still waiting after {NEVER}s")
        except Exception as err:  # what the call raised is the outcome
            return err
    return None


def test_a_call_to_an_api_server_that_stopped_answering_fails_as_unreachable() -> None:
    with silent_api_server() as configuration:
        api = client.CustomObjectsApi(BoundedApiClient((1.0, 0.5), configuration))
        failed = outcome(lambda: api.list_cluster_custom_object("ome.io", "v1beta1", "clusterservingruntimes"))
    assert isinstance(failed, urllib3.exceptions.ReadTimeoutError), failed


def test_a_call_that_sets_its_own_timeout_keeps_it() -> None:
    with silent_api_server() as configuration:
        api = client.CoreV1Api(BoundedApiClient(NEVER * 2, configuration))
        failed = outcome(lambda: api.list_namespace(_request_timeout=0.5))
    assert isinstance(failed, urllib3.exceptions.ReadTimeoutError), failed
