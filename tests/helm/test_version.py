"""One version everywhere: every command's --version, the daemon's GetStatus (policyctl version
shows both), the chart's appVersion (the image tag it names by default) and the Dockerfile's label
are pyproject.toml's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib

import pytest
import yaml
from testkit.shared import REPO, RULES

from policyd.clients.policyctl.conformance.daemons import serving

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
COMMANDS = ("policyd", "policyctl", "policy-render", "policy-controller", "policy-webhook")


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(argv[0])
    assert exe, f"{argv[0]} is not installed (pip install -e .)"
    env = {**os.environ, "GRPC_VERBOSITY": "NONE"}
    return subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=60, check=False, env=env)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_version_with_the_packages_version(command: str) -> None:
    done = run(command, "--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{command} {VERSION}\n", "")


def test_policyctl_version_shows_its_own_and_the_daemons() -> None:
    with serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "warning"], "127.0.0.1:0") as address:
        shown = run("policyctl", "version", "--address", address)
        assert (shown.returncode, shown.stdout) == (0, f"client: policyctl {VERSION}\ndaemon: policyd {VERSION}\n")
        as_json = run("policyctl", "version", "--address", address, "-o", "json")
        assert json.loads(as_json.stdout) == {"client": VERSION, "daemon": VERSION}
    # --client asks no daemon: none is running now
    alone = run("policyctl", "version", "--client", "--address", address)
    assert (alone.returncode, alone.stdout) == (0, f"client: policyctl {VERSION}\n")


def test_the_chart_and_the_image_carry_the_same_version() -> None:
    chart = yaml.safe_load((REPO / "charts" / "policyd" / "Chart.yaml").read_text())
    assert chart["appVersion"] == chart["version"] == VERSION
    dockerfile = (REPO / "Dockerfile").read_text()
    assert f"ARG VERSION={VERSION}\n" in dockerfile
    assert 'org.opencontainers.image.version="${VERSION}"' in dockerfile
