"""The conformance cases' assertion paths (shared/conformance/README.md, "Paths"): dots separate
keys, ``\\.`` is a dot inside a key (label and annotation keys), ``[key=value]`` and ``[N]`` pick
list elements, and a path outside the language is refused rather than read as another one."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.clients.policyctl.conformance.paths import MISSING, Step, check, parse, resolve

WORKLOAD: dict[str, Any] = {
    "metadata": {
        "labels": {"ome.io/inferenceservice": "llama", "app": "llama-engine"},
        "annotations": {"prometheus.io/scrape": "true"},
    },
    "ome": {"io/inferenceservice": "a nested mapping the dotted key must not reach"},
    "containers": [
        {"name": "ome-container", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        {"name": "sidecar.v1", "image": "busybox"},
    ],
}


def test_an_escaped_dot_is_part_of_the_key() -> None:
    assert resolve(WORKLOAD, r"metadata.labels.ome\.io/inferenceservice") == "llama"
    assert resolve(WORKLOAD, r"metadata.annotations.prometheus\.io/scrape") == "true"


def test_an_escaped_dot_after_a_selector_is_part_of_the_key() -> None:
    assert resolve(WORKLOAD, r"containers[name=ome-container].resources.limits.nvidia\.com/gpu") == "1"


def test_an_unescaped_dot_separates_keys() -> None:
    assert resolve(WORKLOAD, "ome.io/inferenceservice") == "a nested mapping the dotted key must not reach"
    assert resolve(WORKLOAD, "metadata.labels.ome.io/inferenceservice") is MISSING


def test_a_key_that_starts_with_escaped_dots_is_one_step() -> None:
    assert parse(r"ome\.io/inferenceservice") == [Step("ome.io/inferenceservice", None)]
    assert resolve({"ome.io/inferenceservice": "llama"}, r"ome\.io/inferenceservice") == "llama"


def test_a_selector_value_may_hold_dots_written_plain_or_escaped() -> None:
    assert resolve(WORKLOAD, "containers[name=sidecar.v1].image") == "busybox"
    assert resolve(WORKLOAD, r"containers[name=sidecar\.v1].image") == "busybox"


def test_indexes_and_selectors_still_pick_list_elements() -> None:
    assert resolve(WORKLOAD, "containers[0].name") == "ome-container"
    assert resolve(WORKLOAD, "containers[-1].name") == "sidecar.v1"
    assert resolve(WORKLOAD, "containers[2]") is MISSING
    assert resolve(WORKLOAD, "containers[name=nothing].image") is MISSING


def test_a_selector_matching_two_elements_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"\[kind=Service\] matches 2 elements"):
        resolve({"workloads": [{"kind": "Service"}, {"kind": "Service"}]}, "workloads[kind=Service]")


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a.", "a[0]b", "a.[0]", "a[]", "a[0"])
def test_a_path_outside_the_language_is_refused(path: str) -> None:
    with pytest.raises(ValueError):
        parse(path)


def test_check_with_an_escaped_key_reports_what_it_found() -> None:
    assert check(WORKLOAD, {"path": r"metadata.labels.ome\.io/inferenceservice", "equals": "llama"}) is None
    failure = check(WORKLOAD, {"path": r"metadata.labels.ome\.io/inferenceservice", "equals": "other"})
    assert failure == r"metadata.labels.ome\.io/inferenceservice: expected 'other', got 'llama'"
    assert check(WORKLOAD, {"path": r"metadata.labels.app\.kubernetes\.io/name", "absent": True}) is None
