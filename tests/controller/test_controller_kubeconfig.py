"""Without --kubeconfig the controller finds the cluster as kubectl does: $KUBECONFIG, then
~/.kube/config (then the in-cluster service account); with none it says so and exits 2."""

from __future__ import annotations

import shutil

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


def test_with_no_configuration_at_all_the_controller_says_where_it_looked_and_exits_2(world: World) -> None:
    home = world.tmp / "empty-home"
    home.mkdir()
    controller = world.start_controller(env={"HOME": str(home)})
    assert controller.proc.wait(timeout=30) == 2
    output = controller.log_path.read_text()
    assert "policy-controller: no usable Kubernetes configuration in $KUBECONFIG, ~/.kube/config" in output
    assert "Traceback" not in output
