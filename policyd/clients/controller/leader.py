"""One active controller: leader election on a coordination.k8s.io Lease, with the kubernetes
client's leaderelection. Standbys wait; a leader that cannot renew its lease stops."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from policyd.kubeconfig import BoundedApiClient

log = logging.getLogger("policyd.controller.leader")
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
LEASE_NAME = "policy-controller"
UNREACHABLE = (urllib3.exceptions.HTTPError, OSError)  # no answer from the API server


def default_namespace() -> str:
    """The pod's namespace (POD_NAMESPACE, or the service account's), else "default"."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


def elect(
    namespace: str,
    lease_duration: int,
    me: str,
    on_leading: Callable[[], None],
    on_lost: Callable[[], None],
) -> Lease:
    """Campaign on a thread of its own: ``on_leading`` once this process holds the lease,
    ``on_lost`` if it fails to renew it (the process must then stop acting)."""
    # the library logs every retry at INFO ("yet to finish lease_duration..."): only its warnings
    logging.getLogger("leaderelection").setLevel(logging.WARNING)
    renew_deadline = max(2, lease_duration * 2 // 3)
    lock = Lease(LEASE_NAME, namespace, me, timeout=max(1.0, renew_deadline / 4))
    config = electionconfig.Config(
        lock,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=max(1, renew_deadline // 4),
        onstarted_leading=on_leading,
        onstopped_leading=on_lost,
    )
    log.info(
        "waiting to hold the lease %s/%s",
        namespace,
        LEASE_NAME,
        extra={"identity": me, "lease_duration": lease_duration},
    )
    threading.Thread(target=_campaign, args=(config, on_lost), name="leader-election", daemon=True).start()
    return lock


def _campaign(config: electionconfig.Config, on_lost: Callable[[], None]) -> None:
    """The library's election, watched: should it raise, a leader stops acting (it no longer
    renews) and a standby campaigns again."""
    leading = threading.Event()
    started = config.onstarted_leading

    def on_leading() -> None:
        leading.set()
        started()

    config.onstarted_leading = on_leading
    while True:
        try:
            leaderelection.LeaderElection(config).run()
            return  # it led, then could not renew: on_lost was called
        except Exception:
            log.exception("leader election failed")
            if leading.is_set():
                on_lost()
                return
        time.sleep(config.retry_period)


class Lease(LeaseLock):
    """The library's Lease lock, which stops taking or renewing the lease once released, and
    takes an API server it cannot reach as a failed try (the library's lock catches only the
    API server's answers: a refused connection raised out of the election thread, which died,
    leaving a standby that never led or a leader that no longer renewed but went on acting)."""

    released = False

    def __init__(self, name: str, namespace: str, identity: str, timeout: float) -> None:
        super().__init__(name, namespace, identity)
        # each call bounded: one that hangs must not keep a leader acting past its renew deadline
        self.api_instance = client.CoordinationV1Api(BoundedApiClient(timeout))

    def get(self, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        try:
            found: tuple[bool, Any] = super().get(*args, **kwargs)
        except UNREACHABLE as err:
            log.warning("could not read the lease: %s", err)
            return False, err  # not a 404: the election retries at its next period
        return found

    def create(self, *args: Any, **kwargs: Any) -> bool:
        return not self.released and self._tried(super().create, *args, **kwargs)

    def update(self, *args: Any, **kwargs: Any) -> bool:
        return not self.released and self._tried(super().update, *args, **kwargs)

    @staticmethod
    def _tried(write: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        try:
            return bool(write(*args, **kwargs))
        except UNREACHABLE as err:
            log.warning("could not write the lease: %s", err)
            return False

    def release(self) -> None:
        """Give the lease up on a clean stop, so that a standby takes over at its next try instead
        of after the lease duration (a standby takes a lease without a holder at once)."""
        self.released = True
        leases = self.api_instance  # bounded: a stopping controller does not wait on a silent API server
        try:
            lease = leases.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            leases.replace_namespaced_lease(self.name, self.namespace, lease)
        except (ApiException, *UNREACHABLE) as err:
            log.warning("could not release the lease: %s", err)  # the standby takes it when it expires
