"""004, "Per-accelerator configuration": acceleratorConfig[<class>] of the chosen entry, applied
after the merge to the engine and the decoder, leaders and workers included, never the router."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.clients.renderer.accelerator import PP_FLAGS, TP_FLAGS, apply_accelerator_config
from policyd.clients.renderer.flags import Flag, parse_flags, set_flag

from .builders import container, env, make_isvc, make_runtime, of_kind, only, run, runner

L40S = "nvidia-l40s"


def _apply(settings: dict[str, Any], **runner_fields: Any) -> dict[str, Any]:
    component = apply_accelerator_config({"runner": runner(**runner_fields)}, {L40S: settings}, L40S)
    result: dict[str, Any] = component["runner"]
    return result


def test_the_spec_example_l40s_gets_tp_4_pp_2_and_mem_frac_085() -> None:
    settings = {
        "tensorParallelismOverride": {"tensorParallelSize": 4, "pipelineParallelSize": 2},
        "runtimeArgsOverride": ["--mem-frac=0.85"],
    }
    args = ["--host=0.0.0.0", "--model-path=$(MODEL_PATH)", "--tp-size=8", "--pp-size=1", "--mem-frac=0.9"]
    assert _apply(settings, args=args)["args"] == [
        "--host=0.0.0.0",
        "--model-path=$(MODEL_PATH)",
        "--tp-size=4",
        "--pp-size=2",
        "--mem-frac=0.85",
    ]


@pytest.mark.parametrize("flag", TP_FLAGS)
@pytest.mark.parametrize("where", ["args", "command"])
def test_tensor_parallelism_override_rewrites_each_tp_flag_in_both_forms(flag: str, where: str) -> None:
    settings = {"tensorParallelismOverride": {"tensorParallelSize": 4}}
    rewritten = _apply(settings, **{where: ["serve", f"{flag}=8", "--port", "8080", flag, "8"]})[where]
    assert rewritten == ["serve", f"{flag}=4", "--port", "8080", flag, "4"]


@pytest.mark.parametrize("flag", PP_FLAGS)
@pytest.mark.parametrize("where", ["args", "command"])
def test_tensor_parallelism_override_rewrites_each_pp_flag_in_both_forms(flag: str, where: str) -> None:
    settings = {"tensorParallelismOverride": {"pipelineParallelSize": 2}}
    rewritten = _apply(settings, **{where: [f"{flag}=1", flag, "1", "--tp-size=8"]})[where]
    assert rewritten == [f"{flag}=2", flag, "2", "--tp-size=8"]


def test_tensor_parallelism_override_adds_no_flag_the_runner_lacks() -> None:
    settings = {"tensorParallelismOverride": {"tensorParallelSize": 4, "pipelineParallelSize": 2}}
    assert _apply(settings, args=["--port=8080"])["args"] == ["--port=8080"]


def test_tensor_parallelism_override_leaves_flags_that_only_start_like_one() -> None:
    settings = {"tensorParallelismOverride": {"tensorParallelSize": 4}}
    args = ["--tp-size-extra=8", "--tpx", "8"]
    assert _apply(settings, args=args)["args"] == args


def test_runtime_args_override_replaces_a_flag_with_the_same_key_in_its_form() -> None:
    settings = {"runtimeArgsOverride": ["--mem-frac=0.85", "--max-model-len 4096"]}
    rewritten = _apply(settings, command=["serve", "--mem-frac", "0.9", "--max-model-len=8192"], args=[])
    assert rewritten["command"] == ["serve", "--mem-frac", "0.85", "--max-model-len=4096"]
    assert rewritten["args"] == []


def test_runtime_args_override_appends_new_flags_to_args() -> None:
    settings = {"runtimeArgsOverride": ["--chunked=512", "--log-level debug", "--enable-metrics", "--seed", "7"]}
    rewritten = _apply(settings, command=["serve"], args=["--port=8080"])
    assert rewritten["command"] == ["serve"]
    assert rewritten["args"] == [
        "--port=8080",
        "--chunked=512",
        "--log-level",
        "debug",
        "--enable-metrics",
        "--seed",
        "7",
    ]


def test_runtime_args_override_gives_a_switch_its_value() -> None:
    settings = {"runtimeArgsOverride": ["--enable-metrics=false"]}
    assert _apply(settings, args=["--enable-metrics", "--port=8080"])["args"] == [
        "--enable-metrics=false",
        "--port=8080",
    ]


def test_environment_override_sets_env_vars() -> None:
    settings = {"environmentOverride": {"LOG_LEVEL": "debug", "NCCL_IB_DISABLE": 1}}
    rewritten = _apply(settings, env=[{"name": "LOG_LEVEL", "value": "info"}, {"name": "A", "value": "a"}])
    assert rewritten["env"] == [
        {"name": "LOG_LEVEL", "value": "debug"},
        {"name": "A", "value": "a"},
        {"name": "NCCL_IB_DISABLE", "value": "1"},
    ]


def test_a_key_of_accelerator_config_that_is_not_the_chosen_class_is_ignored() -> None:
    config = {"nvidia-l40": {"runtimeArgsOverride": ["--x=1"]}, "nvidia-h100": {"environmentOverride": {"A": "1"}}}
    component = {"runner": runner()}
    assert apply_accelerator_config(component, config, L40S) == component
    assert apply_accelerator_config(component, config, None) == component


def test_settings_apply_to_leaders_and_workers() -> None:
    component = {
        "leader": {"runner": runner(args=["--tp=8"])},
        "worker": {"size": 1, "runner": runner(args=["--tp", "8"])},
    }
    settings = {L40S: {"tensorParallelismOverride": {"tensorParallelSize": 4}}}
    applied = apply_accelerator_config(component, settings, L40S)
    assert applied["leader"]["runner"]["args"] == ["--tp=4"]
    assert applied["worker"]["runner"]["args"] == ["--tp", "4"]


def test_the_engine_and_decoder_get_their_class_settings_and_the_router_gets_none() -> None:
    config = {L40S: {"runtimeArgsOverride": ["--mem-frac=0.85"], "environmentOverride": {"X": "1"}}}
    args = ["--mem-frac=0.9"]
    runtime = make_runtime(
        engineConfig={"runner": runner(args=args)},
        decoderConfig={"runner": runner(args=args)},
        routerConfig={"runner": runner(args=args)},
    )
    result = run(make_isvc(engine={}, decoder={}, router={}), runtime, {"engine": L40S, "decoder": L40S}, config)
    assert not result.errors
    engine, decoder, router = (container(o) for o in of_kind(result, "Deployment"))
    assert engine["args"] == decoder["args"] == ["--mem-frac=0.85"]
    assert env(engine)["X"] == env(decoder)["X"] == "1"
    assert router["args"] == ["--mem-frac=0.9"]
    assert "X" not in env(router)


def test_on_a_class_that_accelerator_config_leaves_out_the_runner_keeps_its_own_flags() -> None:
    config = {L40S: {"tensorParallelismOverride": {"tensorParallelSize": 4}}}
    runtime = make_runtime(engineConfig={"runner": runner(args=["--tp-size=8"])})
    deployment = only(run(make_isvc(engine={}), runtime, {"engine": "nvidia-h100"}, config))
    assert container(deployment)["args"] == ["--tp-size=8"]


def test_a_malformed_override_is_an_error_naming_the_class_and_field() -> None:
    config = {L40S: {"runtimeArgsOverride": ["0.85"]}}
    runtime = make_runtime(engineConfig={"runner": runner()})
    result = run(make_isvc(engine={}), runtime, {"engine": L40S}, config)
    assert result.objects == []
    assert result.errors == [
        "engine.acceleratorConfig[nvidia-l40s].runtimeArgsOverride[0]: expected a flag starting with '-', got '0.85'"
    ]


def test_flags_parse_in_every_form_the_override_list_takes() -> None:
    assert parse_flags(["--a=1", "--b 2", "--c", "-3", "--d", "--e"]) == [
        Flag("--a", "1"),
        Flag("--b", "2", joined=False),
        Flag("--c", "-3", joined=False),
        Flag("--d", None),
        Flag("--e", None),
    ]


def test_setting_a_flag_reports_whether_the_argv_had_it() -> None:
    assert set_flag(["--a=1"], Flag("--b", "2")) == (["--a=1"], False)
    assert set_flag(["--b", "--a=1"], Flag("--b", "2", joined=False)) == (["--b", "2", "--a=1"], True)
