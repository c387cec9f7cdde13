"""Where policyd and its clients find the Kubernetes API (kubectl's lookup), and a client for it
whose every call is bounded, in one place."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from policyd.process.exiting import at_exit


class ConfigError(Exception):
    pass


def load_configuration(kubeconfig: str | None) -> None:
    """--kubeconfig, else kubectl's lookup: $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
    Sets the kubernetes client's default configuration."""
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, temp_file_path=scratch_directory())
        elif _kubeconfig_files():
            # it merges $KUBECONFIG's files itself
            config.load_kube_config(temp_file_path=scratch_directory())
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


@functools.cache  # one per process (two racing callers may make two: both are removed)
def scratch_directory() -> str:
    """This process's own directory (mode 0700, under $TMPDIR) for what the kubernetes client keeps
    in files, removed when the process ends: a kubeconfig's inline certificates and key (the
    client reads them from files) and the dynamic client's discovery cache
    (``DynamicClient(api, cache_file=discovery_cache())``). Left to itself, the client writes them
    to $TMPDIR, where a process ending with exit_now leaves its certificate files, and where every
    process of the host reads and writes one discovery cache, left there for good."""
    directory, owner = tempfile.mkdtemp(prefix="policyd-kube-"), os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # not in a forked child (the parse's workers) ending before it
            shutil.rmtree(directory, ignore_errors=True)

    at_exit(remove)
    return directory


def discovery_cache() -> str:
    """The dynamic client's discovery cache file: in scratch_directory()."""
    return os.path.join(scratch_directory(), "discovery.json")


Timeout = float | tuple[float, float]  # the kubernetes client's: total seconds, or (connect, read)


class BoundedApiClient(client.ApiClient):
    """An API client whose calls that set no ``_request_timeout`` of their own get ``timeout``: a
    call to an API server that stopped answering (a connection left half-open by its restart)
    fails as unreachable instead of holding its thread for good. The typed APIs and the dynamic
    client all call through ``call_api``."""

    def __init__(self, timeout: Timeout, configuration: client.Configuration | None = None) -> None:
        super().__init__(configuration)
        self.timeout = timeout

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("_request_timeout") is None:
            kwargs["_request_timeout"] = self.timeout
        return super().call_api(*args, **kwargs)
