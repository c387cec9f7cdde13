"""The engine's runner by the spec's merge rules (004, "Where the runtime and the InferenceService
both set a value"): args and command replace the whole list, env merges by name, resources by key;
a multi-node engine's server runs in the leader."""

from __future__ import annotations

from policyd.semantics.runner_merge import engine_runner, merge_runner

RUNTIME = {
    "engineConfig": {
        "runner": {
            "command": ["vllm", "serve", "m", "--omni"],
            "args": ["--cfg-parallel-size", "2"],
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4"}},
        }
    }
}


def test_args_and_command_replace_the_whole_list() -> None:
    runner = engine_runner(RUNTIME, {"engine": {"runner": {"args": ["--step-execution"]}}})
    assert runner is not None
    assert runner.command == ("vllm", "serve", "m", "--omni")
    assert runner.args == ("--step-execution",)
    replaced = engine_runner(RUNTIME, {"engine": {"runner": {"command": ["vllm", "serve", "other"]}}})
    assert replaced is not None and replaced.command == ("vllm", "serve", "other")


def test_env_merges_by_name_and_a_value_from_elsewhere_is_unknown() -> None:
    over = {"engine": {"runner": {"env": [{"name": "B", "valueFrom": {"secretKeyRef": {"name": "s"}}}, {"name": "C"}]}}}
    runner = engine_runner(RUNTIME, over)
    assert runner is not None
    assert dict(runner.env) == {"A": "1", "B": None, "C": ""}


def test_resources_merge_by_key() -> None:
    over = {"engine": {"runner": {"resources": {"limits": {"amd.com/gpu": "1"}, "requests": {"cpu": "2"}}}}}
    runner = engine_runner(RUNTIME, over)
    assert runner is not None and runner.resources == {"nvidia.com/gpu", "cpu", "amd.com/gpu"}


def test_a_null_in_the_inference_service_counts_as_unset() -> None:
    assert merge_runner({"args": ["--x"]}, {"args": None}) == {"args": ["--x"]}


def test_the_leader_runs_a_multinode_engine_on_top_of_the_component_runner() -> None:
    runtime = {
        "engineConfig": {
            "runner": {"command": ["vllm", "serve", "m"], "env": [{"name": "A", "value": "1"}]},
            "leader": {"runner": {"args": ["--omni"]}},
        }
    }
    runner = engine_runner(runtime, {"engine": {"leader": {"runner": {"env": [{"name": "B", "value": "2"}]}}}})
    assert runner is not None
    assert (runner.command, runner.args, dict(runner.env)) == (
        ("vllm", "serve", "m"),
        ("--omni",),
        {"A": "1", "B": "2"},
    )


def test_no_runner_on_either_side_is_none() -> None:
    assert engine_runner({}, None) is None
    assert engine_runner({"engineConfig": {"minReplicas": 1}}, {"engine": {}}) is None
