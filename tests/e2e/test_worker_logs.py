"""policyd --processes 2: each worker's log lines say which worker and process wrote them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .support import RULES, started


def test_each_workers_serving_line_names_its_worker_index_and_pid(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    command = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--processes", "2"]
    command += ["--cpu-affinity", "off", "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    with started(command, ready) as proc:
        assert proc.stderr is not None
        lines = []
        # the supervisor's serving line (with "processes") follows every worker's
        while not any(line.get("processes") == 2 for line in lines):
            text = proc.stderr.readline()
            assert text, "policyd stopped before its serving line"
            lines.append(json.loads(text))
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True, check=True
        ).stdout.split()
    workers = [line for line in lines if line["msg"] == "serving" and "processes" not in line]
    assert sorted(w["worker"] for w in workers) == [0, 1], workers
    assert sorted(w["pid"] for w in workers) == sorted(map(int, children)), workers
    assert all(line["pid"] in map(int, children) for line in lines if "worker" in line)
