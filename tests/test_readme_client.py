"""The README's Python client example runs as written, against a real server."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

from decider.server import BackgroundServer

ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_python_client_example_prints_the_plans_actions() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### From Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "DeciderClient" in code and "observe.build_decide_request" in code
    out = io.StringIO()
    with BackgroundServer() as server:
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code.replace("localhost:50051", server.target), "README", "exec"),
                     {})
        finally:
            os.chdir(cwd)
    lines = out.getvalue().splitlines()
    assert "CreateService trainer" in lines
    assert "CreateJob trainer-workers-2" in lines
