"""policy-webhook: OME's admission webhooks (the three validators and the InferenceService
defaulter) answered by policyd. It decides nothing: it asks policyd, reads from the cluster what
policyd's catalog does not hold yet, and denies when policyd does not answer. Stateless: every
replica serves."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import threading
from pathlib import Path

from grpc_health.v1 import health_pb2_grpc

from policyd import version
from policyd.clients import channels
from policyd.clients.webhook.admission import Reviewer
from policyd.clients.webhook.certs import CertError, ServingCertificates
from policyd.clients.webhook.cluster_reads import ClusterReads, reads_client
from policyd.clients.webhook.server import WebhookServer
from policyd.contract import policy_pb2_grpc
from policyd.kubeconfig import ConfigError, load_configuration
from policyd.process.exiting import EXIT_MARGIN, exit_now, exit_within
from policyd.process.grpc_server import announce, stop_signal, until_stopped
from policyd.process.logs import configure_logging

log = logging.getLogger("policyd.webhook")
# seconds a policyd call may take: two calls (read-your-writes) and the GETs between them fit in
# the webhook configurations' timeoutSeconds (10)
DEFAULT_CALL_TIMEOUT = 4.0
DRAIN_TIMEOUT = 10.0  # seconds a stopping webhook waits for the reviews it is answering


class FlagError(ValueError):
    pass


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="policy-webhook", description=__doc__)
    p.add_argument("--version", action="version", version=version.line("policy-webhook"))
    p.add_argument(
        "--policyd",
        default="127.0.0.1:50051",
        help="policyd address, or host:port addresses comma-separated to balance calls over (default %(default)s)",
    )
    p.add_argument("--listen", default="0.0.0.0:9443", help="HTTPS host:port to serve on (default %(default)s)")
    p.add_argument(
        "--cert-dir",
        type=Path,
        default=Path("/tmp/k8s-webhook-server/serving-certs"),
        help="directory with tls.crt and tls.key, served as they change (default %(default)s)",
    )
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: as kubectl, $KUBECONFIG, ~/.kube/config, then the in-cluster service account)",
    )
    p.add_argument("--ready-file", type=Path, help="write the bound host:port here once serving")
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    p.add_argument("--log-format", choices=("json", "text"), default="json")
    # --tls-ca/--tls-cert/--tls-key/--request-timeout: the connection to policyd. Whatever the
    # timeout, no call outlasts the review's own deadline (server.review_deadline)
    channels.add_flags(p, default_timeout=DEFAULT_CALL_TIMEOUT)
    return p.parse_args(argv)


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise FlagError(f"--listen {text!r}: not host:port")
    return host.removeprefix("[").removesuffix("]") or "0.0.0.0", int(port)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    configure_logging(args.log_level, args.log_format)
    connection = channels.of(args)
    try:
        address = listen_address(args.listen)
        load_configuration(args.kubeconfig)
        channels.target_of(args.policyd)  # an address that cannot be connected to is refused before starting
        if connection.tls:
            connection.credentials()  # unreadable TLS files are refused before starting
        certs = ServingCertificates(args.cert_dir)
        certs.load()
    except (FlagError, ConfigError, channels.TlsFlagError, channels.AddressError, CertError) as err:
        print(f"policy-webhook: {err}", file=sys.stderr)
        return 2
    # the deadline each call sets itself (the review's): the channel's default would be longer
    # and no TLS diagnosis on every call: the reviewer asks for one when policyd does not answer
    connection = dataclasses.replace(connection, timeout=None)
    channel = connection.channel(args.policyd, diagnosed=False)
    api = reads_client()
    reviewer = Reviewer(
        policy_pb2_grpc.PolicyServiceStub(channel),
        args.policyd,
        ClusterReads(api),
        args.request_timeout or math.inf,
        lambda failed: connection.fault(failed, args.policyd),
    )
    try:
        server = WebhookServer(address, certs, reviewer, health_pb2_grpc.HealthStub(channel))
    except OSError as err:
        print(f"policy-webhook: --listen {args.listen}: {err.strerror or err}", file=sys.stderr)
        return 2
    stop = stop_signal()
    serving = threading.Thread(target=server.serve_forever, name="https", daemon=True)
    serving.start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    announce(f"{host}:{port}", args.ready_file)
    log.info("serving", extra={"listen": f"{host}:{port}", "policyd": args.policyd})
    until_stopped(stop)
    exit_within(DRAIN_TIMEOUT + EXIT_MARGIN)
    server.shutdown()  # no new connections; the reviews under way are answered
    server.server_close()
    if not server.in_flight.wait(DRAIN_TIMEOUT):
        log.warning("stopping with reviews still unanswered after %gs", DRAIN_TIMEOUT)
    channel.close()
    api.close()  # type: ignore[no-untyped-call]  # the kubernetes client is untyped
    log.info("stopped")
    return exit_now(0)


if __name__ == "__main__":
    sys.exit(main())
