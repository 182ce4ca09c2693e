"""The committed generated code matches the .proto files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.waits

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ["decider_pb2.py", "decider_pb2.pyi", "decider_pb2_grpc.py"]


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    subprocess.run(["bash", str(ROOT / "proto" / "generate.sh"), str(tmp_path)], check=True,
                   env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"})
    for name in GENERATED:
        where = Path("clients", "python", "decider_api", "v1", name)
        fresh = (tmp_path / where).read_text()
        committed = (ROOT / where).read_text()
        assert fresh == committed, f"{where} is stale: run `bash proto/generate.sh`"


def test_shim_and_client_do_not_import_the_core() -> None:
    code = ("import sys, decider_client, decider_client.observe, decider_client.render;"
            "bad=[m for m in sys.modules if m.startswith(('decider.core','decider.service',"
            "'decider.cli','decider.contract.convert'))]; print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
