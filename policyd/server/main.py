"""policyd: serve runtime-selection decisions over gRPC."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import NoReturn

from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from policyd.contract import policy_pb2, policy_pb2_grpc
from policyd.grpc_process import (
    Listen,
    ListenError,
    add_health,
    announce,
    bind,
    new_server,
    parse_listen,
    wait_for_stop_signal,
)
from policyd.policy.loader import BUNDLED_RULES, RuleFileError
from policyd.server import observability as obs
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ReloadAttempt, ServingState
from policyd.server.watch import Watcher

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
    args = p.parse_args(argv)
    if args.watch_interval <= 0:
        p.error(f"argument --watch-interval: must be more than 0, got {args.watch_interval}")
    return args


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
    obs.CATALOG_ERRORS.set(len(state.catalog_errors))


def _metrics_host(listen: Listen) -> str:
    """The host --listen binds; loopback for a unix socket (nothing else was asked to be reachable)."""
    return "127.0.0.1" if listen.unix else listen.host


class StartError(Exception):
    pass


def _start_metrics(port: int, listen: Listen) -> None:
    host = _metrics_host(listen)
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
    obs.configure_logging(args.log_level, args.log_format)
    try:
        return _serve(args)
    except StartError as err:
        print(f"policyd: cannot start: {err}", file=sys.stderr)
        return 2


def _serve(args: argparse.Namespace) -> int:
    decisions = _decision_log(args.decision_log)
    try:
        state = ServingState(args.rules, args.catalog, _record_reload, args.decision_cache_mb << 20)
    except RuleFileError as err:
        raise StartError(f"rules refused: {err}") from None
    _record_reload(state.last_attempt)
    _record_catalog(state)
    for error in state.catalog_errors:
        print(f"policyd: catalog: {error}", file=sys.stderr)

    server = new_server(args.workers)
    policy_pb2_grpc.add_PolicyServiceServicer_to_server(PolicyServicer(state, decisions), server)
    service = policy_pb2.DESCRIPTOR.services_by_name["PolicyService"].full_name
    health_servicer = add_health(server, [service])
    reflection.enable_server_reflection((service, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    try:
        address = bind(server, args.listen)
    except ListenError as err:
        raise StartError(f"cannot listen on {err}") from None
    if args.metrics_port:
        _start_metrics(args.metrics_port, args.listen)
    server.start()

    def reload_catalog() -> None:
        state.reload_catalog()
        _record_catalog(state)

    watchers = [Watcher(args.rules, False, args.watch_interval, state.reload_rules)]
    if args.catalog is not None:
        watchers.append(Watcher(args.catalog, True, max(args.watch_interval, 1.0), reload_catalog))
    for w in watchers:
        w.start()
    log.info(
        "serving",
        extra={"address": address, "rules_revision": state.revision.id, "catalog_revision": state.catalog.revision},
    )
    announce(address, args.ready_file)
    wait_for_stop_signal(server, health_servicer)
    for w in watchers:
        w.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
