"""The common YAML document is read from libyaml's events (policyd/resources/yaml_events.py),
several times faster than through PyYAML's nodes, and to the same values: every YAML file of
the repository and the shared cases, and the corners of YAML 1.1's scalars, read alike both ways;
what the events path leaves alone (anchors, aliases, merge keys, tags, keys that are no strings,
numbers JSON cannot carry, deep nesting) is read, converted or refused as before."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.llama import llama_entry
from testkit.shared import REPO, SHARED

from policyd.errors import InvalidInput
from policyd.resources import safe_yaml, yaml_events

CORNERS = [
    "a: yes\nb: off\nc: ~\nd: 0x1F\ne: 1:20\nf: 1_000\ng: .5\nh: 2024-01-01\ni: '123'\nj: 0o17\nk: +12\n",
    "{a: 1, b: [1, 2], c: {d: null}}",
    "- 1\n- -0.0\n- 1.5e+3\n- .NaN\n",
    "x: 12345678901234567890123\n",
    "k: 9223372036854775808\n",
    "k: -9223372036854775808\n",
    "1: a\n",
    "true: x\n",
    "a: &x [1]\nb: *x\n",
    "<<: {a: 1}\nb: 2\n",
    "j: !!str 5\n",
    "---\n---\na: 1\n...\n",
    "",
    "a: 'x'\nb: \"y\\n\"\nc: |\n  lit\nd: >\n  folded\n",
    "? [a]\n: b\n",
    "a: 1\na: 2\n",
    "s: ! 12\n",
    "t: 2001-12-14t21:59:43.10-05:00\n",
    "[" * 120 + "]" * 120,
    "a: [1, 2\n",
]


def _texts() -> list[str]:
    roots = [REPO / "rules", REPO / "examples", REPO / "tests", SHARED]
    files = sorted(p for root in roots if root.is_dir() for p in root.rglob("*.yaml"))
    return [p.read_text(encoding="utf-8", errors="replace") for p in files] + CORNERS


def _by_nodes(text: str) -> Any:
    """What safe_yaml made of a text before the events path: PyYAML's nodes, then json_value."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=safe_yaml._Loader) if d is not None]
        return [safe_yaml.json_value(d) for d in docs]
    except (yaml.YAMLError, InvalidInput, ValueError) as err:
        return type(err)


def _by_events(text: str) -> list[Any] | None:
    return yaml_events.documents(text, safe_yaml._Loader, safe_yaml.MAX_DEPTH, safe_yaml._MAX_INT_TEXT, safe_yaml.INT64)


def test_every_text_reads_alike_by_events_or_is_left_to_the_nodes() -> None:
    texts = _texts()
    read = 0
    for text in texts:
        got = _by_events(text)
        if got is not None:
            read += 1
            assert repr(got) == repr(_by_nodes(text)), text[:200]  # repr: True is not 1, -0.0 is not 0.0
    assert read > len(texts) * 3 // 4  # the common document takes the events path


@pytest.mark.parametrize("text", CORNERS)
def test_every_corner_reads_as_the_nodes_read_it_or_is_refused_as_they_refuse_it(text: str) -> None:
    want = _by_nodes(text)
    try:
        got = safe_yaml.load_all(text)
    except InvalidInput:
        assert isinstance(want, type)  # refused both ways (safe_yaml names the field)
    else:
        assert repr(got) == repr(want)


def _large_manifest() -> str:
    runner = {
        "name": "ome-container",
        "image": "sglang:v0.5",
        "args": [f"--flag-{j}=" + "y" * 40 for j in range(28_000)],
    }
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": "large", "labels": {f"team-{j}": f"v{j}" for j in range(4000)}},
        "spec": {
            "supportedModelFormats": [llama_entry(priority=1 + j % 100) for j in range(6000)],
            "engineConfig": {"runner": runner},
        },
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _fastest(read: Any, text: str) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        read(text)
        times.append(time.perf_counter() - started)
    return min(times)


def test_a_manifest_of_3_mib_reads_by_events_several_times_faster(tmp_path: Path) -> None:
    text = _large_manifest()
    assert 2 << 20 < len(text) <= 3 << 20
    assert repr(safe_yaml.load_all(text)) == repr(_by_nodes(text))
    # the same machine, the same run: the events path at most half the nodes' time (it is about a fifth)
    assert _fastest(safe_yaml.load_all, text) < _fastest(_by_nodes, text) / 2
