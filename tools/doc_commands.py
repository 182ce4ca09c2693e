"""Every command in README.md and docs/*.md, checked and run as a reader would run it.

A fenced block says what it is by its language and, after it, what to do with it:

    ```sh                         a command: run from the repository's root, exit status 0
    ```sh exit=2                  ... which must exit with this status
    ```sh timeout=600             ... given this many seconds (default 120)
    ```sh background              a server: started, waited for until every port its command
                                  names (--port N, --metrics-port N, ...) accepts connections,
                                  and stopped (SIGTERM) after the page's last block
    ```sh ci                      run by .ci/run as written: checked to be there, line for line
    ```sh not-run: REASON         shown, never run (needs a cluster, Docker...); REASON required
    ```python                     Python, run with this interpreter (same attributes)
    ```text, yaml, json, js, go... not a command

A block without a language is an error: say which it is. Blocks of a page run in order in one
environment: the interpreter's bin/ first on PATH (the .venv, as after `. .venv/bin/activate`),
a temporary directory of the page's own as TMPDIR and HOME. The ports its servers name are
replaced, in all of the page's blocks, by free ones, so a page never collides with another
decider on the machine. A block that leaves a file behind in the repository fails.

    python3 tools/doc_commands.py check          static: every block classified (CI's first step)
    .venv/bin/python tools/doc_commands.py run [PAGE...]    run the commands (CI, after install)
    python3 tools/doc_commands.py list           what would run, and what is not run, and why
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_LANGUAGES = {"sh", "python"}
# Spelled otherwise, a command would look like one and never run.
SHELL_SPELLINGS = {"bash", "shell", "console", "zsh", "shell-session"}
README_MAX_LINES = 300
DEFAULT_TIMEOUT = 120.0
SERVER_PORT_FLAGS = re.compile(r"--(?:port|metrics-port|webhook-port|healthz-port)[ =](\d+)")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    attributes: str
    code: str
    errors: list[str] = field(default_factory=list)
    not_run: str = ""
    background: bool = False
    ci: bool = False
    exit_status: int = 0
    timeout: float = DEFAULT_TIMEOUT

    @property
    def where(self) -> str:
        return f"{_shown(self.page)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and not self.not_run and not self.ci

    def first_line(self) -> str:
        return next((ln.strip() for ln in self.code.splitlines() if ln.strip()), "")


def _shown(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        info = opening["info"].strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = FENCE.match(lines[j])
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        language, _, attributes = info.partition(" ")
        yield _classified(Block(page=page, line=i + 1, language=language,
                                attributes=attributes.strip(), code="\n".join(body) + "\n"))
        i = j + 1


def _classified(block: Block) -> Block:
    if not block.language:
        block.errors.append("a fenced block needs a language: `sh` (a command, run in CI), "
                            "`sh not-run: REASON`, or what it shows (text, yaml, json...)")
        return block
    if block.language in SHELL_SPELLINGS:
        block.errors.append(f"write `sh`, not `{block.language}`: commands are `sh` blocks")
        return block
    if block.language not in RUN_LANGUAGES:
        return block
    rest = block.attributes
    if rest.startswith("not-run:"):
        block.not_run = rest.removeprefix("not-run:").strip()
        if not block.not_run:
            block.errors.append("`not-run:` needs the reason the command is not run")
        return block
    for word in rest.split():
        key, _, value = word.partition("=")
        if word == "background":
            block.background = True
        elif word == "ci" and block.language == "sh":
            block.ci = True
        elif key == "exit" and value.isdigit():
            block.exit_status = int(value)
        elif key == "timeout" and value.replace(".", "", 1).isdigit():
            block.timeout = float(value)
        else:
            block.errors.append(f"unknown attribute {word!r} (background, ci, exit=N, "
                                "timeout=SECONDS, not-run: REASON)")
    if block.background and not SERVER_PORT_FLAGS.search(block.code):
        block.errors.append("a background block must name the port it listens on (--port N), "
                            "so the next blocks can wait for it")
    return block


def check(all_blocks: list[Block]) -> list[str]:
    """What is wrong with the pages, statically (no command is run)."""
    problems = [f"{b.where}: {e}" for b in all_blocks for e in b.errors]
    ci_lines = set((ROOT / ".ci" / "run").read_text().splitlines())
    for block in all_blocks:
        if block.ci:
            missing = [ln for ln in block.code.splitlines() if ln.strip() and ln not in ci_lines]
            if missing:
                problems.append(f"{block.where}: marked `ci` but .ci/run lacks {missing[0]!r}")
    readme = (ROOT / "README.md").read_text().count("\n")
    if readme > README_MAX_LINES:
        problems.append(f"README.md: {readme} lines, more than {README_MAX_LINES}: move detail "
                        "to docs/")
    return problems


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ports(page_blocks: list[Block]) -> dict[str, str]:
    """The ports the page's servers listen on, each given a free one for this run."""
    found = {m for b in page_blocks if b.background and b.runs
             for m in SERVER_PORT_FLAGS.findall(b.code)}
    return {port: str(_free_port()) for port in sorted(found)}


def _with_ports(code: str, ports: dict[str, str]) -> str:
    for old, new in ports.items():
        code = re.sub(rf"(?<![\d.]){old}(?!\d)", new, code)
    return code


def _command(block: Block, code: str) -> list[str]:
    if block.language == "python":
        return [sys.executable, "-c", code]
    return ["bash", "-e", "-o", "pipefail", "-c", code]


def _wait_for_ports(proc: subprocess.Popen[bytes], ports: list[int], deadline: float) -> str:
    """'' once every port accepts a connection; else why not."""
    for port in ports:
        while True:
            if proc.poll() is not None:
                return f"exited with status {proc.returncode} before listening on {port}"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    return f"nothing listened on {port} within the block's timeout"
                time.sleep(0.1)
    return ""


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _go_caches() -> dict[str, str]:
    """Go's module and build caches where they are now. Under the page's own HOME, Go would
    fetch every module again, into a module cache it makes read-only (which a user other than
    root could not even delete with the page's directory)."""
    go = shutil.which("go")
    if go is None:
        return {}
    done = subprocess.run([go, "env", "GOMODCACHE", "GOCACHE"], capture_output=True, text=True)
    values = done.stdout.splitlines()
    if done.returncode != 0 or len(values) != 2 or not all(values):
        return {}
    return {"GOMODCACHE": values[0], "GOCACHE": values[1]}


def _tree_state() -> set[str]:
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return set(out.splitlines())


def _tail(data: bytes, lines: int = 30) -> str:
    text = data.decode(errors="replace").rstrip()
    return "\n".join("    | " + ln for ln in text.splitlines()[-lines:])


def run_page(page_blocks: list[Block]) -> tuple[int, list[str]]:
    """Runs the page's blocks in order: how many ran, and the failures, each with the output
    that shows why."""
    failures: list[str] = []
    ran = 0
    ports = _ports(page_blocks)
    servers: list[tuple[Block, subprocess.Popen[bytes], Path]] = []
    before = _tree_state()
    with tempfile.TemporaryDirectory(prefix="doc-commands-") as tmp:
        bin_dir = str(Path(sys.executable).parent)
        # HOME too is the page's own: what a command installs "into your home" (a venv for the
        # client, a project for the Node package) goes away with it.
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               "TMPDIR": tmp, "HOME": tmp, "PYTHONUNBUFFERED": "1", **_go_caches()}
        if (Path(bin_dir) / "activate").exists():
            env["VIRTUAL_ENV"] = str(Path(bin_dir).parent)
        try:
            for block in page_blocks:
                if not block.runs:
                    why = "run by .ci/run" if block.ci else f"not run: {block.not_run}"
                    if block.language in RUN_LANGUAGES:
                        print(f"skip {block.where}  {block.first_line()}  ({why})")
                    continue
                code = _with_ports(block.code, ports)
                started = time.monotonic()
                ran += 1
                if block.background:
                    log = Path(tmp) / f"server-{block.line}.log"
                    with open(log, "wb") as out:
                        proc = subprocess.Popen(_command(block, code), cwd=ROOT, env=env,
                                                stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL,
                                                start_new_session=True)
                    servers.append((block, proc, log))
                    listen = [int(p) for p in SERVER_PORT_FLAGS.findall(code)]
                    why = _wait_for_ports(proc, listen, started + block.timeout)
                    if why:
                        failures.append(f"{block.where}: the server {why}\n"
                                        + _tail(log.read_bytes()))
                        print(f"FAIL {block.where}  {block.first_line()}")
                        break
                    print(f"ok   {block.where}  {block.first_line()}  (serving on "
                          f"{', '.join(map(str, listen))})")
                    continue
                try:
                    done = subprocess.run(_command(block, code), cwd=ROOT, env=env,
                                          capture_output=True, stdin=subprocess.DEVNULL,
                                          timeout=block.timeout)
                    status, output = done.returncode, done.stdout + done.stderr
                except subprocess.TimeoutExpired as exc:
                    status = None
                    output = (exc.stdout or b"") + (exc.stderr or b"")
                seconds = time.monotonic() - started
                if status != block.exit_status:
                    said = "timed out" if status is None else f"exit status {status}"
                    failures.append(f"{block.where}: {said}, expected {block.exit_status}\n"
                                    f"    $ {code.strip()}\n" + _tail(output))
                    print(f"FAIL {block.where}  {block.first_line()}  ({said})")
                else:
                    print(f"ok   {block.where}  {block.first_line()}  ({seconds:.1f} s)")
        finally:
            for _block, proc, _log in servers:
                _stop(proc)
        left = sorted(_tree_state() - before)
        if left:
            failures.append(f"{_shown(page_blocks[0].page)}: its commands left files "
                            f"in the repository: {', '.join(left)}")
    return ran, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("mode", choices=("check", "run", "list"))
    parser.add_argument("pages", nargs="*", help="pages to run (default: README.md, docs/*.md)")
    args = parser.parse_args(argv)
    chosen = [Path(p).resolve() for p in args.pages] or pages()
    by_page = {page: list(blocks(page)) for page in chosen}
    all_blocks = [b for found in by_page.values() for b in found]
    if args.mode == "list":
        for b in all_blocks:
            if b.language in RUN_LANGUAGES:
                how = ("not run: " + b.not_run if b.not_run else "run by .ci/run" if b.ci
                       else "background" if b.background else "run")
                print(f"{b.where}  [{how}]  {b.first_line()}")
        return 0
    problems = check(all_blocks) if not args.pages else \
        [f"{b.where}: {e}" for b in all_blocks for e in b.errors]
    for problem in problems:
        print(f"doc_commands: {problem}", file=sys.stderr)
    if problems:
        return 1
    runnable = sum(b.runs for b in all_blocks)
    if args.mode == "check":
        print(f"doc_commands: {len(all_blocks)} fenced blocks in {len(by_page)} pages; "
              f"{runnable} commands run in CI, "
              f"{sum(bool(b.not_run) for b in all_blocks)} not run (each says why), "
              f"{sum(b.ci for b in all_blocks)} run by .ci/run")
        return 0
    failures: list[str] = []
    ran = 0
    for found in by_page.values():
        if any(b.runs for b in found):
            count, failed = run_page(found)
            ran, failures = ran + count, failures + failed
    for failure in failures:
        print(f"\ndoc_commands: {failure}", file=sys.stderr)
    print(f"doc_commands: {ran} of {runnable} commands run, {len(failures)} failures",
          file=sys.stderr)
    return 1 if failures or ran != runnable else 0


if __name__ == "__main__":
    sys.exit(main())
