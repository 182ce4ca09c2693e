"""The Dockerfile, checked without a Docker daemon (none runs here): its stages parsed, its
essentials asserted, and the wheel built from exactly the files its build stage copies."""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_TOOLS = ("gcc", "g++", "cc", "clang", "make", "build-essential", "cmake", "-dev",
               "git", "curl", "wget")


@dataclass
class Stage:
    base: str
    name: str = ""
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [arg for kw, arg in self.instructions if kw == keyword]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages) of a Dockerfile: continuation lines joined, comments
    dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if raw.lstrip().startswith("#") and not pending:
            continue
        if raw.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = (pending + raw).strip()
        pending = ""
        if line:
            lines.append(line)
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in lines:
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), parts[0])
            name = parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else ""
            stages.append(Stage(base=base, name=name))
        elif keyword == "ARG" and not stages:
            key, _, value = rest.partition("=")
            args[key] = value
        else:
            assert stages, f"{keyword} before any FROM"
            stages[-1].instructions.append((keyword, rest))
    return args, stages


ARGS, STAGES = parse((ROOT / "Dockerfile").read_text())
FINAL = STAGES[-1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_two_stages_on_a_slim_python_of_a_supported_version():
    assert len(STAGES) == 2
    assert STAGES[0].name == "build"
    for stage in STAGES:
        assert re.fullmatch(r"python:3\.(\d+)-slim(-\w+)?", stage.base), stage.base
    minor = int(re.match(r"python:3\.(\d+)", FINAL.base).group(1))
    required = PYPROJECT["project"]["requires-python"]
    assert required == ">=3.11" and minor >= 11


def test_wheels_are_built_in_the_first_stage_and_only_installed_in_the_final_one():
    assert any("pip wheel" in r for r in STAGES[0].all("RUN"))
    runs = " ".join(FINAL.all("RUN"))
    assert "pip wheel" not in runs
    assert "--no-index" in runs and "from=build" in runs
    # Nothing of the source tree reaches the final stage.
    assert FINAL.all("COPY") == [] and FINAL.all("ADD") == []


def test_no_build_tools_in_the_final_stage():
    for run in FINAL.all("RUN"):
        words = shlex.split(run.replace("&&", " "))
        installs = [w for w in words if w in ("apt-get", "apt", "apk", "yum", "dnf")]
        assert installs == [], f"the final stage installs system packages: {run}"
        for tool in BUILD_TOOLS:
            assert not any(w == tool or (tool.startswith("-") and w.endswith(tool))
                           for w in words), f"{tool} in the final stage: {run}"


def test_runs_as_a_numeric_non_root_user():
    users = FINAL.all("USER")
    assert len(users) == 1
    uid, _, gid = users[0].partition(":")
    assert uid.isdigit() and int(uid) != 0
    assert not gid or (gid.isdigit() and int(gid) != 0)
    # The user the USER line names is the one the RUN line creates.
    assert f"--uid {uid}" in " ".join(FINAL.all("RUN"))


def test_read_only_root_file_system_friendly():
    env = " ".join(FINAL.all("ENV"))
    for setting in ("PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "HOME=/tmp",
                    "TMPDIR=/tmp"):
        assert setting in env, setting
    assert FINAL.all("VOLUME") == []
    assert FINAL.all("WORKDIR") == ["/tmp"]


def test_the_entrypoint_is_a_console_script_of_the_package_and_the_shim_is_one_too():
    entrypoint = FINAL.all("ENTRYPOINT")
    assert entrypoint == ['["decider"]']
    scripts = PYPROJECT["project"]["scripts"]
    assert scripts["decider"] == "decider.cli.entry:main"
    assert scripts["decider-shim"] == "shim.entry:main"
    assert scripts["decider-kueue-check"] == "shim.kueue_check.main:main"
    from importlib import metadata

    installed = {e.name: e.value for e in metadata.entry_points(group="console_scripts")
                 if e.dist is not None and e.dist.name == "jobset-decider"}
    assert installed == scripts
    assert FINAL.all("CMD") == ['["serve"]']


def test_the_ports_the_manifests_use_are_exposed():
    ports = " ".join(FINAL.all("EXPOSE")).split()
    assert ports == ["50051", "9443", "8081"]


def _context_files() -> list[Path]:
    """The files `docker build .` would send, by .dockerignore (its `*` then `!path` form)."""
    rules = [r.strip() for r in (ROOT / ".dockerignore").read_text().splitlines()
             if r.strip() and not r.startswith("#")]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    kept = []
    for rel in tracked:
        keep = True
        for rule in rules:
            negate = rule.startswith("!")
            pattern = rule[1:] if negate else rule
            pattern = pattern.rstrip("/")
            hit = (fnmatch.fnmatch(rel, pattern) or rel.startswith(pattern + "/")
                   or fnmatch.fnmatch(rel, pattern.replace("**/", "*/")))
            if hit:
                keep = negate
        if keep:
            kept.append(Path(rel))
    return kept


@pytest.mark.waits
def test_the_build_context_leaves_out_what_the_image_does_not_need():
    files = {str(p) for p in _context_files()}
    assert "pyproject.toml" in files and "README.md" in files
    assert not any(f.startswith(("tests/", ".git", "bench/", "deploy/", ".venv")) for f in files)
    assert any(f.startswith("decider/") for f in files)


@pytest.mark.waits
def test_the_wheel_builds_from_exactly_what_the_build_stage_copies(tmp_path: Path):
    context = {str(p) for p in _context_files()}
    src = tmp_path / "src"
    for copy in STAGES[0].all("COPY"):
        *sources, dest = shlex.split(copy)
        for source in sources:
            # Each source lands at its own path under WORKDIR, as in the repository.
            assert dest in ("./", f"./{source}"), copy
            for rel in sorted(context):
                if rel == source or rel.startswith(source.rstrip("/") + "/"):
                    target = src / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(ROOT / rel, target)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "--no-build-isolation", "--wheel-dir", str(tmp_path / "wheels"),
                          str(src)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next((tmp_path / "wheels").glob("jobset_decider-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names
                            if n.endswith(".dist-info/entry_points.txt"))
    for module in ("decider/cli/main.py", "decider/cli/entry.py", "decider/webhook/server.py",
                   "decider/service/worker.py",
                   "decider/core/decide.py", "decider_api/v1/decider_pb2.py", "shim/main.py",
                   "decider_client/client.py", "decider_telemetry/sdk.py",
                   "decider_telemetry/scrape.py", "shim/kueue_check/main.py"):
        assert module in names, module
    assert "decider = decider.cli.entry:main" in entry_points
    assert "decider-shim = shim.entry:main" in entry_points
    assert "decider-kueue-check = shim.kueue_check.main:main" in entry_points
