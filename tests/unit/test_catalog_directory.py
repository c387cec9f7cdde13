"""Loading a catalog directory (a bad manifest never stops the rest), the request overlay, and the
runtimes in scope: "the ServingRuntimes in its namespace and all ClusterServingRuntimes"."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from testkit.catalog_dir import load_directory

from policyd.catalog.snapshot import Catalog, key_of

from .builders import entry, model, parsed, runtime


def write(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return path


def mixed_directory(root: Path) -> dict[str, Path]:
    files = {
        "good": write(root / "runtimes" / "good.yaml", runtime("srt-good")),
        "malformed": write(
            root / "runtimes" / "bad-priority.yaml",
            runtime("srt-bad", entries=[entry(), entry(priority=0)]),  # below the CRD's minimum
        ),
        "unknown": write(
            root / "classes.yaml",
            {"apiVersion": "ome.io/v1beta1", "kind": "BenchmarkJob", "metadata": {"name": "bench"}},
        ),
        "kustomization": write(
            root / "runtimes" / "kustomization.yaml",
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["good.yaml", "bad-priority.yaml"],
            },
        ),
    }
    files["notes"] = root / "README.md"
    files["notes"].write_text("# Runtimes\n\nkind: ClusterServingRuntime\n: not yaml at all [\n")
    return files


def test_a_malformed_manifest_is_reported_with_its_file_and_field_path(tmp_path: Path) -> None:
    files = mixed_directory(tmp_path)
    loaded = load_directory(tmp_path)
    bad = [e for e in loaded.errors if e.startswith(str(files["malformed"]))]
    assert len(bad) == 1
    assert f"{files['malformed']}: spec.supportedModelFormats[1].priority: must be between 1" in bad[0]


def test_an_unknown_ome_io_kind_is_reported(tmp_path: Path) -> None:
    files = mixed_directory(tmp_path)
    loaded = load_directory(tmp_path)
    unknown = [e for e in loaded.errors if e.startswith(str(files["unknown"]))]
    assert len(unknown) == 1
    assert f"{files['unknown']}: kind: unknown kind 'BenchmarkJob'" in unknown[0]


def test_a_kustomization_and_a_file_that_is_not_yaml_are_ignored(tmp_path: Path) -> None:
    files = mixed_directory(tmp_path)
    loaded = load_directory(tmp_path)
    assert len(loaded.errors) == 2
    for ignored in ("kustomization", "notes"):
        assert not any(str(files[ignored]) in e for e in loaded.errors)


def test_the_good_runtime_still_loads(tmp_path: Path) -> None:
    mixed_directory(tmp_path)
    loaded = load_directory(tmp_path)
    assert [(o.kind, o.meta.name) for o in loaded.objects] == [("ClusterServingRuntime", "srt-good")]


def test_a_yaml_file_that_does_not_parse_is_reported_and_the_rest_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: ome.io/v1beta1\nkind: [ClusterServingRuntime\n")
    write(tmp_path / "model.yaml", model("m"))
    loaded = load_directory(tmp_path)
    assert len(loaded.errors) == 1
    assert loaded.errors[0].startswith(f"{broken}: not valid YAML")
    assert [o.meta.name for o in loaded.objects] == ["m"]


def test_each_document_of_a_multi_document_file_is_loaded_and_errors_name_the_document(tmp_path: Path) -> None:
    path = write(tmp_path / "all.yaml", model("m"), runtime("rt", entries=[entry(priority=0)]), runtime("rt2"))
    loaded = load_directory(tmp_path)
    assert loaded.errors == [
        f"{path}#1: spec.supportedModelFormats[0].priority: must be between 1 and 2147483647, got 0"
    ]
    assert sorted(o.meta.name for o in loaded.objects) == ["m", "rt2"]


def test_json_manifests_load_too(tmp_path: Path) -> None:
    (tmp_path / "rt.json").write_text(json.dumps(runtime("srt-json")))
    loaded = load_directory(tmp_path)
    assert loaded.errors == []
    assert [o.meta.name for o in loaded.objects] == ["srt-json"]


def test_the_catalog_keeps_inference_services_and_accelerator_classes(tmp_path: Path) -> None:
    isvc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "s"},
        "spec": {"model": {"name": "m"}},
    }
    accelerator = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-h100"}}
    write(tmp_path / "isvc.yaml", isvc, accelerator)
    loaded = load_directory(tmp_path)
    assert loaded.errors == []
    catalog = Catalog.of(loaded.objects)
    assert list(catalog.inference_services) == [("InferenceService", "default", "s")]
    assert list(catalog.accelerator_classes) == [("AcceleratorClass", "", "nvidia-h100")]
    assert catalog.runtimes == {} and catalog.models == {}


def test_a_missing_directory_is_an_error_not_an_exception(tmp_path: Path) -> None:
    loaded = load_directory(tmp_path / "nope")
    assert loaded.objects == []
    assert len(loaded.errors) == 1 and "does not exist" in loaded.errors[0]


# -- Catalog.overlay ---------------------------------------------------------------------------


def base_catalog() -> Catalog:
    return Catalog.of(
        [parsed(model("m")), parsed(runtime("rt-a")), parsed(runtime("rt-b", entries=[entry(priority=1)]))]
    )


def test_request_objects_replace_objects_with_the_same_key() -> None:
    base = base_catalog()
    replacement = parsed(runtime("rt-b", entries=[entry(priority=7)]))
    merged = base.overlay([replacement], isolated=False)
    assert set(merged.runtimes) == set(base.runtimes)
    assert merged.runtimes[key_of(replacement)] is replacement
    assert merged.runtimes[key_of(replacement)].entries[0].priority == 7
    assert base.runtimes[key_of(replacement)].entries[0].priority == 1  # the snapshot is untouched
    assert merged.models == base.models


def test_request_objects_are_added_beside_the_catalog() -> None:
    base = base_catalog()
    extra = parsed(runtime("rt-c"))
    merged = base.overlay([extra], isolated=False)
    assert sorted(r.meta.name for r in merged.runtimes.values()) == ["rt-a", "rt-b", "rt-c"]
    assert merged.revision != base.revision and merged.revision.startswith(base.revision + "+")


def test_an_isolated_overlay_uses_only_the_request_objects() -> None:
    base = base_catalog()
    only = parsed(runtime("rt-c"))
    isolated = base.overlay([only], isolated=True)
    assert [r.meta.name for r in isolated.runtimes.values()] == ["rt-c"]
    assert isolated.models == {}
    assert base.overlay([], isolated=True).runtimes == {}


def test_an_empty_overlay_is_the_same_catalog() -> None:
    base = base_catalog()
    assert base.overlay([], isolated=False) is base


def test_a_same_named_servingruntime_does_not_replace_a_clusterservingruntime() -> None:
    base = base_catalog()
    merged = base.overlay([parsed(runtime("rt-a", kind="ServingRuntime", namespace="ns"))], isolated=False)
    assert len(merged.runtimes) == 3
    assert merged.runtime("ClusterServingRuntime", "", "rt-a") is not None
    assert merged.runtime("ServingRuntime", "ns", "rt-a") is not None


# -- in_scope ------------------------------------------------------------------------------------


def test_in_scope_is_namespace_servingruntimes_then_clusterservingruntimes_each_by_name() -> None:
    catalog = Catalog.of(
        [
            parsed(runtime("c-zeta")),
            parsed(runtime("s-beta", kind="ServingRuntime", namespace="demo")),
            parsed(runtime("c-alpha")),
            parsed(runtime("s-alpha", kind="ServingRuntime", namespace="demo")),
            parsed(runtime("a-other", kind="ServingRuntime", namespace="elsewhere")),
        ]
    )
    scope = catalog.in_scope("demo")
    assert [(r.kind, r.meta.name) for r in scope] == [
        ("ServingRuntime", "s-alpha"),
        ("ServingRuntime", "s-beta"),
        ("ClusterServingRuntime", "c-alpha"),
        ("ClusterServingRuntime", "c-zeta"),
    ]
    assert [r.meta.name for r in catalog.in_scope("elsewhere")] == ["a-other", "c-alpha", "c-zeta"]
    assert [r.meta.name for r in catalog.in_scope("empty")] == ["c-alpha", "c-zeta"]
    assert [r.meta.name for r in catalog.in_scope("")] == ["c-alpha", "c-zeta"]
    assert [r.meta.name for r in catalog.in_scope("demo")][-2:] == ["c-alpha", "c-zeta"]


def test_a_changed_catalog_has_the_runtimes_in_scope_and_revision_of_one_made_anew() -> None:
    first = [
        parsed(runtime("c-zeta")),
        parsed(runtime("s-beta", kind="ServingRuntime", namespace="demo")),
        parsed(runtime("c-alpha")),
    ]
    catalog = Catalog.of(first)
    catalog.in_scope("demo")  # computed, then carried over by changed()
    replaced = parsed(runtime("c-alpha", kind="ClusterServingRuntime", image="other:1"))
    added = [parsed(runtime("c-beta")), parsed(runtime("s-alpha", kind="ServingRuntime", namespace="demo")), replaced]
    changed = catalog.changed(added, [("ClusterServingRuntime", "", "c-zeta")])
    anew = Catalog.of([first[1], *added])
    assert changed.revision == anew.revision != catalog.revision
    for namespace in ("demo", "", "other"):
        assert changed.in_scope(namespace) == anew.in_scope(namespace)
    assert changed.runtime("ClusterServingRuntime", "", "c-alpha") is replaced
