"""Prometheus metrics and the optional decision log (the logs' format: policyd/process/logs.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry()
CALLS = Counter(
    "policyd_calls_total", "RPCs by method and outcome (gRPC status code)", ["rpc", "code"], registry=REGISTRY
)
LATENCY = Histogram(
    "policyd_call_seconds",
    "RPC latency by method",
    ["rpc"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY,
)
RULES_REVISION = Gauge(
    "policyd_rules_revision_info", "The rules revision being served (value 1)", ["revision"], registry=REGISTRY
)
RELOADS = Counter("policyd_rules_reloads_total", "Rules reload attempts by result", ["result"], registry=REGISTRY)
CATALOG_SIZE = Gauge("policyd_catalog_objects", "Catalog objects by kind", ["kind"], registry=REGISTRY)
CATALOG_ERRORS = Gauge(
    "policyd_catalog_errors", "Manifests refused by the last catalog directory load", registry=REGISTRY
)
CATALOG_FAULTS = Gauge(
    "policyd_catalog_faults",
    "Catalog files (or the directory) that cannot be read or parsed, whose last good content serves",
    registry=REGISTRY,
)
CLUSTER_SYNCED = Gauge(
    "policyd_cluster_synced", "Under --cluster: 1 once the kind's first list is in", ["kind"], registry=REGISTRY
)
CLUSTER_REFUSED = Gauge(
    "policyd_cluster_refused_objects",
    "Under --cluster: the cluster's objects kept out of the catalog (what OME's webhook would refuse)",
    ["kind"],
    registry=REGISTRY,
)
CACHE_HITS = Counter(
    "policyd_decision_cache_hits_total", "Decisions answered from the decision cache", registry=REGISTRY
)

# the children of CALLS and LATENCY, found once: labels() checks and locks on every call
_CALL_COUNTS: dict[tuple[str, str], Any] = {}
_LATENCIES: dict[str, Any] = {}


def count_call(rpc: str, code: grpc.StatusCode) -> None:
    """One call of ``rpc`` ended with ``code``."""
    child = _CALL_COUNTS.get((rpc, code.name))
    if child is None:
        child = _CALL_COUNTS.setdefault((rpc, code.name), CALLS.labels(rpc, code.name))
    child.inc()


def observe_latency(rpc: str, seconds: float) -> None:
    child = _LATENCIES.get(rpc)
    if child is None:
        child = _LATENCIES.setdefault(rpc, LATENCY.labels(rpc))
    child.observe(seconds)


class DecisionLog:
    """Appends one JSON line per decision: time, request id, RPC, request digest, revisions, outcome."""

    def __init__(self, path: Path | None) -> None:
        self._file = path.open("a", buffering=1) if path else None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._file is not None

    def write(self, outcome: Message, **entry: Any) -> None:
        if self._file is None:
            return  # the outcome is converted only for a log that exists: this runs on every decision
        record = {"time": round(time.time(), 6), **entry, "outcome": json_format.MessageToDict(outcome)}
        line = json.dumps(record, default=str, sort_keys=True)
        with self._lock:
            self._file.write(line + "\n")
