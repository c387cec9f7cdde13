"""Without --kubeconfig the controller finds the cluster as kubectl does: $KUBECONFIG, then
~/.kube/config (then the in-cluster service account); with none it says so and exits 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .support import World, eventually, running


def test_without_kubeconfig_the_controller_uses_the_kubeconfig_environment_variable(world: World) -> None:
    home = world.tmp / "home"
    home.mkdir()
    with running(world, env={"KUBECONFIG": str(world.cluster.kubeconfig), "HOME": str(home)}) as controller:
        eventually(lambda: controller.logged("catalog in sync"), what="connected")


def test_without_kubeconfig_or_its_variable_the_controller_uses_the_home_kube_config(world: World) -> None:
    home = world.tmp / "home"
    (home / ".kube").mkdir(parents=True)
    shutil.copy(world.cluster.kubeconfig, home / ".kube" / "config")
    with running(world, env={"HOME": str(home)}) as controller:
        eventually(lambda: controller.logged("catalog in sync"), what="connected")


def test_with_no_configuration_at_all_the_controller_says_where_it_looked_in_one_line_and_exits_2(
    tmp_path: Path,
) -> None:
    """Its own line alone: not the kubernetes client's warning about the in-cluster config first."""
    home = tmp_path / "empty-home"
    home.mkdir()
    unset = ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
    env = {k: v for k, v in os.environ.items() if k not in unset} | {"HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "policyd.clients.controller.main"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "policy-controller: no usable Kubernetes configuration in $KUBECONFIG, ~/.kube/config or the in-cluster "
        "service account: Service host/port is not set.\n"
    )
