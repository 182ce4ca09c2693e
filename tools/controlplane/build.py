"""Build the control plane's binaries from the Go module proxy, once per version.

Each binary is built in a small wrapper module (modules/<component>-<version>/: a go.mod, the
go.sum that pins every dependency, a tools.go naming the commands). k8s.io/kubernetes cannot be
built as a dependency on its own terms: its go.mod requires the staging modules (k8s.io/api,
k8s.io/apiserver, ...) at v0.0.0 and replaces them with ./staging paths its module archive does
not hold, so the wrapper requires and replaces each at the release's v0.X.Y.

Binaries go to the cache (versions.cache_root()) under <component>-<version>/, written under a
temporary name and renamed, under a lock: two runs on one machine build once.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tools.controlplane import versions

# Go 1.27 turns GOEXPERIMENT=jsonv2 on, and a kube-apiserver built with it served a broken
# /openapi/v2 (shared pitfalls): only the Go the release itself is built with.
GO_MINOR = "go1.26"
# Staging modules that no command needs and the proxy does not serve.
UNPUBLISHED = ("k8s.io/sample-apiserver", "k8s.io/sample-cli-plugin", "k8s.io/sample-controller")


@dataclass(frozen=True)
class Component:
    name: str           # kubernetes | etcd | kwok
    version: str
    module_dir: Path
    packages: dict[str, str]  # binary -> Go package
    ldflags: str = ""

    @property
    def cache_dir(self) -> Path:
        return versions.cache_root() / f"{self.name}-{self.version}"

    def binary(self, name: str) -> Path:
        return self.cache_dir / name

    def cached(self) -> bool:
        return all(self.binary(b).is_file() for b in self.packages)


def kube_ldflags(version: str) -> str:
    """The version stamp: without it `kubectl version` says v0.0.0 and some clients refuse."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={version}", f"-X {pkg}.gitMajor={major}",
                  f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitTreeState=clean",
                  f"-X {pkg}.buildDate=1970-01-01T00:00:00Z"]
    return " ".join(flags)


def kubernetes(version: str) -> Component:
    rel = versions.release(version)
    module_dir = rel.module_dir
    if not (module_dir / "go.mod").is_file():
        module_dir = versions.cache_root() / "modules" / f"kubernetes-{version}"
    return Component("kubernetes", version, module_dir,
                     {c: f"k8s.io/kubernetes/cmd/{c}" for c in versions.KUBE_COMMANDS},
                     kube_ldflags(version))


def etcd() -> Component:
    v = versions.ETCD_VERSION
    return Component("etcd", v, versions.MODULES / f"etcd-{v}",
                     {"etcd": "go.etcd.io/etcd/server/v3"})


def kwok() -> Component:
    v = versions.KWOK_VERSION
    return Component("kwok", v, versions.MODULES / f"kwok-{v}",
                     {"kwok": "sigs.k8s.io/kwok/cmd/kwok"})


def components(version: str) -> list[Component]:
    return [kubernetes(version), etcd(), kwok()]


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    # Static binaries that do not depend on the machine's C library; the toolchain installed
    # here, never one downloaded because a go.mod asks for it.
    env.update(CGO_ENABLED="0", GOTOOLCHAIN="local")
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false -mod=readonly").strip()
    return env


def check_go() -> str:
    """A Go 1.26: $CONTROLPLANE_GO, else `go` on PATH, else /usr/local/go/bin/go (Debian's
    golang-go, which .ci/ensure-go installs for clients/go, is older)."""
    candidates = [os.environ.get("CONTROLPLANE_GO"), shutil.which("go"), "/usr/local/go/bin/go"]
    seen = []
    for go in candidates:
        if not go or not Path(go).is_file() or go in seen:
            continue
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True)
        found = out.stdout.strip()
        if found == GO_MINOR or found.startswith(GO_MINOR + "."):
            return go
        seen.append(f"{go} ({found or 'unusable'})")
    raise SystemExit(f"controlplane: no {GO_MINOR}.x found (tried {', '.join(seen) or 'none'}); "
                     "the control plane is built with Go 1.26 (Go 1.27's jsonv2 broke "
                     "kube-apiserver's /openapi/v2)")


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure(component: Component, log: bool = True) -> dict[str, float]:
    """Build what the cache lacks; seconds per binary built (empty when all were cached)."""
    if component.cached():
        return {}
    times: dict[str, float] = {}
    with locked(versions.cache_root() / f".lock-{component.name}-{component.version}"):
        if component.name == "kubernetes" and not (component.module_dir / "go.mod").is_file():
            generate_kube_module(component.version, component.module_dir)
        go = check_go()
        component.cache_dir.mkdir(parents=True, exist_ok=True)
        for binary, package in component.packages.items():
            target = component.binary(binary)
            if target.is_file():
                continue
            if log:
                print(f"controlplane: building {binary} {component.version} (cold: minutes)",
                      file=sys.stderr, flush=True)
            start = time.monotonic()
            tmp = target.with_name(target.name + ".tmp")
            cmd = [go, "build", "-trimpath", "-ldflags", f"-s -w {component.ldflags}".strip(),
                   "-o", str(tmp), package]
            done = subprocess.run(cmd, cwd=component.module_dir, env=go_env())
            if done.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise SystemExit(f"controlplane: building {binary} failed "
                                 f"(exit {done.returncode}): {' '.join(cmd)}")
            tmp.rename(target)
            times[binary] = round(time.monotonic() - start, 1)
            if log:
                print(f"controlplane: built {binary} in {times[binary]} s", file=sys.stderr,
                      flush=True)
        record = component.cache_dir / "build-times.json"
        previous = json.loads(record.read_text()) if record.is_file() else {}
        record.write_text(json.dumps({**previous, **times}, indent=1) + "\n")
    return times


def ensure_all(version: str, log: bool = True) -> dict[str, float]:
    times: dict[str, float] = {}
    for component in components(version):
        times.update(ensure(component, log=log))
    return times


def generate_kube_module(version: str, target: Path) -> None:
    """A wrapper module for a release that has none committed: every staging module the
    release's go.mod replaces with ./staging, required and replaced at v0.X.Y."""
    go = check_go()
    env = go_env()
    env["GOFLAGS"] = env["GOFLAGS"].replace("-mod=readonly", "").strip()
    out = subprocess.run([go, "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
                         capture_output=True, text=True, env=env, check=True)
    gomod = Path(json.loads(out.stdout)["GoMod"]).read_text()
    staging = [m for m in re.findall(r"^\s*(k8s\.io/\S+)\s+=>\s+\./staging/", gomod, re.M)
               if m not in UNPUBLISHED]
    minor = "v0." + version.lstrip("v").split(".", 1)[1]
    target.mkdir(parents=True, exist_ok=True)
    (target / "go.mod").write_text(
        "module jobset-decider.io/controlplane/kubernetes\n\ngo 1.26.0\n\n"
        "godebug default=go1.26\n")
    (target / "tools.go").write_text(tools_go("kubernetes", [
        f"k8s.io/kubernetes/cmd/{c}" for c in versions.KUBE_COMMANDS]))
    args = [go, "mod", "edit", f"-require=k8s.io/kubernetes@{version}"]
    for m in staging:
        args += [f"-require={m}@{minor}", f"-replace={m}={m}@{minor}"]
    subprocess.run(args, cwd=target, env=env, check=True)
    subprocess.run([go, "mod", "tidy"], cwd=target, env=env, check=True)


def tools_go(package: str, imports: list[str]) -> str:
    lines = "\n".join(f'\t_ "{i}"' for i in imports)
    return (f"//go:build tools\n\n// Package {package} pins the commands tools/controlplane "
            f"builds.\npackage {package}\n\nimport (\n{lines}\n)\n")
