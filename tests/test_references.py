"""Every file of the project that the code, the docs and the scripts name exists: a comment
sending a reader to a file that was renamed sends them nowhere (deploy/render-install.sh named
tests/test_deploy.py, issue 20, item 10; docs/clients.md named decider/server.py after the
service moved into decider/service/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where the project talks about its own files; tests/ names made-up paths in its fixtures.
SOURCES = ["README.md", "docs", "deploy", "bench", "decider", "shim", "clients/python", ".ci",
           "examples", "Dockerfile", "pyproject.toml"]
SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ""}
NAMED = re.compile(r"(?<![\w/.-])((?:tests|bench|tools|deploy|decider|shim|decider_client|"
                   r"decider_api|decider_telemetry)/[\w/.-]*\w\.(?:py|sh|yaml|json))")
# The client's packages live under clients/python.
HOMES = [ROOT, ROOT / "clients" / "python"]
# Named as examples, not as files of ours: the overlay an operator writes beside deploy/.
EXAMPLES = {"deploy/my-cluster/kustomization.yaml"}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            out += [p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                    and "node_modules" not in p.parts and "__pycache__" not in p.parts]
    return out


def test_the_walk_finds_the_references() -> None:
    found = {m for p in _files() for m in NAMED.findall(p.read_text(errors="replace"))}
    assert {"tests/test_install.py", "bench/front_memory.py", "decider/service/pool.py",
            "decider_api/summarize.py"} <= found


def test_every_named_test_and_bench_file_exists() -> None:
    missing = sorted({f"{p.relative_to(ROOT)} names {m}" for p in _files()
                      for m in NAMED.findall(p.read_text(errors="replace"))
                      if m not in EXAMPLES and not any((home / m).exists() for home in HOMES)})
    assert missing == []
