"""policyd: serve runtime-selection decisions over gRPC."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from policyd.contract import policy_pb2, policy_pb2_grpc
from policyd.grpc_process import add_health, announce, bind, wait_for_stop_signal
from policyd.policy.loader import BUNDLED_RULES, RuleFileError
from policyd.server import observability as obs
from policyd.server.heap import settle_heap
from policyd.server.processes import serving_state, supervise
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ReloadAttempt, ServingState
from policyd.server.watch import Watcher

log = logging.getLogger("policyd")
DEFAULT_RULES = BUNDLED_RULES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="policyd", description=__doc__)
    p.add_argument("--rules", type=Path, default=DEFAULT_RULES, help="rules directory (default: the bundled rules)")
    p.add_argument("--catalog", type=Path, help="directory of runtime and model manifests, watched")
    p.add_argument("--listen", default="127.0.0.1:50051", help="host:port, or unix:PATH")
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    p.add_argument("--metrics-port", type=int, default=0, help="Prometheus metrics port (0: off)")
    p.add_argument("--decision-log", type=Path, help="append one JSON line per decision to this file")
    p.add_argument("--log-level", default="info")
    p.add_argument("--log-format", choices=("json", "text"), default="json")
    p.add_argument(
        "--watch-interval", type=float, default=0.2, help="seconds between checks of the watched directories"
    )
    p.add_argument("--workers", type=int, default=8, help="threads per process")
    p.add_argument(
        "--processes", type=int, default=1, help="serve from this many processes on one TCP port (SO_REUSEPORT)"
    )
    p.add_argument("--journal", type=Path, help=argparse.SUPPRESS)  # set by --processes for its workers
    p.add_argument("--decision-cache-mb", type=int, default=64, help="memory for cached decisions (0: no cache)")
    p.add_argument(
        "--parse-cache",
        type=Path,
        default=default_parse_cache(),
        help="directory for what catalog files parsed into, by content (default: %(default)s; '' for none)",
    )
    return p.parse_args(argv)


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
    obs.CATALOG_ERRORS.set(len(state.catalog_errors))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    obs.configure_logging(args.log_level, args.log_format)
    if args.processes > 1 and args.journal is None:
        given = sys.argv[1:] if argv is None else argv
        return supervise(given, args.listen, args.processes, args.ready_file, args.metrics_port)
    try:
        parse_cache = args.parse_cache if str(args.parse_cache) not in ("", ".") else None
        state = serving_state(
            args.journal, args.rules, args.catalog, _record_reload, args.decision_cache_mb << 20, parse_cache
        )
    except RuleFileError as err:
        print(f"policyd: cannot start: rules refused: {err}", file=sys.stderr)
        return 2
    _record_reload(state.last_attempt)
    _record_catalog(state)
    settle_heap()
    for error in state.catalog_errors:
        print(f"policyd: catalog: {error}", file=sys.stderr)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers))
    policy_pb2_grpc.add_PolicyServiceServicer_to_server(
        PolicyServicer(state, obs.DecisionLog(args.decision_log)), server
    )
    service = policy_pb2.DESCRIPTOR.services_by_name["PolicyService"].full_name
    health_servicer = add_health(server, [service])
    reflection.enable_server_reflection((service, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = bind(server, args.listen)
    if address is None:
        print(f"policyd: cannot listen on {args.listen}", file=sys.stderr)
        return 2
    if args.metrics_port:
        start_http_server(args.metrics_port, registry=obs.REGISTRY)
    server.start()

    def reload_catalog() -> None:
        state.reload_catalog()
        _record_catalog(state)
        settle_heap()

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
