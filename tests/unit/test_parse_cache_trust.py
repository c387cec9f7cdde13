"""The parse cache is a pickle, which runs its writer's code when loaded: policyd reads it only
from a directory no other user can write (or replace), and only a file of its own user that no
one else may write. Otherwise the cache is not used (a slower start, said in the log)."""

from __future__ import annotations

import json
import os
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testkit.llama import model_manifest

from policyd.catalog import source
from policyd.catalog.directory import ParseCache
from policyd.catalog.source import CatalogSource


class _Planted:
    """A pickle that creates ``marker`` when loaded: what an attacker's code would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    root.mkdir()
    (root / "model.json").write_text(json.dumps(model_manifest()))
    return root


def _load(root: Path, cache: Path) -> list[str]:
    return [o.meta.name for o in CatalogSource(root, parse_cache=cache).load().load.objects]


def _cache_file(cache: Path, root: Path) -> Path:
    path = ParseCache(cache, root).path
    assert path is not None
    return path


def _planted(cache: Path, root: Path, marker: Path) -> Path:
    file = _cache_file(cache, root)
    file.write_bytes(pickle.dumps(_Planted(marker)))
    return file


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777], ids=["world-writable", "group-writable", "sticky"])
def test_a_pickle_planted_in_a_directory_others_can_write_is_not_loaded(tmp_path: Path, mode: int) -> None:
    root, cache, marker = _catalog(tmp_path), tmp_path / "cache", tmp_path / "ran"
    cache.mkdir(mode=0o700)
    _planted(cache, root, marker)
    cache.chmod(mode)
    assert _load(root, cache) == [model_manifest()["metadata"]["name"]]
    assert not marker.exists()


def test_a_cache_directory_inside_one_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    root, shared, marker = _catalog(tmp_path), tmp_path / "shared", tmp_path / "ran"
    cache = shared / "policyd"
    cache.mkdir(parents=True, mode=0o700)
    _planted(cache, root, marker)
    shared.chmod(0o777)  # another user could rename ours away and put theirs in its place
    _load(root, cache)
    assert not marker.exists()


def test_a_cache_file_another_user_owns_or_may_write_is_not_loaded(tmp_path: Path) -> None:
    root, cache, marker = _catalog(tmp_path), tmp_path / "cache", tmp_path / "ran"
    cache.mkdir(mode=0o700)
    file = _planted(cache, root, marker)
    file.chmod(0o666)
    _load(root, cache)
    assert not marker.exists()
    if os.geteuid() == 0:  # only root can give a file away
        file.chmod(0o600)
        os.chown(file, 12345, 12345)
        _load(root, cache)
        assert not marker.exists()


def test_a_symlink_in_place_of_the_cache_file_is_not_followed(tmp_path: Path) -> None:
    root, cache, marker = _catalog(tmp_path), tmp_path / "cache", tmp_path / "ran"
    cache.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere.pickle"
    elsewhere.write_bytes(pickle.dumps(_Planted(marker)))
    _cache_file(cache, root).symlink_to(elsewhere)
    _load(root, cache)
    assert not marker.exists()


def test_the_users_own_cache_is_written_privately_and_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = _catalog(tmp_path), tmp_path / "new" / "cache"
    past = time.time_ns() - 60 * 10**9  # older than a racy file: its stamp is trusted
    os.utime(root / "model.json", ns=(past, past))
    _load(root, cache)
    assert cache.stat().st_mode & 0o777 == 0o700
    assert _cache_file(cache, root).stat().st_mode & 0o077 == 0
    read: list[Path] = []
    real = source.read_text
    monkeypatch.setattr(source, "read_text", lambda path: read.append(path) or real(path))
    assert _load(root, cache) == [model_manifest()["metadata"]["name"]]
    assert read == []  # taken from the cache, not read again
