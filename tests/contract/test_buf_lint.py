"""The protos pass `buf lint` with the repository's buf.yaml."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from .support import ROOT


def _buf() -> str:
    beside = Path(sys.executable).parent / "buf"
    found = shutil.which("buf") or (str(beside) if beside.is_file() else None)
    assert found, "the buf binary (package buf-bin) is not installed"
    return found


def test_buf_lint_passes() -> None:
    result = subprocess.run([_buf(), "lint"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
