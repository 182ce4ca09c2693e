"""python -m tools.controlplane build|up|down|module: see docs/e2e.md."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from tools.controlplane import build, versions


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.controlplane",
                                description="A Kubernetes control plane built from source, on "
                                "loopback, with KWOK nodes and jobset-decider installed.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build what the cache lacks (cold: 10-30 minutes)")
    b.add_argument("--version", default=versions.DEFAULT_RELEASE)
    u = sub.add_parser("up", help="bring a control plane up in DIR and return once it serves")
    u.add_argument("--dir", required=True, type=Path)
    u.add_argument("--version", default=versions.DEFAULT_RELEASE)
    u.add_argument("--nodes", type=int, default=3, help="KWOK nodes (default %(default)s)")
    u.add_argument("--install", action=argparse.BooleanOptionalAction, default=True,
                   help="install jobset-decider from deploy/ (default: yes)")
    d = sub.add_parser("down", help="stop everything DIR's control plane runs")
    d.add_argument("--dir", required=True, type=Path)
    d.add_argument("--clean", action="store_true", help="remove DIR too")
    m = sub.add_parser("module", help="write the wrapper module of a release to modules/")
    m.add_argument("version")
    args = p.parse_args(argv)

    if args.cmd == "build":
        start = time.monotonic()
        times = build.ensure_all(args.version)
        print(json.dumps({"built": times, "seconds": round(time.monotonic() - start, 1),
                          "cache": str(versions.cache_root())}))
        return 0
    if args.cmd == "module":
        rel = versions.release(args.version)
        build.generate_kube_module(rel.version, rel.module_dir)
        print(rel.module_dir)
        return 0
    if args.cmd == "up":
        from tools.controlplane import cluster, product

        start = time.monotonic()
        c = cluster.up(args.dir.resolve(), args.version, nodes=args.nodes)
        if args.install:
            try:
                product.install(c)
            except BaseException:
                c.down()
                raise
        print(f"controlplane {c.version} up in {time.monotonic() - start:.1f} s: "
              f"{c.server}", file=sys.stderr)
        print(f"export KUBECONFIG={c.kubeconfig}")
        return 0
    if args.cmd == "down":
        from tools.controlplane.cluster import Cluster

        left = Cluster.at(args.dir.resolve()).down()
        for line in left:
            print(f"controlplane: left behind: {line}", file=sys.stderr)
        if args.clean and not left:
            shutil.rmtree(args.dir)
        return 1 if left else 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
