"""The catalog parse cache: a start-up takes a file whose stamp is unchanged since it was read
without reading it again; a file changed since, or changed too close to its reading to trust
its stamp, is read; a damaged cache file is only a slower start."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from testkit.llama import llama_entry, model_manifest

from policyd.catalog import source
from policyd.catalog.directory import RACY_NS
from policyd.catalog.source import CatalogSource


def _write(path: Path, doc: dict[str, Any], age_s: float) -> None:
    path.write_text(json.dumps(doc))
    past = time.time_ns() - int(age_s * 1e9)
    os.utime(path, ns=(past, past))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    read: list[Path] = []
    real = source.read_text

    def counted(path: Path) -> str:
        read.append(path)
        return real(path)

    monkeypatch.setattr(source, "read_text", counted)
    return read


def _names(root: Path, cache: Path) -> list[str]:
    return sorted(o.meta.name for o in CatalogSource(root, parse_cache=cache).load().load.objects)


def _model(name: str) -> dict[str, Any]:
    doc = model_manifest()
    doc["metadata"] = {"name": name}
    return doc


def test_a_start_up_takes_unchanged_files_from_the_cache_without_reading_them(
    tmp_path: Path, reads: list[Path]
) -> None:
    root, cache = tmp_path / "catalog", tmp_path / "cache"
    root.mkdir()
    for name in ("a", "b"):
        _write(root / f"{name}.json", _model(name), age_s=60)
    assert _names(root, cache) == ["a", "b"]
    assert len(reads) == 2
    assert _names(root, cache) == ["a", "b"]
    assert len(reads) == 2  # nothing read again


def test_a_file_changed_since_is_read_again(tmp_path: Path, reads: list[Path]) -> None:
    root, cache = tmp_path / "catalog", tmp_path / "cache"
    root.mkdir()
    _write(root / "a.json", _model("a"), age_s=60)
    _write(root / "b.json", _model("b"), age_s=60)
    _names(root, cache)
    _write(root / "b.json", _model("b-renamed"), age_s=30)
    reads.clear()
    assert _names(root, cache) == ["a", "b-renamed"]
    assert reads == [root / "b.json"]


def test_a_file_written_just_before_its_reading_is_not_trusted_by_its_stamp(tmp_path: Path, reads: list[Path]) -> None:
    root, cache = tmp_path / "catalog", tmp_path / "cache"
    root.mkdir()
    _write(root / "a.json", _model("a"), age_s=RACY_NS / 1e9 / 4)
    _names(root, cache)
    reads.clear()
    assert _names(root, cache) == ["a"]
    assert reads == [root / "a.json"]


def test_a_damaged_cache_file_is_only_a_slower_start(tmp_path: Path, reads: list[Path]) -> None:
    root, cache = tmp_path / "catalog", tmp_path / "cache"
    root.mkdir()
    _write(root / "a.json", _model("a"), age_s=60)
    _names(root, cache)
    for stored in cache.iterdir():
        stored.write_bytes(b"not a pickle")
    reads.clear()
    assert _names(root, cache) == ["a"]
    assert reads == [root / "a.json"]


def test_runtimes_of_one_shape_share_what_their_spec_parsed_into(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    root.mkdir()
    spec = {
        "supportedModelFormats": [llama_entry()],
        "engineConfig": {"runner": {"name": "engine", "image": "srt:v1"}},
    }
    for name in ("a", "b"):
        doc = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterServingRuntime", "metadata": {"name": name}}
        _write(root / f"{name}.json", {**doc, "spec": spec}, age_s=60)
    a, b = CatalogSource(root, parse_cache=tmp_path / "cache").load().load.objects
    assert (a.meta.name, b.meta.name) == ("a", "b")
    assert a.entries is b.entries and a.components is b.components  # type: ignore[union-attr]
