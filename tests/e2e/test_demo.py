"""examples/demo.sh and the README's tour, as a newcomer runs them from a fresh shell."""

from __future__ import annotations

import os
import re
import socket
import subprocess

from testkit.ports import free_port

from .support import ROOT


def _demo(port: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "POLICYD_ADDRESS"}
    return subprocess.run(
        ["bash", "examples/demo.sh"],
        cwd=ROOT,
        env={**env, "POLICYD_PORT": str(port)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream, in the order a terminal shows it
        text=True,
        timeout=300,
    )


def test_the_demo_says_before_each_error_that_it_is_expected() -> None:
    demo = _demo(free_port())
    assert demo.returncode == 0, demo.stdout
    blocks = demo.stdout.split("\n\n")
    failed = [b for b in blocks if any(line.startswith("error: ") for line in b.splitlines())]
    assert failed, demo.stdout  # the demo shows a refusal
    for block in failed:
        assert block.startswith("# expected to fail: "), block


def test_the_demo_on_a_busy_port_ends_with_policyds_own_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        demo = _demo(busy.getsockname()[1])
    assert demo.returncode != 0
    assert "Traceback" not in demo.stdout and "No such process" not in demo.stdout, demo.stdout
    assert not re.search(r"^demo\.sh: ", demo.stdout, re.M), demo.stdout  # bash has nothing to add


def test_the_readme_tour_puts_the_venvs_tools_on_path_before_the_first_policyctl() -> None:
    readme = (ROOT / "README.md").read_text()
    tour = readme.partition("## A five-minute tour")[2].partition("```bash")[2].partition("```")[0]
    lines = [line.strip() for line in tour.strip().splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith("policyctl"))
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in [line.split("  #")[0].strip() for line in lines[:first]]
