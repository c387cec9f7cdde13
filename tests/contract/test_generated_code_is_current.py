"""The checked-in stubs in policyd/contract are exactly what proto/generate.py makes from the protos."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from .support import ROOT

CHECKED_IN = ROOT / "policyd" / "contract"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("policyd_proto_generate", ROOT / "proto" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_checked_in_stubs_are_what_generate_makes(tmp_path: Path) -> None:
    out = tmp_path / "contract"
    written = _generator().generate(out)
    assert {p.name for p in written} >= {"policy_pb2.py", "resources_pb2.py", "render_pb2_grpc.py", "__init__.py"}
    fresh, checked_in = _files(out), _files(CHECKED_IN)
    assert sorted(checked_in) == sorted(fresh), "policyd/contract has other files than generate.py makes"
    stale = [name for name in fresh if fresh[name] != checked_in[name]]
    assert not stale, f"stale stubs (run python proto/generate.py): {stale}"
