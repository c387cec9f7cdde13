"""helm lint --strict passes the chart clean, and values.schema.json refuses a bad value with a
message naming it, before anything is rendered."""

from __future__ import annotations

import pytest
from testkit.helm import CHART, helm, objects


def test_helm_lint_strict_is_clean() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout
    # --strict fails on a warning; INFO (no icon: there is none to link) is all that may be said
    said = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert said == ["[INFO] Chart.yaml: icon is recommended"], done.stdout


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"policyd": {"replicas": "three"}}, "at '/policyd/replicas': got string, want integer"),
        ({"policyd": {"replica": 3}}, "at '/policyd': additional properties 'replica' not allowed"),
        ({"colour": "blue"}, "additional properties 'colour' not allowed"),
        ({"webhook": {"failurePolicy": "Never"}}, "at '/webhook/failurePolicy': value must be one of 'Fail', 'Ignore'"),
        ({"webhook": {"timeoutSeconds": 60}}, "at '/webhook/timeoutSeconds': maximum: got 60, want 30"),
        ({"certManager": {"enabled": "yes"}}, "at '/certManager/enabled': got string, want boolean"),
        (
            {"rules": {"files": {"policy.txt": "rules: []"}}},
            "at '/rules/files': additional properties 'policy.txt' not allowed",
        ),
        ({"networkPolicy": {"metricsNamespaces": ["Monitoring!"]}}, "at '/networkPolicy/metricsNamespaces/0'"),
        ({"image": {"digest": "latest"}}, "at '/image/digest'"),
    ],
)
def test_the_schema_refuses_a_bad_value_naming_it(values: dict[str, object], message: str) -> None:
    done = helm("template", "policyd", str(CHART), values=values, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert "values don't meet the specifications of the schema(s)" in done.stderr
    assert message in done.stderr, done.stderr


def test_no_rule_files_at_all_is_refused_naming_the_values() -> None:
    done = helm("template", "policyd", str(CHART), values={"rules": {"bundled": False}}, check=False)
    assert done.returncode == 1
    assert "rules: no rule files (rules.bundled is false and rules.files is empty)" in done.stderr


def test_every_default_is_a_value_the_schema_takes_and_renders() -> None:
    docs = objects(helm("template", "policyd", str(CHART)).stdout)
    assert {d["kind"] for d in docs} >= {"Deployment", "NetworkPolicy", "ValidatingWebhookConfiguration"}
