"""An answer too large for a default gRPC client (4 MiB) is cut with a count, not refused by the
client: OME's no-runtime message lists excluded runtimes up to a length, then "… and N more";
Select's excluded and Explain's runtimes keep what fits and count the rest. Limits are made small
here so a few dozen runtimes stand for twenty thousand."""

from __future__ import annotations

import copy

import pytest

from policyd.contract import policy_pb2 as pb
from policyd.decision import decider
from policyd.edge import limits
from policyd.server import wire

from .support import Harness, isvc_manifest, isvc_text, manifest_catalog, model_manifest, runtime_70b_manifest

RUNTIMES = 60
# the rows are encoded some at a time, the budget looked at in between: the cut falls in the first lot or a later one
AT_ONCE = pytest.mark.parametrize("at_once", [wire.ROWS_AT_ONCE, 7], ids=["all at once", "7 at a time"])


def _catalog() -> pb.RequestCatalog:
    runtimes = []
    for i in range(RUNTIMES):
        runtime = copy.deepcopy(runtime_70b_manifest())
        runtime["metadata"]["name"] = f"excluded-{i:02d}"
        runtimes.append(runtime)
    return manifest_catalog(model_manifest(), *runtimes, isolated=True)


@AT_ONCE
def test_a_no_runtime_answer_too_large_lists_what_fits_and_counts_the_rest(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, at_once: int
) -> None:
    monkeypatch.setattr(wire, "ROWS_AT_ONCE", at_once)
    whole = harness.ok("Select", pb.SelectRequest(inference_service=isvc_text(isvc_manifest()), catalog=_catalog()))
    assert len(whole.excluded) == RUNTIMES and whole.excluded_omitted == 0 and "more" not in whole.error
    monkeypatch.setattr(decider, "LISTED_TEXT_LIMIT", 2000)
    monkeypatch.setattr(limits, "RESPONSE_BUDGET", 12000)  # the message is in it three times
    cut = Harness().ok("Select", pb.SelectRequest(inference_service=isvc_text(isvc_manifest()), catalog=_catalog()))
    listed = cut.error.count("excluded-")
    assert 0 < listed < RUNTIMES and cut.error.endswith(f"… and {RUNTIMES - listed} more")
    assert whole.error.startswith(cut.error.rsplit("; … and", 1)[0])  # the same message, cut
    assert cut.ByteSize() <= 12000
    assert 0 < len(cut.excluded) < RUNTIMES and len(cut.excluded) + cut.excluded_omitted == RUNTIMES
    assert list(cut.excluded) == list(whole.excluded[: len(cut.excluded)])


@AT_ONCE
def test_an_explanation_too_large_keeps_the_first_runtimes_and_counts_the_rest(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, at_once: int
) -> None:
    monkeypatch.setattr(wire, "ROWS_AT_ONCE", at_once)
    request = pb.ExplainRequest(inference_service=isvc_text(isvc_manifest()), catalog=_catalog())
    whole = harness.ok("Explain", request)
    monkeypatch.setattr(limits, "RESPONSE_BUDGET", 5000)
    cut = Harness().ok("Explain", request)
    assert cut.ByteSize() <= 5000 and 0 < len(cut.runtimes) < RUNTIMES
    assert len(cut.runtimes) + cut.runtimes_omitted == len(whole.runtimes)
    assert list(cut.runtimes) == list(whole.runtimes[: len(cut.runtimes)])
