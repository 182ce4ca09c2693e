"""What `decider --version` and `decider-shim --version` print: this package's version and the
JobSet API it follows; also the version stamped on decisions and telemetry.

It lives in the client package because both commands import it and the shim may import nothing
of the decider but the contract.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any

DISTRIBUTION = "jobset-decider"
# The client's own distribution (clients/python/pyproject.toml), installed without the server.
CLIENT_DISTRIBUTION = "jobset-decider-client"
# The API group/version of the JobSets decided and the upstream release whose behaviour, names
# and messages the decider follows: upstream's open cycle, tagged v0.13.0-devel (v0.12 and the
# work after it, each piece with its commit or PR in docs/upstream-features.md).
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
UPSTREAM_RELEASE = "v0.13.0-devel"


def package_version() -> str:
    for distribution in (DISTRIBUTION, CLIENT_DISTRIBUTION):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    # Run from a source tree that was never installed.
    return "0+unknown"


VERSION = package_version()


def version_line(prog: str) -> str:
    """e.g. `decider 0.1.0 (JobSet API jobset.x-k8s.io/v1alpha2, upstream v0.13.0-devel)`."""
    return f"{prog} {VERSION} (JobSet API {JOBSET_API_VERSION}, upstream {UPSTREAM_RELEASE})"


class VersionAction(argparse.Action):
    """`--version`: the version line as it is. argparse's own action wraps it at the terminal's
    width (COLUMNS), and a script reading the line would get two."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None,
                 prog: str = "decider") -> None:
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=help or "print the version and the JobSet API followed, and exit")
        self.prog = prog

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        sys.stdout.write(version_line(self.prog) + "\n")
        parser.exit()
