"""Serving from several processes: a catalog change acknowledged by one worker is in the
catalog every other worker reads from the next call on, in the order the journal took them,
and a worker started later replays every change. A worker for each CPU is pinned to its own."""

from __future__ import annotations

from pathlib import Path

import yaml
from testkit.shared import RULES

from policyd.daemon.workers import Journal, JournaledState, _worker_argv, worker_cpus
from policyd.resources.manifests import parse_runtime
from policyd.resources.objects import ServingRuntime
from policyd.server.state import ServingState

from .test_serving_state import RUNTIME


def _runtime(name: str) -> ServingRuntime:
    return parse_runtime(yaml.safe_load(RUNTIME.format(name=name, extra="")))


def _worker(root: Path, catalog: Path) -> JournaledState:
    return JournaledState(Journal(root), RULES, catalog, lambda attempt: None)


def test_a_change_one_worker_acknowledged_is_in_what_every_worker_reads_next(tmp_path: Path) -> None:
    root, catalog = Journal.create(), tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "base.yaml").write_text(RUNTIME.format(name="base", extra=""))
    a, b = _worker(root, catalog), _worker(root, catalog)
    assert a.catalog.revision == b.catalog.revision
    a.apply([_runtime("from-a")])
    assert ("ClusterServingRuntime", "", "from-a") in b.catalog.runtimes
    b.delete([("ClusterServingRuntime", "", "base")])
    b.apply([_runtime("from-b")])
    assert sorted(k[2] for k in a.catalog.runtimes) == ["from-a", "from-b"]
    assert a.catalog.revision == b.catalog.revision
    late = _worker(root, catalog)  # a worker started again replays the journal
    assert late.catalog.revision == a.catalog.revision
    plain = ServingState(RULES, catalog, lambda attempt: None)
    plain.delete([("ClusterServingRuntime", "", "base")])
    plain.apply([_runtime("from-a")])
    plain.apply([_runtime("from-b")])
    assert plain.catalog.revision == a.catalog.revision  # the same changes, the same revision


def test_workers_get_the_command_line_without_what_the_supervisor_sets() -> None:
    argv = ["--catalog", "c", "--processes", "2", "--listen=127.0.0.1:0", "--metrics-port", "9", "--workers", "4"]
    assert _worker_argv(argv) == ["--catalog", "c", "--workers", "4"]


def test_auto_affinity_pins_a_worker_for_each_cpu_to_its_own() -> None:
    assert worker_cpus("auto", 2, {3, 1}) == [1, 3]


def test_auto_affinity_leaves_fewer_or_more_workers_than_cpus_to_the_kernel() -> None:
    assert worker_cpus("auto", 2, range(8)) is None
    assert worker_cpus("auto", 4, {0, 1}) is None


def test_affinity_on_pins_round_the_cpus_and_off_never_does() -> None:
    assert worker_cpus("on", 2, range(8)) == [0, 1]
    assert worker_cpus("on", 3, {0, 1}) == [0, 1, 0]
    assert worker_cpus("off", 2, {0, 1}) is None
    assert worker_cpus("on", 2, ()) is None  # a platform that does not say which CPUs
