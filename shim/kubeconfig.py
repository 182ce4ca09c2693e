"""Where a shim process finds its API server and credentials, for the shim and the Kueue
AdmissionCheck controller alike: an explicit kubeconfig (flag or KUBECONFIG), else the
in-cluster service account, else ~/.kube/config, as client-go's loading rules order them."""

from __future__ import annotations

import os

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException


class KubeconfigError(Exception):
    """No usable configuration; the message names the source tried and the problem, on one
    line."""


def one_line(exc: BaseException) -> str:
    """What an exception says, on one line: the OS's reason under urllib3's wrapping."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, BaseException):
        exc = reason
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    # urllib3 prefixes its connection object: keep what the OS said.
    return line.split(">: ", 1)[-1]


def load(kubeconfig: str, context: str) -> client.Configuration:
    """The client configuration `kubeconfig` and `context` (either may be empty) select."""
    configuration = client.Configuration()
    in_cluster = not kubeconfig and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    if kubeconfig:
        source = f"--kubeconfig {kubeconfig}"
    elif in_cluster:
        source = "the in-cluster service account"
    else:
        source = "~/.kube/config (no --kubeconfig, KUBECONFIG or in-cluster service account)"
    if kubeconfig and not os.path.exists(kubeconfig):
        raise KubeconfigError(f"{source}: no such file")
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(config_file=kubeconfig or None, context=context or None,
                                    client_configuration=configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise KubeconfigError(f"{source}: {one_line(exc) or type(exc).__name__}") from None
    return configuration
