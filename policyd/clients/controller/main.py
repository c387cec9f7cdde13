"""policy-controller: keep policyd's catalog in sync with the cluster's runtimes and models;
for each InferenceService write the RuntimeReady condition and events from policyd's answer
and server-side apply the workloads the renderer makes of it. One replica acts (a Lease)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from kubernetes import client

from policyd import version
from policyd.clients import channels
from policyd.clients.controller import leader
from policyd.clients.controller.catalog_sync import CatalogSync
from policyd.clients.controller.controller import Controller
from policyd.clients.controller.events import EventRecorder
from policyd.clients.controller.kube import Kube
from policyd.clients.controller.operator import lead
from policyd.clients.controller.reconcile import Reconciler
from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.kubeconfig import BoundedApiClient, ConfigError, load_configuration
from policyd.process.exiting import exit_now, exit_within
from policyd.process.logs import configure_logging

log = logging.getLogger("policyd.controller")
# seconds a stopping controller has for the keys in progress and the lease's release: under the 30
# Kubernetes waits before SIGKILL, so a stop that hangs leaves its threads' stacks in the log
STOP_SECONDS = 25.0
# each call to the API server: seconds to connect, and to wait for its next bytes (a page of a list
# included) — one to a server that stopped answering fails and is retried, not waited on for good
API_TIMEOUT = (5.0, 30.0)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="policy-controller", description=__doc__)
    p.add_argument("--version", action="version", version=version.line("policy-controller"))
    p.add_argument(
        "--policyd",
        default="127.0.0.1:50051",
        help="policyd address, or host:port addresses comma-separated to balance calls over (default %(default)s)",
    )
    p.add_argument(
        "--renderer", default="unix:/tmp/policy-render.sock", help="renderer sidecar address (default %(default)s)"
    )
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: as kubectl, $KUBECONFIG, ~/.kube/config, then the in-cluster service account)",
    )
    p.add_argument(
        "--leader-election-namespace",
        default=None,
        help="namespace of the Lease that elects the active replica (default: the pod's namespace, else default)",
    )
    p.add_argument(
        "--lease-duration",
        type=int,
        default=15,
        help="seconds a standby waits after the leader stopped renewing before taking over (default %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=8,
        help="InferenceServices reconciled at once (keys of one never at once) (default %(default)s)",
    )
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=("json", "text"), default="json")
    channels.add_flags(p)  # --tls-ca/--tls-cert/--tls-key/--request-timeout: both connections, when host:port
    args = p.parse_args(argv)
    if args.lease_duration < 3:
        p.error("--lease-duration: must be at least 3 seconds")
    if args.workers < 1:
        p.error("--workers: must be at least 1")
    return args


async def run(args: argparse.Namespace) -> int:
    loop = asyncio.get_running_loop()
    stop, leading, lost = asyncio.Event(), asyncio.Event(), asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)  # kopf takes them over while it runs
    me = leader.identity()
    namespace = args.leader_election_namespace or leader.default_namespace()
    lease = leader.elect(
        namespace,
        args.lease_duration,
        me,
        on_leading=lambda: _set_from_thread(loop, leading),
        on_lost=lambda: _set_from_thread(loop, lost),
    )
    if not await _first(leading, stop):
        lease.released = True
        log.info("stopped while standing by")
        return 0
    log.info("leading: this replica acts", extra={"identity": me})
    connection = channels.of(args)
    opened = (connection.channel(args.policyd), connection.channel(args.renderer))
    policy = policy_pb2_grpc.PolicyServiceStub(opened[0])
    renderer = render_pb2_grpc.RendererServiceStub(opened[1])
    configuration = client.Configuration.get_default_copy()
    # a connection per worker, and the lists and the audit's: urllib3 discards what does not fit
    configuration.connection_pool_maxsize = args.workers + 2
    api = BoundedApiClient(API_TIMEOUT, configuration)
    kube = Kube(api, me)
    catalog = CatalogSync(policy, args.policyd)
    controller = Controller(
        kube,
        catalog,
        Reconciler(policy, renderer, (args.policyd, args.renderer), catalog.at_least),
        EventRecorder(kube),
    )
    operator = asyncio.create_task(lead(controller, stop, args.workers))
    waiters = {asyncio.create_task(lost.wait()), asyncio.create_task(stop.wait())}
    try:
        await asyncio.wait({operator, *waiters}, return_when=asyncio.FIRST_COMPLETED)
        exit_within(STOP_SECONDS)
        operator.cancel()  # a no-op when it ended (kopf stopped on SIGTERM)
        with contextlib.suppress(asyncio.CancelledError):
            await operator
        for waiter in waiters:
            waiter.cancel()
    finally:
        # closed before the interpreter finalises: gRPC's and the client's threads left running
        # then can abort the process after it said it stopped
        for channel in opened:
            channel.close()
        api.close()  # type: ignore[no-untyped-call]  # the kubernetes client is untyped
    if lost.is_set():
        log.error("lost the lease: stopping so that only the new leader acts")
        return 1
    await asyncio.to_thread(lease.release)
    log.info("stopped")
    return 0


def _set_from_thread(loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    loop.call_soon_threadsafe(event.set)


async def _first(wanted: asyncio.Event, stop: asyncio.Event) -> bool:
    waiters = {asyncio.create_task(wanted.wait()), asyncio.create_task(stop.wait())}
    _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return wanted.is_set()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    configure_logging(args.log_level, args.log_format)
    if args.log_level.lower() != "debug":
        logging.getLogger("kopf").setLevel(logging.WARNING)  # kopf logs every handled watch event at INFO
    try:
        load_configuration(args.kubeconfig)
        for address in (args.policyd, args.renderer):
            channels.target_of(address)  # an address that cannot be connected to is refused before starting
        if channels.of(args).tls:
            channels.of(args).credentials()  # unreadable TLS files are refused before starting
    except (ConfigError, channels.TlsFlagError, channels.AddressError) as err:
        print(f"policy-controller: {err}", file=sys.stderr)
        return 2
    return exit_now(asyncio.run(run(args)))


if __name__ == "__main__":
    sys.exit(main())
