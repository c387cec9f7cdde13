"""The controller's pure parts: RuntimeReady's status fields, the work queue's backoff and its
workers' exclusion (one key in one worker at a time), the observed workloads (a listing against
newer watch events), reading
policyd's answers (before and after it fills every field of a rejection), the shipped manifests."""

from __future__ import annotations

import asyncio
import time

from policyd.clients.controller import workqueue
from policyd.clients.controller.controller import AUDIT, CATALOG
from policyd.clients.controller.observed import Observed
from policyd.clients.controller.operator import describe
from policyd.clients.controller.outcome import Condition
from policyd.clients.controller.reconcile import refusal
from policyd.clients.controller.status import status_update
from policyd.clients.render_request import Decision
from policyd.contract import policy_pb2 as pb

READY = Condition("True", "RuntimeResolved", "ClusterServingRuntime rt")


def isvc(generation: int = 1, *conditions: dict[str, str], observed: int | None = None) -> dict[str, object]:
    status: dict[str, object] = {"conditions": list(conditions)}
    if observed is not None:
        status["observedGeneration"] = observed
    return {"metadata": {"name": "svc", "namespace": "demo", "generation": generation}, "status": status}


def condition(status: str, reason: str, message: str, at: str) -> dict[str, str]:
    return {"type": "RuntimeReady", "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


def test_runtime_ready_and_observed_generation_are_written_when_missing() -> None:
    update = status_update(isvc(3), (READY,), "T1")
    assert update == {"conditions": [condition("True", READY.reason, READY.message, "T1")], "observedGeneration": 3}


def test_nothing_is_written_while_the_status_already_says_it() -> None:
    current = isvc(3, condition("True", READY.reason, READY.message, "T0"), observed=3)
    assert status_update(current, (READY,), "T1") is None


def test_last_transition_time_stays_when_only_the_reason_or_message_changes() -> None:
    current = isvc(1, condition("False", "RuntimeNotFound", "gone", "T0"), observed=1)
    update = status_update(current, (Condition("False", "RuntimeValidationError", "disabled"),), "T1")
    assert update is not None and update["conditions"][0]["lastTransitionTime"] == "T0"


def test_last_transition_time_moves_when_the_status_changes_and_other_conditions_stay() -> None:
    ready = {"type": "Ready", "status": "True", "severity": "Info"}
    current = isvc(2, ready, condition("False", "RuntimeNotFound", "gone", "T0"), observed=1)
    update = status_update(current, (READY,), "T1")
    assert update == {
        "conditions": [ready, condition("True", READY.reason, READY.message, "T1")],
        "observedGeneration": 2,
    }


def test_a_failing_key_backs_off_exponentially_up_to_the_cap() -> None:
    async def delays() -> list[float]:
        queue = workqueue.WorkQueue()
        return [queue.failed(("isvc", "demo", "svc")) for _ in range(10)]

    got = asyncio.run(delays())
    assert got[:4] == [0.5, 1.0, 2.0, 4.0]
    assert got[-1] == workqueue.MAX_DELAY


def test_a_key_added_twice_is_done_once_and_lower_priorities_go_first() -> None:
    async def order() -> list[tuple[str, ...]]:
        queue = workqueue.WorkQueue({"audit": 0, "isvc": 2})
        for key in [("isvc", "a"), ("audit",), ("isvc", "a"), ("isvc", "b")]:
            queue.add(key)
        return [await queue.get() for _ in range(len(queue))]

    assert asyncio.run(order()) == [("audit",), ("isvc", "a"), ("isvc", "b")]


def test_the_workqueue_never_runs_two_items_of_one_key_at_once_and_runs_different_keys_concurrently() -> None:
    """Four workers as the operator runs them (get, work, done), on keys added again while a worker has them."""
    running: dict[tuple[str, ...], int] = {}
    most_at_once: list[int] = [0]
    runs: list[tuple[str, ...]] = []

    async def worker(queue: workqueue.WorkQueue) -> None:
        while True:
            key = await queue.get()
            running[key] = running.get(key, 0) + 1
            assert running[key] == 1, f"{key} in two workers at once"
            most_at_once[0] = max(most_at_once[0], sum(running.values()))
            runs.append(key)
            if len(runs) <= 4:
                queue.add(key)  # added again while a worker has it: after that worker is done
            await asyncio.sleep(0.05)
            running[key] -= 1
            queue.done(key)

    async def scenario() -> None:
        queue = workqueue.WorkQueue({"isvc": 2})
        for name in ("a", "b", "c", "d"):
            queue.add(("isvc", name))
            queue.add(("isvc", name))
        workers = [asyncio.create_task(worker(queue)) for _ in range(4)]
        await asyncio.wait_for(queue.idle(), 10)
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    asyncio.run(scenario())
    assert most_at_once[0] == 4  # the four keys at once
    assert sorted(runs) == sorted([("isvc", n) for n in "abcd"] * 2)  # each again after its first turn


def test_a_failed_key_waits_its_backoff_even_when_added_again_meanwhile_it_goes_after_its_turn() -> None:
    async def scenario() -> tuple[float, float]:
        queue = workqueue.WorkQueue()
        key = ("isvc", "demo", "svc")
        queue.add(key)
        got = await queue.get()
        queue.add(key)  # while a worker has it
        assert len(queue) == 0
        queue.done(got)
        assert len(queue) == 1  # its turn is over: queued again
        got = await queue.get()
        started = time.monotonic()
        delay = queue.failed(got)
        await queue.get()
        return delay, time.monotonic() - started

    delay, waited = asyncio.run(scenario())
    assert delay == workqueue.BASE_DELAY and waited >= delay


def test_every_kind_of_key_is_named_in_the_log() -> None:
    assert [describe(key) for key in (AUDIT, CATALOG, ("isvc", "demo", "svc"), ("status", "demo", "svc"))] == [
        "catalog audit",
        "catalog push",
        "InferenceService demo/svc",
        "status of InferenceService demo/svc",
    ]


def _owned(kind: str, name: str, version: str, isvc: str = "svc") -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "demo", "resourceVersion": version}
    if kind == "Pod":
        meta["labels"] = {"ome.io/inferenceservice": isvc}
    else:
        meta["ownerReferences"] = [{"kind": "InferenceService", "name": isvc, "uid": "u1", "controller": True}]
    return {"kind": kind, "metadata": meta}


def test_a_listing_fills_the_observed_workloads_but_a_watch_event_newer_than_it_wins() -> None:
    observed = Observed()
    start = observed.mark()
    observed.seen("MODIFIED", _owned("Deployment", "svc-engine", "9"))  # after the listing began
    observed.seen("DELETED", _owned("Pod", "svc-engine-a", "8"))
    observed.listed(
        [_owned("Deployment", "svc-engine", "5"), _owned("Pod", "svc-engine-a", "5"), _owned("Service", "svc", "5")],
        start,
    )
    workloads, pods = observed.of(("demo", "svc"))
    assert [(w["kind"], w["metadata"]["resourceVersion"]) for w in workloads] == [("Deployment", "9"), ("Service", "5")]
    assert pods == []


def test_only_what_readiness_reads_is_observed_and_only_of_an_inference_service() -> None:
    observed = Observed()
    observed.seen("ADDED", _owned("HorizontalPodAutoscaler", "svc-engine", "1"))
    observed.seen("ADDED", {"kind": "Deployment", "metadata": {"name": "x", "namespace": "demo"}})
    observed.seen("ADDED", _owned("Pod", "svc-engine-a", "1"))
    assert observed.of(("demo", "svc")) == ([], [_owned("Pod", "svc-engine-a", "1")])


def _decided(rejection: pb.Rejection | None = None) -> Decision:
    return Decision({}, pb.DecideResponse(rejection=rejection))


def test_a_rejections_condition_reason_and_message_are_written_as_policyd_gives_them() -> None:
    rejection = pb.Rejection(
        message="webhook text", condition_reason="RuntimeValidationError", condition_message="runtime rt is disabled"
    )
    assert refusal(_decided(rejection)) == Condition("False", "RuntimeValidationError", "runtime rt is disabled")


def test_an_answer_without_a_rejection_is_no_refusal() -> None:
    assert refusal(_decided()) is None
    assert refusal(Decision({}, pb.DecideResponse(runtime="rt", runtime_kind="ServingRuntime"))) is None
