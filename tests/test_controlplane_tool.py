"""tools/controlplane without a control plane: what it changes in deploy/ to install it on
loopback (and nothing else), the version stamp, and when the e2e suite is selected."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.e2e.conftest import _asked_for
from tools.controlplane import build, product, versions

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("args", "replace", "add", "expected"), [
    pytest.param(["--port=50051", "--workers=2"], {"--port": "1234"}, [],
                 ["--port=1234", "--workers=2"], id="replaced-in-place"),
    pytest.param(["--webhook-self-signed", "--grace=10"], {"--webhook-self-signed": None},
                 ["--webhook-cert-file=c"], ["--grace=10", "--webhook-cert-file=c"],
                 id="dropped-and-added"),
    pytest.param(["--feature-gates="], {"--feature-gates": "A=true"}, [],
                 ["--feature-gates=A=true"], id="empty-value-replaced"),
])
def test_adapted_args(args, replace, add, expected):
    assert product.adapted_args(args, replace, add) == expected


def test_adapted_args_refuses_a_flag_the_deployment_lost():
    with pytest.raises(SystemExit, match="--decider-address"):
        product.adapted_args(["--port=1"], {"--decider-address": "x"}, [])


def test_install_changes_only_what_loopback_needs():
    docs = product.documents()
    original = copy.deepcopy(docs)
    applied = product.manifests(docs, 4443, b"PEM")
    assert not [d for d in applied if d["kind"] == "Deployment"]
    kept = [d for d in original if d["kind"] != "Deployment"]
    assert len(applied) == len(kept)
    for before, after in zip(kept, applied, strict=True):
        if "Webhook" not in after["kind"]:
            assert after == before
            continue
        for old_hook, hook in zip(before["webhooks"], after["webhooks"], strict=True):
            path = old_hook["clientConfig"]["service"]["path"]
            assert hook["clientConfig"] == {"url": f"https://127.0.0.1:4443{path}",
                                            "caBundle": base64.b64encode(b"PEM").decode()}
            assert {k: v for k, v in hook.items() if k != "clientConfig"} \
                == {k: v for k, v in old_hook.items() if k != "clientConfig"}


def test_every_deployment_flag_the_install_replaces_is_there():
    docs = product.documents()
    for name, flags in (("jobset-decider", ["--port", "--webhook-port", "--webhook-feature-gates",
                                            "--webhook-self-signed"]),
                        ("decider-shim", ["--decider-address", "--healthz-port",
                                          "--scheduling-api-version", "--feature-gates"])):
        args = product.container(docs, name)["args"]
        assert product.adapted_args(args, dict.fromkeys(flags, None), []) is not None


def test_version_is_stamped_for_both_version_packages():
    flags = build.kube_ldflags("v1.37.2").split(" -X ")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert any(f.endswith(f"{pkg}.gitVersion=v1.37.2") for f in flags)
        assert any(f.endswith(f"{pkg}.gitMinor=37") for f in flags)


@pytest.mark.parametrize("release", sorted(versions.RELEASES))
def test_each_release_has_a_committed_wrapper_module(release):
    rel = versions.release(release)
    gomod = (rel.module_dir / "go.mod").read_text()
    assert f"k8s.io/kubernetes {release}\n" in gomod
    minor = "v0." + release.lstrip("v").split(".", 1)[1]
    assert f"k8s.io/api => k8s.io/api {minor}" in gomod
    assert (rel.module_dir / "go.sum").is_file()


@pytest.mark.parametrize(("markexpr", "args", "selected"), [
    pytest.param("", [], False, id="readme-command"),
    pytest.param("waits", [], False, id="other-marker"),
    pytest.param("not e2e", [], True, id="expression-naming-e2e-is-the-users-choice"),
    pytest.param("e2e", [], True, id="m-e2e"),
    pytest.param("", [str(ROOT / "tests" / "e2e")], True, id="folder-named"),
    pytest.param("", [str(ROOT / "tests" / "e2e" / "test_webhook.py") + "::test_x"], True,
                 id="test-named"),
    pytest.param("", [str(ROOT / "tests" / "test_cli.py")], False, id="other-file-named"),
])
def test_e2e_selection(markexpr, args, selected):
    config = SimpleNamespace(option=SimpleNamespace(markexpr=markexpr), args=args)
    assert _asked_for(config) is selected
