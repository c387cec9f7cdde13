"""004, "Placeholders": values in each component's runner, leaders and workers included, are
filled in from the InferenceService's metadata."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.clients.renderer.placeholders import fill_container, fill_text

from .builders import container, env, make_isvc, make_runtime, only, run, runner
from .shared_data import catalog_runtimes

METADATA: dict[str, Any] = {
    "name": "llama",
    "namespace": "demo",
    "labels": {"team": "search", "app.kubernetes.io/name": "chat"},
    "annotations": {"owner": "ann", "example.com/tier": "gold"},
}


@pytest.mark.parametrize(
    ("text", "filled"),
    [
        ("--served-model-name={{.Name}}", "--served-model-name=llama"),
        ("{{.Namespace}}", "demo"),
        ("team={{.Labels.team}}", "team=search"),
        ("{{.Annotations.owner}}", "ann"),
        ("{{index .Labels `app.kubernetes.io/name`}}", "chat"),
        ("{{index .Annotations `example.com/tier`}}", "gold"),
        ('{{index .Labels "app.kubernetes.io/name"}}', "chat"),
        ("{{ .Name }}.{{  .Namespace\t}}", "llama.demo"),
        ("{{ index  .Labels  `team` }}", "search"),
    ],
)
def test_placeholders_fill_from_the_inferenceservices_metadata(text: str, filled: str) -> None:
    assert fill_text(text, METADATA) == filled


def test_a_missing_label_or_annotation_gives_no_value_in_the_field_form() -> None:
    assert fill_text("{{.Labels.missing}}|{{.Annotations.missing}}", METADATA) == "<no value>|<no value>"
    assert fill_text("{{.Labels.team}}", {"name": "x"}) == "<no value>"


def test_a_missing_label_or_annotation_gives_an_empty_value_with_index() -> None:
    assert fill_text("[{{index .Labels `a/b`}}][{{index .Annotations `c.d`}}]", METADATA) == "[][]"


@pytest.mark.parametrize(
    "text",
    [
        "{% for m in messages %}{{ m.content }}{% endfor %}",
        "{{ message['content'] }}",
        "{{.Spec.Model}}",
        "{{ .Labels.team.sub }}",
        "{{index .Labels team}}",
        "{{ .name }}",
        "{ {.Name} }",
    ],
)
def test_text_that_is_not_one_of_the_placeholders_survives_unchanged(text: str) -> None:
    assert fill_text(text, METADATA) == text


def test_a_catalog_chat_template_argument_survives_unchanged() -> None:
    (runtime,) = [r for r in catalog_runtimes() if r["metadata"]["name"] == "srt-c4ai-command-r-v01"]
    command = runtime["spec"]["engineConfig"]["runner"]["command"]
    template = next(arg for arg in command if "{%" in arg)
    assert fill_text(template, METADATA) == template


def test_placeholders_fill_every_string_of_the_runner_leaders_and_workers_included() -> None:
    isvc = make_isvc(labels={"team": "search"}, engine={})
    isvc["metadata"]["annotations"] = {"example.com/tier": "gold"}
    runtime = make_runtime(
        engineConfig={
            "annotations": {"ome.io/deploymentMode": "MultiNode"},
            "labels": {"copy": "{{.Name}}"},
            "runner": runner(
                image="repo/{{.Namespace}}:1",
                command=["serve", "{{.Name}}"],
                env=[{"name": "TEAM", "value": "{{.Labels.team}}"}],
            ),
            "leader": {"runner": {"args": ["--name={{.Name}}"]}},
            "worker": {"size": 1, "runner": {"args": ["--tier={{index .Annotations `example.com/tier`}}"]}},
            "containers": [{"name": "sidecar", "image": "side/{{.Name}}"}],
        }
    )
    lws = only(run(isvc, runtime), "LeaderWorkerSet")
    leader, worker = container(lws, "leaderTemplate"), container(lws, "workerTemplate")
    assert leader["image"] == worker["image"] == "repo/demo:1"
    assert leader["command"] == ["serve", "svc"]
    assert env(leader)["TEAM"] == "search"
    assert leader["args"] == ["--name=svc"]
    assert worker["args"] == ["--tier=gold"]
    assert lws["metadata"]["labels"]["copy"] == "{{.Name}}", "only runners hold placeholders"
    assert container(lws, "leaderTemplate", "sidecar")["image"] == "side/{{.Name}}", "only runners hold placeholders"


def test_fill_container_fills_every_string() -> None:
    filled = fill_container(
        {"name": "c", "env": [{"name": "N", "value": "{{.Namespace}}"}], "ports": [{"x": 1}]}, METADATA
    )
    assert filled == {"name": "c", "env": [{"name": "N", "value": "demo"}], "ports": [{"x": 1}]}


def test_the_served_model_name_placeholder_reaches_the_deployment() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(args=["--served-model-name={{.Name}}"])})
    assert container(only(run(make_isvc(engine={}), runtime)))["args"] == ["--served-model-name=svc"]
