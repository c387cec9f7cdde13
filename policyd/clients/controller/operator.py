"""The controller on kopf: kopf's watches (listing, resuming from the last resourceVersion,
listing again after 410 Gone, reconnecting after errors) feed the Controller; several workers do
its work (a key in one at a time), retrying failed keys with backoff, and audit the catalog now
and then."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from policyd.clients.controller.controller import AUDIT, CATALOG, PRIORITY, Controller, Key, NotReady, Retry
from policyd.clients.controller.kube import CATALOG_KINDS, GROUP, PLURALS, VERSION, WORKLOAD_KINDS
from policyd.clients.controller.reconcile import Unavailable
from policyd.clients.controller.workqueue import MAX_DELAY, WorkQueue
from policyd.clients.renderer.metadata import LABEL_ISVC
from policyd.process.heap import give_back_heap

log = logging.getLogger("policyd.controller")
AUDIT_INTERVAL = 300.0  # seconds; a safety net; gaps in a watch trigger an audit at once
NOT_READY_DELAY = 1.0
# Failures the controller expects from its peers: reported without a traceback, then retried.
EXPECTED = (Unavailable, Retry, ApiException, urllib3.exceptions.HTTPError)


class NoDiffBase(kopf.DiffBaseStorage):
    """No change detection: kopf copies every object it is shown (managedFields and all) to find
    what changed for state-keeping handlers (on.create, on.update…), and the controller has only
    on.event handlers. At start, those copies were a third of its CPU over thousands of pods."""

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def settings() -> kopf.OperatorSettings:
    s = kopf.OperatorSettings()
    s.persistence.diffbase_storage = NoDiffBase()
    s.posting.enabled = False  # kopf's own events about its handlers: the controller records its own
    # OME's CRDs are found once at start, not watched: that would need cluster-wide read of every CRD
    s.scanning.disabled = True
    s.peering.standalone = True  # one active replica comes from the Lease (leader.py), not kopf's peering
    s.watching.server_timeout = 300  # watches end and resume from their resourceVersion every 5 minutes
    s.networking.request_timeout = 60
    s.queueing.idle_timeout = 1.0  # the handlers only enqueue: idle workers may go, and stopping waits for them
    s.queueing.exit_timeout = 1.0
    # what InferenceServices own is filtered by the API server (in a real cluster most pods, Services
    # and service accounts are someone else's), and listed in pages, each handed on before the next
    s.watching.chunk_size = 500
    for group, version, plural, _ in OWNED_RESOURCES:
        s.watching.label_selectors[group, version, plural] = LABEL_ISVC
    return s


def login(**_: Any) -> kopf.ConnectionInfo:
    """kopf connects as the kubernetes client was configured (kubectl's lookup, kube.load_configuration)."""
    config = client.Configuration.get_default_copy()
    header = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix("authorization")
    scheme, _space, token = (header or "").rpartition(" ")
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


OWNED_PLURALS = {
    "Deployment": "deployments",
    "Service": "services",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "LeaderWorkerSet": "leaderworkersets",
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Pod": "pods",
}


# (group, version, plural, kind) of each kind InferenceServices own: the workloads applied, and their pods
OWNED_RESOURCES = tuple(
    (*api_version.rpartition("/")[::2], OWNED_PLURALS[kind], kind)
    for api_version, kind in (*WORKLOAD_KINDS, ("v1", "Pod"))
)


def registry(controller: Controller, queue: WorkQueue) -> kopf.OperatorRegistry:
    """The handlers are coroutines: they only record and queue, without I/O, so they run on the
    event loop, as the work queue must be used (kopf runs a plain function on a thread of its
    executor, a hop per event that was most of the start's CPU)."""
    reg = kopf.OperatorRegistry()
    kopf.on.login(registry=reg)(login)
    for kind in (*CATALOG_KINDS, "InferenceService"):

        async def observe(event: kopf.RawEvent, kind: str = kind, **_: Any) -> None:
            obj = dict(event["object"])
            obj.setdefault("kind", kind)  # objects of a listing come without it
            for key in controller.observe(event["type"], obj):
                queue.add(key)

        kopf.on.event(GROUP, VERSION, PLURALS[kind], registry=reg, id=f"observe-{PLURALS[kind]}")(observe)
    # what InferenceServices own (the workloads applied, and their pods): deletions and edits
    # repaired, status reported
    for group, version, plural, kind in OWNED_RESOURCES:
        api_version = f"{group}/{version}" if group else version

        async def observe_owned(
            event: kopf.RawEvent, kind: str = kind, api_version: str = api_version, **_: Any
        ) -> None:
            obj = dict(event["object"])
            obj.setdefault("kind", kind)  # objects of a listing come without them
            obj.setdefault("apiVersion", api_version)
            for key in controller.observe_owned(event["type"], obj):
                queue.add(key)

        kopf.on.event(group, version, plural, registry=reg, id=f"observe-{plural}")(observe_owned)
    return reg


def describe(key: Key) -> str:
    if key == AUDIT:
        return "catalog audit"
    if key == CATALOG:
        return "catalog push"
    if key[0] == "status":
        return f"status of InferenceService {key[1]}/{key[2]}"
    kind = "InferenceService" if key[0] == "isvc" else str(key[1])
    return f"{kind} {'/'.join(str(part) for part in key[-2:] if part)}"


async def work(controller: Controller, queue: WorkQueue, threads: ThreadPoolExecutor) -> None:
    """One worker: a key at a time, on a thread (the clients block); never ends on a failure."""
    loop = asyncio.get_running_loop()
    while True:
        key = await queue.get()
        try:
            follow_ups = await loop.run_in_executor(threads, controller.process, key)
        except NotReady:
            queue.again(key, NOT_READY_DELAY)
            continue
        except EXPECTED as err:
            delay = queue.failed(key)
            log.error(
                "%s: %s; retrying in %.1fs",
                describe(key),
                _reason(err),
                delay,
                extra={"retry_in": delay, **_status(err)},
            )
            if not controller.catalog_ready:
                queue.add(AUDIT, delay)  # refill policyd's catalog first when it is back
            continue
        except Exception:  # a bug must not stop the controller's other work; it is logged with its trace
            delay = queue.failed(key)
            log.exception("%s failed; retrying in %.1fs", describe(key), delay)
            continue
        queue.done(key)
        for follow_up in follow_ups:
            queue.add(follow_up)


async def report_caught_up(controller: Controller, queue: WorkQueue, started: float) -> None:
    """Log once when the work found at start is done: the first audit and every key it led to."""
    while True:
        await queue.idle()
        if controller.catalog_ready:
            log.info("caught up", extra={"seconds": round(time.monotonic() - started, 3)})
            # the start's listings and decisions are garbage now: glibc keeps their free space unless asked
            give_back_heap()
            return
        await asyncio.sleep(0.5)  # the first audit is failing: its retry is not due yet


async def audit_periodically(queue: WorkQueue) -> None:
    while True:
        await asyncio.sleep(AUDIT_INTERVAL)
        queue.add(AUDIT)


async def lead(controller: Controller, stop: asyncio.Event, workers: int = 1) -> None:
    """Run kopf and the worker until kopf stops on SIGTERM (it handles the signal while it runs),
    ``stop`` is set, or this is cancelled. A watch that keeps failing (a 403, say) ends kopf: it is
    started again with backoff, the worker going on meanwhile. No stop flag is given to kopf: it
    would wait for that flag's waiter when stopping on a signal."""
    queue = WorkQueue(PRIORITY)
    queue.add(AUDIT)
    threads = ThreadPoolExecutor(workers, thread_name_prefix="worker")
    tasks = [asyncio.create_task(work(controller, queue, threads)) for _ in range(workers)]
    tasks += [
        asyncio.create_task(audit_periodically(queue)),
        asyncio.create_task(report_caught_up(controller, queue, time.monotonic())),
    ]
    delay = 1.0
    try:
        while not stop.is_set():
            try:
                await kopf.operator(registry=registry(controller, queue), settings=settings(), clusterwide=True)
                return
            except Exception as err:
                log.error(
                    "the watches stopped: %s; starting them again in %.0fs", _reason(err), delay, extra=_status(err)
                )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)  # kopf's handlers went with it
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await stop.wait()
            delay = min(delay * 2, MAX_DELAY)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.to_thread(threads.shutdown)  # the keys in progress finish


def _reason(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"Kubernetes API: {err.status} {err.reason}: {_api_message(err)}"
    return str(err) or type(err).__name__


def _status(err: BaseException) -> dict[str, int]:
    """The HTTP status the API server answered with (the kubernetes client's and kopf's errors), as a log field."""
    status = getattr(err, "status", None)
    return {"status": status} if isinstance(status, int) else {}


def _api_message(err: ApiException) -> str:
    try:
        return str(json.loads(err.body or "{}").get("message", ""))
    except ValueError:
        return str(err.body or "")
