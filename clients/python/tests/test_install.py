"""`pip install ./clients/python` brings the client and what it needs, and nothing of the server."""

from __future__ import annotations

import importlib
import importlib.util
import re
from importlib import metadata
from pathlib import Path

import pytest
from helpers import ROOT, client_only

# What the server needs and a client must not bring (the root pyproject.toml's dependencies
# beyond gRPC, protobuf and YAML), by import name and by distribution name.
SERVER_MODULES = ["decider", "shim", "uvloop", "aiohttp", "kubernetes", "cryptography", "orjson",
                  "re2", "opentelemetry", "prometheus_client", "grpc_health"]
SERVER_DISTRIBUTIONS = ["jobset-decider", "uvloop", "aiohttp", "kubernetes", "cryptography",
                        "orjson", "google-re2", "opentelemetry-api", "opentelemetry-sdk",
                        "grpcio-health-checking", "grpcio-tools"]


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0].lower()


def test_the_distribution_requires_grpc_protobuf_and_yaml_only() -> None:
    client_only()
    requires = metadata.requires("jobset-decider-client") or []
    assert sorted(_requirement_name(r) for r in requires if "extra ==" not in r) == [
        "grpcio", "grpcio-reflection", "protobuf", "pyyaml"]
    assert metadata.metadata("jobset-decider-client")["License-Expression"] == "Apache-2.0"


@pytest.mark.parametrize("name", SERVER_DISTRIBUTIONS)
def test_no_server_distribution_is_installed(name: str) -> None:
    client_only()
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.distribution(name)


@pytest.mark.parametrize("name", SERVER_MODULES)
def test_no_server_module_can_be_imported(name: str) -> None:
    client_only()
    assert importlib.util.find_spec(name) is None


@pytest.mark.parametrize("module", [
    "decider_client", "decider_client.client", "decider_client.observe", "decider_client.render",
    "decider_client.table", "decider_client.documents", "decider_client.skew",
    "decider_client.tls_channel", "decider_api", "decider_api.v1.decider_pb2",
    "decider_api.v1.decider_pb2_grpc", "decider_api.summarize", "decider_api.tls_files",
    "decider_api.names", "decider_api.version"])
def test_every_public_module_imports_from_the_installed_package(module: str) -> None:
    client_only()
    loaded = importlib.import_module(module)
    path = Path(loaded.__file__ or "")
    # The installed copy, not the repository's clients/python.
    assert ROOT not in path.parents, path
    assert "site-packages" in path.parts


def test_the_version_is_the_clients() -> None:
    client_only()
    from decider_api.version import VERSION

    assert metadata.version("jobset-decider-client") == VERSION
