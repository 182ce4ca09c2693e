"""tools/doc_commands.py, which runs the commands of README.md and docs/ in CI: every block of
the pages says what it is, and the runner tells a command that works from one that does not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("doc_commands", ROOT / "tools" / "doc_commands.py")
assert _spec is not None and _spec.loader is not None
doc_commands = importlib.util.module_from_spec(_spec)
sys.modules["doc_commands"] = doc_commands
_spec.loader.exec_module(doc_commands)


def _page(tmp_path: Path, text: str) -> list:
    page = tmp_path / "page.md"
    page.write_text(text)
    return list(doc_commands.blocks(page))


def test_every_block_of_the_readme_and_docs_says_what_it_is() -> None:
    found = [b for page in doc_commands.pages() for b in doc_commands.blocks(page)]
    assert doc_commands.check(found) == []
    # The walk found the pages' commands: a parser that saw none would pass the line above.
    assert sum(b.runs for b in found) >= 25
    assert {b.page.name for b in found if b.runs} >= {
        "README.md", "cli.md", "serving.md", "clients.md", "simulate.md", "gang.md",
        "admission.md", "install.md", "observability.md"}
    assert all(b.not_run for b in found if b.language == "sh" and "kubectl apply" in b.code)


def test_the_readme_is_short() -> None:
    assert (ROOT / "README.md").read_text().count("\n") <= doc_commands.README_MAX_LINES


@pytest.mark.parametrize(("fence", "error"), [
    pytest.param("```", "needs a language", id="no-language"),
    pytest.param("```bash", "write `sh`", id="bash-spelling"),
    pytest.param("```sh not-run:", "needs the reason", id="not-run-without-reason"),
    pytest.param("```sh quickly", "unknown attribute 'quickly'", id="unknown-attribute"),
    pytest.param("```sh background", "must name the port", id="server-without-port"),
])
def test_a_block_that_does_not_say_what_it_is_is_an_error(tmp_path: Path, fence: str,
                                                           error: str) -> None:
    (block,) = _page(tmp_path, f"text\n\n{fence}\necho hi\n```\n")
    assert any(error in e for e in block.errors), block.errors


def test_a_block_marked_ci_must_be_in_ci_run(tmp_path: Path) -> None:
    (block,) = _page(tmp_path, "```sh ci\necho not in .ci/run\n```\n")
    assert [p for p in doc_commands.check([block]) if "lacks 'echo not in .ci/run'" in p]


def test_blocks_inside_list_items_are_read_without_their_indentation(tmp_path: Path) -> None:
    (block,) = _page(tmp_path, "- item:\n\n  ```sh exit=3\n  exit 3\n  ```\n")
    assert (block.code, block.exit_status, block.runs) == ("exit 3\n", 3, True)


@pytest.mark.waits
def test_commands_run_in_order_and_a_failure_says_why(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    page = _page(tmp_path, "\n".join([
        "```sh", "echo first > \"$TMPDIR/seen\"", "```",
        "```python", "import os", "print(open(os.environ['TMPDIR'] + '/seen').read())", "```",
        "```sh exit=3", "exit 3", "```",
        "```sh", "echo the reason it failed; false", "```",
        "```sh not-run: needs a cluster", "kubectl apply -f nothing.yaml", "```", ""]))
    ran, failures = doc_commands.run_page(page)
    assert ran == 4
    assert len(failures) == 1
    assert "page.md:11: exit status 1, expected 0" in failures[0]
    assert "the reason it failed" in failures[0]
    out = capsys.readouterr().out
    assert "skip " in out and "not run: needs a cluster" in out


@pytest.mark.waits
def test_a_server_is_waited_for_and_its_port_is_a_free_one(tmp_path: Path) -> None:
    page = _page(tmp_path, "\n".join([
        "```sh background", "decider serve --port 50051", "```",
        "```python", "import socket",
        "socket.create_connection(('127.0.0.1', 50051), timeout=5).close()",
        "print(50051)", "```",
        "```sh", "grpcurl -plaintext localhost:50051 list", "```", ""]))
    ran, failures = doc_commands.run_page(page)
    assert (ran, failures) == (3, [])


@pytest.mark.waits
def test_a_server_that_never_listens_fails_its_block(tmp_path: Path) -> None:
    page = _page(tmp_path, "```sh background timeout=30\necho gone --port 50051\n```\n")
    ran, failures = doc_commands.run_page(page)
    assert ran == 1 and "exited with status 0 before listening" in failures[0]


@pytest.mark.waits
def test_a_command_that_leaves_a_file_in_the_repository_fails(tmp_path: Path) -> None:
    left = ROOT / "doc-commands-test-leftover.txt"
    try:
        page = _page(tmp_path, f"```sh\ntouch {left.name}\n```\n")
        _, failures = doc_commands.run_page(page)
    finally:
        left.unlink(missing_ok=True)
    assert len(failures) == 1 and left.name in failures[0]
