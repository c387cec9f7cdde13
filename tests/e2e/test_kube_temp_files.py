"""The processes that read the cluster leave nothing in $TMPDIR: the kubernetes client writes a
kubeconfig's inline certificates and key to temporary files (removed by an atexit handler that a
daemon ending with exit_now skips) and the dynamic client's discovery cache to $TMPDIR/osrcp-*.json
(never removed); policyd/kubeconfig.py keeps both in a directory of the process's own, removed
when it ends (the controller's: tests/controller/test_controller_temp_files.py)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

from controller.manifests import named_isvc
from replicas.support import replica
from testkit.cluster import Cluster
from testkit.shared import REPO, RULES
from webhook.support import PATHS, admission_review, running_webhook, serving_certs

from policyd.clients.policyctl.conformance.daemons import serving


def test_the_webhook_leaves_nothing_in_tmpdir(kube_cluster: Cluster, private_tmpdir: Path, tmp_path: Path) -> None:
    certs = serving_certs(tmp_path / "certs")
    isvc = copy.deepcopy(named_isvc())
    isvc["spec"]["runtime"] = {"name": "srt-nowhere"}  # not in policyd's catalog: read from the cluster
    policyd = ["--rules", str(RULES), "--log-level", "warning"]
    with (
        serving("policyd.daemon.main", policyd, "127.0.0.1:0") as address,
        running_webhook(address, certs.cert_dir, kubeconfig=kube_cluster.kubeconfig) as webhook,
    ):
        response = webhook.client(certs.ca).post(PATHS["inferenceservice"], admission_review(isvc)).response
        assert response["allowed"] is False
        assert os.listdir(private_tmpdir), "its files are not where the test looks"
    assert os.listdir(private_tmpdir) == []


def test_policyd_reading_the_cluster_leaves_nothing_in_tmpdir(
    kube_cluster: Cluster, private_tmpdir: Path, tmp_path: Path
) -> None:
    with replica(kube_cluster.kubeconfig, tmp_path / "policyd"):
        assert os.listdir(private_tmpdir)
    assert os.listdir(private_tmpdir) == []


def test_policyctl_reading_the_cluster_leaves_nothing_in_tmpdir(kube_cluster: Cluster, private_tmpdir: Path) -> None:
    command = [sys.executable, "-m", "policyd.clients.policyctl.main", "explain", "--isvc", "nowhere", "-n", "default"]
    command += ["--kubeconfig", str(kube_cluster.kubeconfig)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stderr.startswith('Error from server (NotFound): inferenceservices.ome.io "nowhere" not found')
    assert os.listdir(private_tmpdir) == []
