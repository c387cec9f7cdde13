"""One active controller: leader election on a coordination.k8s.io Lease, with the kubernetes
client's leaderelection. Standbys wait; a leader that cannot renew its lease stops."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

log = logging.getLogger("policyd.controller.leader")
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
LEASE_NAME = "policy-controller"


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
    lock = Lease(LEASE_NAME, namespace, me)
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
    threading.Thread(target=leaderelection.LeaderElection(config).run, name="leader-election", daemon=True).start()
    return lock


class Lease(LeaseLock):
    """The library's Lease lock, which stops taking or renewing the lease once released."""

    released = False

    def create(self, *args: Any, **kwargs: Any) -> bool:
        return not self.released and bool(super().create(*args, **kwargs))

    def update(self, *args: Any, **kwargs: Any) -> bool:
        return not self.released and bool(super().update(*args, **kwargs))

    def release(self) -> None:
        """Give the lease up on a clean stop, so that a standby takes over at its next try instead
        of after the lease duration (a standby takes a lease without a holder at once)."""
        self.released = True
        leases = client.CoordinationV1Api()
        try:
            lease = leases.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            leases.replace_namespaced_lease(self.name, self.namespace, lease)
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            log.warning("could not release the lease: %s", err)  # the standby takes it when it expires
