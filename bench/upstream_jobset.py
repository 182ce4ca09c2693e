"""Upstream's JobSet controller, built from the Go module proxy for the benchmark only.

`go build` of sigs.k8s.io/jobset@<version> (its main package is the module root), CGO off, into
~/.cache/jobset-decider/upstream-jobset/<version>/ with the module's CRD beside the binary. Nothing
of it is ever committed: the benchmark compares the shim with the controller users run today.

    python -m bench.upstream_jobset build [--version v0.12.0]   # prints the binary's path
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

MODULE = "sigs.k8s.io/jobset"
# The newest release the module proxy serves here (its version list endpoint is refused, so
# `go list -m -versions` cannot say; v0.12.0 of 2026-05-08 answers, v0.12.1 does not).
DEFAULT_VERSION = "v0.12.0"
CRD_PATH = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"


def cache_dir(version: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobset-decider" / "upstream-jobset" / version


def binary(version: str) -> Path:
    return cache_dir(version) / "jobset"


def crd(version: str) -> Path:
    return cache_dir(version) / "jobset-crd.yaml"


def _go() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    return go


def source(version: str, env: dict[str, str] | None = None) -> Path:
    """The module's source, downloaded into (and read-only in) Go's module cache."""
    env = env or dict(os.environ, GOTOOLCHAIN="local")
    out = subprocess.run([_go(), "mod", "download", "-json", f"{MODULE}@{version}"], env=env,
                         check=True, capture_output=True, text=True).stdout
    return Path(json.loads(out)["Dir"])


def build(version: str = DEFAULT_VERSION) -> Path:
    """Build once per version, under a lock, so two benchmark runs never build twice."""
    target = cache_dir(version)
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary(version).is_file() and crd(version).is_file():
            return binary(version)
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false",
                   GOTOOLCHAIN="local")
        started = time.monotonic()
        # Not `go install MODULE@VERSION`: it asks the proxy for the module's version list
        # (to look for a deprecation), which this proxy refuses. Built in the module's own
        # directory instead, so its own go.mod and go.sum pin every dependency.
        source_dir = source(version, env)
        built = target / ".jobset.tmp"
        subprocess.run([_go(), "build", "-trimpath", "-o", str(built), "."], env=env,
                       cwd=source_dir, check=True)
        shutil.copyfile(source_dir / CRD_PATH, crd(version))
        os.replace(built, binary(version))
        binary(version).chmod(0o755)
        print(f"upstream-jobset {version}: built in {time.monotonic() - started:.0f} s",
              file=sys.stderr)
    return binary(version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.upstream_jobset")
    parser.add_argument("command", choices=("build",))
    parser.add_argument("--version", default=DEFAULT_VERSION)
    args = parser.parse_args(argv)
    print(build(args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
