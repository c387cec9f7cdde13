"""policyd: serve runtime-selection decisions over gRPC."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import NoReturn

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection
from kubernetes import client
from prometheus_client import start_http_server

from policyd.contract import policy_pb2, policy_pb2_grpc
from policyd.daemon.statedir import StateDir, StateDirError
from policyd.daemon.watch import Watcher
from policyd.daemon.workers import AFFINITIES, pin_to_cpu, serving_state, stop_with_parent, supervise
from policyd.edge.gate import Gate
from policyd.edge.limits import Limits
from policyd.kube.sync import ClusterCatalog
from policyd.kubeconfig import ConfigError, load_configuration
from policyd.policy.loader import BUNDLED_RULES, RuleFileError
from policyd.process.exiting import exit_now
from policyd.process.grpc_server import (
    Listen,
    ListenError,
    add_health,
    add_security_flags,
    announce,
    bind,
    check_exposure,
    new_server,
    parse_listen,
    seconds,
    set_serving,
    stop_signal,
    wait_for_stop_signal,
)
from policyd.process.heap import collect_and_give_back, give_back_heap, settle_heap
from policyd.process.logs import add_fields, configure_logging
from policyd.process.tls import ServerTls, TlsError, files_of
from policyd.resources.kinds import OME_KINDS
from policyd.server import observability as obs
from policyd.server.authz import Authorizer, AuthzError
from policyd.server.heavy import HeavyCalls
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ReloadAttempt, ServingState

log = logging.getLogger("policyd")
DEFAULT_RULES = BUNDLED_RULES
LOG_LEVELS = ("debug", "info", "warning", "error")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line and exit 2, as for every other start-up error."""
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is a number from 0 to 65535")
    return int(text)


def _listen(text: str) -> Listen:
    try:
        return parse_listen(text)
    except ListenError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _directory(what: str) -> Callable[[str], Path]:
    def check(text: str) -> Path:
        path = Path(text)
        if not path.exists():
            raise argparse.ArgumentTypeError(f"{what} directory {text} does not exist")
        if not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a file; {what} is a directory of manifests")
        return path

    return check


def _log_level(text: str) -> str:
    if text.lower() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (one of {', '.join(LOG_LEVELS)})")
    return text.lower()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="policyd", description=__doc__)
    p.add_argument("--version", action="version", version=f"policyd {metadata.version('policyd')}")
    p.add_argument(
        "--rules", type=_directory("the rules"), default=DEFAULT_RULES, help="rules directory, watched (%(default)s)"
    )
    p.add_argument(
        "--catalog", type=_directory("the catalog"), help="directory of runtime and model manifests, watched"
    )
    p.add_argument(
        "--cluster",
        action="store_true",
        help="list and watch the cluster's OME objects as the catalog (ready once every kind is listed); "
        "ApplyObjects and DeleteObjects are refused",
    )
    p.add_argument(
        "--kubeconfig",
        help="with --cluster: kubeconfig file (default: as kubectl, $KUBECONFIG, ~/.kube/config, "
        "then the in-cluster service account)",
    )
    p.add_argument("--listen", type=_listen, default="127.0.0.1:50051", help="host:port, or unix:PATH (%(default)s)")
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    p.add_argument(
        "--metrics-port",
        type=_port,
        default=0,
        help="Prometheus metrics port, on the --listen host (0, the default: off)",
    )
    p.add_argument("--decision-log", type=Path, help="append one JSON line per decision to this file")
    p.add_argument("--log-level", type=_log_level, default="info", help=f"{', '.join(LOG_LEVELS)} (%(default)s)")
    p.add_argument("--log-format", choices=("json", "text"), default="json", help="json or text (%(default)s)")
    p.add_argument(
        "--watch-interval",
        type=float,
        default=0.2,
        help="seconds between checks of the watched directories (%(default)s)",
    )
    p.add_argument("--workers", type=_at_least(1), default=8, help="threads serving calls (%(default)s)")
    p.add_argument(
        "--decision-cache-mb",
        type=_at_least(0),
        default=64,
        help="memory for cached decisions, 0 for no cache (%(default)s)",
    )
    add_security_flags(p)
    add_limit_flags(p)
    args = p.parse_args(argv)
    for name in ("watch_interval", "call_timeout"):
        if getattr(args, name) <= 0:
            p.error(f"argument --{name.replace('_', '-')}: must be more than 0, got {getattr(args, name)}")
    if args.cluster and args.catalog is not None:
        p.error("--cluster and --catalog: the catalog is either the cluster's or a directory's, not both")
    if args.cluster and args.processes > 1:
        p.error(
            "--cluster serves from one process: run more replicas (each watches the cluster) instead of --processes"
        )
    if args.kubeconfig and not args.cluster:
        p.error("--kubeconfig is for --cluster")
    if args.shutdown_grace < 0:
        p.error(f"argument --shutdown-grace: must be 0 or more, got {args.shutdown_grace}")
    return args


def add_limit_flags(p: argparse.ArgumentParser) -> None:
    d = Limits()
    p.add_argument(
        "--authz", type=Path, help="YAML file of read: and write: client identity lists (docs/operations.md#security)"
    )
    p.add_argument(
        "--health-listen",
        type=_listen,
        help="also serve gRPC health checking alone, plaintext, here (for kubelet probes: host:port)",
    )
    p.add_argument("--metrics-host", help="host the metrics endpoint binds (default: the --listen host)")
    p.add_argument(
        "--max-message-bytes", type=_at_least(1024), default=d.max_message_bytes, help="largest request (%(default)s)"
    )
    p.add_argument(
        "--max-objects", type=_at_least(1), default=d.max_objects, help="objects or keys in one request (%(default)s)"
    )
    p.add_argument(
        "--max-manifest-bytes", type=_at_least(1024), default=d.max_manifest_bytes, help="one manifest (%(default)s)"
    )
    p.add_argument(
        "--max-concurrent-rpcs",
        type=_at_least(1),
        default=d.max_concurrent,
        help="calls in progress or queued; more are RESOURCE_EXHAUSTED (%(default)s)",
    )
    p.add_argument(
        "--call-timeout",
        type=seconds,
        default=d.call_timeout,
        help="seconds a call may run, when the client's deadline is later or unset (%(default)s)",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        help="keep the last good rules and the API's catalog changes here, to start from after a restart",
    )
    p.add_argument(
        "--processes",
        type=_at_least(1),
        default=1,
        help="serve from this many processes on one TCP port, sharing catalog changes (%(default)s)",
    )
    p.add_argument(
        "--cpu-affinity",
        choices=AFFINITIES,
        default="auto",
        help="pin each of --processes' workers to a CPU of its own: auto does when the workers are as many as "
        "the CPUs policyd may run on (a dedicated machine, an exclusive cpuset) (%(default)s)",
    )
    p.add_argument("--journal", type=Path, help=argparse.SUPPRESS)  # set by --processes for its workers
    p.add_argument("--pin-cpu", type=int, help=argparse.SUPPRESS)  # set by --processes for its workers
    p.add_argument("--own-listen", type=_listen, help=argparse.SUPPRESS)  # set by --processes: a worker's own port
    p.add_argument("--endpoints", default="", help=argparse.SUPPRESS)  # set by --processes: every worker's own port
    p.add_argument(
        "--parse-cache",
        type=Path,
        default=default_parse_cache(),
        help="directory for what catalog files parsed into, by content; '' for none (%(default)s)",
    )


def default_parse_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "policyd"


def _record_reload(attempt: ReloadAttempt) -> None:
    obs.RELOADS.labels("ok" if attempt.ok else "refused").inc()
    if attempt.ok:
        obs.RULES_REVISION.clear()
        obs.RULES_REVISION.labels(attempt.revision).set(1)
        log.info("rules revision serving", extra={"revision": attempt.revision})
    else:
        log.error(
            "rules refused; last good rules keep serving",
            extra={
                "revision": attempt.revision,
                "file": attempt.file,
                "rule_id": attempt.rule_id,
                "line": attempt.line,
                "error": attempt.error,
            },
        )


def _record_catalog(state: ServingState) -> None:
    catalog = state.catalog
    for kind in ("ClusterServingRuntime", "ServingRuntime"):
        obs.CATALOG_SIZE.labels(kind).set(sum(1 for k in catalog.runtimes if k[0] == kind))
    for kind in ("ClusterBaseModel", "BaseModel"):
        obs.CATALOG_SIZE.labels(kind).set(sum(1 for k in catalog.models if k[0] == kind))
    obs.CATALOG_SIZE.labels("InferenceService").set(len(catalog.inference_services))
    obs.CATALOG_SIZE.labels("AcceleratorClass").set(len(catalog.accelerator_classes))
    obs.CATALOG_ERRORS.set(len(state.catalog_errors) - len(state.catalog_faults))
    obs.CATALOG_FAULTS.set(len(state.catalog_faults))


def _metrics_host(listen: Listen, host: str | None = None) -> str:
    """--metrics-host, else the host --listen binds; loopback for a unix socket (nothing else was
    asked to be reachable)."""
    if host:
        return host
    return "127.0.0.1" if listen.unix else listen.host


class StartError(Exception):
    pass


def _start_metrics(port: int, listen: Listen, metrics_host: str | None) -> None:
    host = _metrics_host(listen, metrics_host)
    try:
        start_http_server(port, addr=host, registry=obs.REGISTRY)
    except OSError as err:
        reason = err.strerror.lower() if err.strerror else str(err)
        raise StartError(f"cannot serve metrics on {host}:{port}: {reason}") from None


def _decision_log(path: Path | None) -> obs.DecisionLog:
    try:
        return obs.DecisionLog(path)
    except OSError as err:
        raise StartError(f"cannot write the decision log {path}: {err.strerror or err}") from None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    try:
        if args.processes > 1 and args.journal is None:
            return supervise(sys.argv[1:] if argv is None else argv, args)
        return _serve(args)
    except StartError as err:
        print(f"policyd: cannot start: {err}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    if args.own_listen is not None:  # a worker of --processes: its index is its endpoint's
        add_fields(worker=args.endpoints.split(",").index(args.own_listen.text), pid=os.getpid())
    decisions = _decision_log(args.decision_log)
    kept = _state_dir(args)
    holder: list[ServingState] = []

    def on_reload(attempt: ReloadAttempt) -> None:
        _record_reload(attempt)
        if attempt.ok:
            give_back_heap()  # what building and self-testing the revision dropped
        if attempt.ok and kept is not None and holder:
            kept.keep_rules(holder[0].revision)

    try:
        state = serving_state(
            args.journal,
            args.rules,
            args.catalog,
            on_reload,
            cache_bytes=args.decision_cache_mb << 20,
            last_good_rules=kept.last_good_rules() if kept is not None else None,
            changes=kept.load_changes() if kept is not None else None,
            parse_cache=args.parse_cache if str(args.parse_cache) not in ("", ".") else None,
        )
    except RuleFileError as err:
        raise StartError(f"rules refused: {err}") from None
    holder.append(state)
    if kept is not None:
        state.on_changes = kept.save_changes
        state.changes_kept = True
    _record_catalog(state)
    settle_heap()

    def on_catalog() -> None:
        _record_catalog(state)
        settle_heap()

    state.on_catalog = on_catalog
    for error in state.catalog_errors:
        print(f"policyd: catalog: {error}", file=sys.stderr)

    limits = Limits(
        args.max_message_bytes, args.max_objects, args.max_manifest_bytes, args.max_concurrent_rpcs, args.call_timeout
    )
    credentials = server_credentials(args)
    try:
        authorizer = Authorizer(args.authz) if args.authz is not None else None
    except AuthzError as err:
        raise StartError(f"--authz: {err}") from None
    cluster = _cluster(args, state)
    service = policy_pb2.DESCRIPTOR.services_by_name["PolicyService"].full_name
    gate = Gate((service,), limits, authorizer, obs.count_call)
    shared = args.journal is not None  # a worker of --processes: the supervisor holds the ports
    if args.pin_cpu is not None:
        pin_to_cpu(args.pin_cpu)  # loaded (its parsing forked onto every CPU), before serving
    server = new_server(args.workers, limits.max_message_bytes, limits.max_concurrent, [gate], shared)
    endpoints = tuple(e for e in args.endpoints.split(",") if e)
    # a quarter of the threads for calls with catalogs or rules of their own; the rest stay the webhook's
    # and the controller's (their heap given back once none runs)
    heavy = HeavyCalls(args.workers // 4, on_idle=collect_and_give_back)
    servicer = PolicyServicer(state, decisions, endpoints=endpoints, cluster=cluster, heavy=heavy)
    policy_pb2_grpc.add_PolicyServiceServicer_to_server(servicer, server)
    health_servicer = add_health(server, [service], serving=cluster is None)
    healths = [health_servicer]
    reflection.enable_server_reflection((service, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = listen_on(server, args.listen, credentials, args.insecure, shared)
    if args.own_listen is not None:
        listen_on(server, args.own_listen, credentials, args.insecure, shared)
    probes = None
    if args.health_listen is not None:
        probes = new_server(1, 1 << 16, shared=shared)
        probe_health = add_health(probes, [service], serving=cluster is None)
        healths.append(probe_health)
        # health alone: nothing to hide, and kubelet probes speak plaintext
        listen_on(probes, args.health_listen, None, True, shared)
    if args.metrics_port:
        _start_metrics(args.metrics_port, args.listen, args.metrics_host)
    server.start()
    if probes is not None:
        probes.start()
    _serving_rules(state, kept, args.state_dir)

    if cluster is not None:

        def ready() -> None:
            settle_heap()  # what the lists parsed from drops: given back before serving
            set_serving(healths, [service])  # ready once every kind is listed

        cluster.on_ready = ready
        cluster.start()
    watchers = [Watcher(args.rules, False, args.watch_interval, state.reload_rules)]
    if args.catalog is not None:
        interval = max(args.watch_interval, 1.0)
        watchers.append(Watcher(args.catalog, True, interval, state.reload_catalog, state.catalog_signature()))
    for w in watchers:
        w.start()
    log.info(
        "serving",
        extra={"address": address, "rules_revision": state.revision.id, "catalog_revision": state.catalog.revision},
    )
    stopping = stop_signal()
    if shared:
        stop_with_parent(stopping)
    announce(address, args.ready_file)
    wait_for_stop_signal(stopping, server, health_servicer, args.shutdown_grace, gate.drain)
    if probes is not None:
        probe_health.enter_graceful_shutdown()
        probes.stop(0)
    for w in watchers:
        w.stop()
    if cluster is not None:
        cluster.stop()
    return exit_now(0)


def _cluster(args: argparse.Namespace, state: ServingState) -> ClusterCatalog | None:
    """--cluster: the watches that fill the catalog (started once the server serves)."""
    if not args.cluster:
        return None
    try:
        load_configuration(args.kubeconfig)
    except ConfigError as err:
        raise StartError(str(err)) from None
    configuration = client.Configuration.get_default_copy()
    configuration.connection_pool_maxsize = len(OME_KINDS) + 2  # a watch a kind, and lists
    configuration.retries = 0  # the watches back off and try again themselves, and say so once
    return ClusterCatalog(state, client.ApiClient(configuration), on_change=_record_cluster)


def _record_cluster(cluster: ClusterCatalog) -> None:
    for kind, refused, _, _ in cluster.kinds():
        obs.CATALOG_SIZE.labels(kind.kind.name).set(len(kind.keys))
        obs.CLUSTER_SYNCED.labels(kind.kind.name).set(1 if kind.synced else 0)
        obs.CLUSTER_REFUSED.labels(kind.kind.name).set(refused)
    obs.CATALOG_ERRORS.set(len(cluster.refused))


def _serving_rules(state: ServingState, kept: StateDir | None, state_dir: Path | None) -> None:
    """Say which rules serve, keep them as the last good ones: once the server really serves (a
    daemon that cannot start serves none)."""
    _record_reload(state.last_attempt)
    if not state.last_attempt.ok:
        print(
            f"policyd: rules refused: {state.last_attempt.error}; serving the last good revision "
            f"{state.revision.id} kept in {state_dir}",
            file=sys.stderr,
        )
    elif kept is not None:
        kept.keep_rules(state.revision)


def _state_dir(args: argparse.Namespace) -> StateDir | None:
    if args.state_dir is None:
        return None
    try:
        return StateDir(args.state_dir, args.rules)
    except StateDirError as err:
        raise StartError(str(err)) from None


def server_credentials(args: argparse.Namespace) -> grpc.ServerCredentials | None:
    """TLS from --tls-cert/--tls-key/--tls-client-ca, or None; StartError when they cannot serve."""
    try:
        files = files_of(args.tls_cert, args.tls_key, args.tls_client_ca)
        return ServerTls(files).credentials() if files is not None else None
    except TlsError as err:
        raise StartError(str(err)) from None


def listen_on(
    server: grpc.Server,
    listen: Listen,
    credentials: grpc.ServerCredentials | None,
    insecure: bool,
    shared: bool = False,
) -> str:
    try:
        check_exposure(listen, credentials is not None, insecure)
        return bind(server, listen, credentials, shared)
    except ListenError as err:
        raise StartError(f"cannot listen on {err}") from None


if __name__ == "__main__":
    sys.exit(main())
