"""Where policyd and its clients find the Kubernetes API: kubectl's lookup, in one place."""

from __future__ import annotations

import os

from kubernetes import config
from kubernetes.config.config_exception import ConfigException


class ConfigError(Exception):
    pass


def load_configuration(kubeconfig: str | None) -> None:
    """--kubeconfig, else kubectl's lookup: $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
    Sets the kubernetes client's default configuration."""
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig)
        elif _kubeconfig_files():
            config.load_kube_config()  # it merges $KUBECONFIG's files itself
        else:
            # not config.load_config(): it prints a warning of its own before trying this
            config.load_incluster_config()
    except (ConfigException, OSError) as err:
        where = kubeconfig or "$KUBECONFIG, ~/.kube/config or the in-cluster service account"
        raise ConfigError(f"no usable Kubernetes configuration in {where}: {err}") from err


def _kubeconfig_files() -> list[str]:
    """The kubeconfig files kubectl would read that exist: $KUBECONFIG's (a path list), else ~/.kube/config."""
    paths = os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep)
    return [path for path in paths if path and os.path.exists(os.path.expanduser(path))]
