"""004, "The engine, decoder and router": OME sets MODEL_PATH and PARALLELISM_SIZE in the
engine's and the decoder's runner; the router's config becomes its runner's env."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.clients.renderer.environment import set_model_path, set_parallelism

from .builders import MODEL_PATH, container, env, make_isvc, make_runtime, of_kind, only, run, runner


def _env(component: dict[str, Any], overridden: bool = False) -> dict[str, Any]:
    component = set_parallelism(set_model_path(component, MODEL_PATH), pods_per_replica=1, overridden=overridden)
    return env(component["runner"])


def test_model_path_is_the_models_storage_path_when_the_inferenceservice_names_a_base_model() -> None:
    deployment = only(run(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()})))
    assert env(container(deployment))["MODEL_PATH"] == MODEL_PATH


def test_model_path_is_left_as_the_runner_sets_it() -> None:
    assert _env({"runner": runner(env=[{"name": "MODEL_PATH", "value": "/mine"}])})["MODEL_PATH"] == "/mine"


def test_without_a_base_model_model_path_is_not_set_and_the_text_stays_literal() -> None:
    deployment = only(run(make_isvc(model=False, engine={}), make_runtime(engineConfig={"runner": runner()})))
    assert "MODEL_PATH" not in env(container(deployment))
    assert container(deployment)["args"][0] == "--model-path=$(MODEL_PATH)"


def test_model_path_and_parallelism_size_follow_the_runners_own_variables_as_ome_appends_them() -> None:
    names = list(_env({"runner": runner(env=[{"name": "WEIGHTS", "value": "/w"}])}))
    assert names == ["WEIGHTS", "MODEL_PATH", "PARALLELISM_SIZE"]


@pytest.mark.parametrize("gpus", [1, "1", 8, "8"])
def test_parallelism_size_is_the_gpus_in_each_pod_as_a_string(gpus: int | str) -> None:
    resources = {"limits": {"nvidia.com/gpu": gpus}}
    assert _env({"runner": runner(resources=resources)})["PARALLELISM_SIZE"] == str(gpus)


def test_parallelism_size_counts_gpu_limits_else_requests() -> None:
    assert _env({"runner": runner(resources={"requests": {"nvidia.com/gpu": 2}})})["PARALLELISM_SIZE"] == "2"
    both = {"requests": {"nvidia.com/gpu": 2}, "limits": {"nvidia.com/gpu": 4}}
    assert _env({"runner": runner(resources=both)})["PARALLELISM_SIZE"] == "4"


def test_parallelism_size_replaces_any_value_the_user_set() -> None:
    assert _env({"runner": runner(env=[{"name": "PARALLELISM_SIZE", "value": "99"}])})["PARALLELISM_SIZE"] == "1"


def test_parallelism_size_is_unset_for_a_runner_without_gpus() -> None:
    mine = [{"name": "PARALLELISM_SIZE", "value": "99"}]
    assert "PARALLELISM_SIZE" not in _env({"runner": runner(resources={"limits": {"cpu": "1"}}, env=mine)})
    assert "PARALLELISM_SIZE" not in _env({"runner": runner(resources={"limits": {"nvidia.com/gpu": 0}})})


def test_parallelism_size_is_unset_when_accelerator_config_sets_tensor_parallelism_override() -> None:
    assert "PARALLELISM_SIZE" not in _env({"runner": runner()}, overridden=True)
    config = {"nvidia-l40s": {"tensorParallelismOverride": {"tensorParallelSize": 1}}}
    runtime = make_runtime(engineConfig={"runner": runner()})
    deployment = only(run(make_isvc(engine={}), runtime, {"engine": "nvidia-l40s"}, config))
    assert "PARALLELISM_SIZE" not in env(container(deployment))


def test_parallelism_size_multinode_4_gpus_times_1_plus_worker_size_1_is_8() -> None:
    gpus = {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}
    runtime = make_runtime(
        engineConfig={
            "annotations": {"ome.io/deploymentMode": "MultiNode"},
            "leader": {"runner": runner(resources=gpus)},
            "worker": {"size": 1, "runner": runner(resources=gpus)},
        }
    )
    lws = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")
    assert env(container(lws, "leaderTemplate"))["PARALLELISM_SIZE"] == "8"
    assert env(container(lws, "workerTemplate"))["PARALLELISM_SIZE"] == "8"
    assert env(container(lws, "workerTemplate"))["MODEL_PATH"] == MODEL_PATH


def test_the_router_gets_neither_variable() -> None:
    runtime = make_runtime(engineConfig={"runner": runner()}, routerConfig={"runner": runner()})
    result = run(make_isvc(engine={}, router={}), runtime)
    router = container(next(o for o in of_kind(result, "Deployment") if o["metadata"]["name"] == "svc-router"))
    assert "MODEL_PATH" not in env(router) and "PARALLELISM_SIZE" not in env(router)


def test_the_routers_config_is_appended_to_its_runners_env_by_key() -> None:
    router = {"runner": runner(env=[{"name": "A", "value": "1"}]), "config": {"policy": "cache_aware", "b": "2"}}
    runtime = make_runtime(engineConfig={"runner": runner()}, routerConfig={"runner": runner()})
    result = run(make_isvc(engine={}, router=router), runtime)
    deployment = next(o for o in of_kind(result, "Deployment") if o["metadata"]["name"] == "svc-router")
    assert container(deployment)["env"] == [
        {"name": "A", "value": "1"},
        {"name": "b", "value": "2"},
        {"name": "policy", "value": "cache_aware"},
    ]


def test_parallelism_size_counts_worker_size_as_ome_does_whatever_the_mode() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(), "worker": {"size": 2}})
    assert env(container(only(run(make_isvc(engine={}), runtime))))["PARALLELISM_SIZE"] == "3"


def test_a_gpu_count_that_is_not_a_whole_number_is_an_error_naming_the_field() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(resources={"limits": {"nvidia.com/gpu": "1.5"}})})
    result = run(make_isvc(engine={}), runtime)
    assert result.errors == [
        "engine.runner.resources.limits[nvidia.com/gpu]: must be a whole number of GPUs, got '1.5'"
    ]
