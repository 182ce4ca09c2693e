"""The gRPC server's TLS, following its certificate files (`serve --tls-*-file`).

gRPC core asks the credentials' fetcher for a new certificate configuration at every new
handshake (grpc.dynamic_ssl_server_credentials, which works on grpc.aio's server too): the
fetcher answers None (keep what you have) except when the files changed into a usable set,
read at most every CHECK_SECONDS (decider_api/tls_files.py). Connections already open
keep the certificate they were made with; --max-connection-age ends them in time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import grpc

from decider_api.tls_files import CHECK_SECONDS, FileWatch, Material, TLSFileError, TLSPaths

__all__ = ["CHECK_SECONDS", "ServerCertificates", "TLSFileError", "TLSFiles"]

log = logging.getLogger("decider.server")


@dataclass(frozen=True)
class TLSFiles:
    cert_file: str
    key_file: str
    # Set: clients must present a certificate signed by a CA in this file (mutual TLS).
    client_ca_file: str = ""
    check_seconds: float | None = None  # None: CHECK_SECONDS

    @property
    def client_ca(self) -> bool:
        return bool(self.client_ca_file)

    def paths(self) -> TLSPaths:
        return TLSPaths(cert_file=self.cert_file, key_file=self.key_file,
                        ca_file=self.client_ca_file)

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials that follow the files; TLSFileError if they are not usable now."""
        return ServerCertificates(self).credentials()


def _configuration(material: Material) -> grpc.ServerCertificateConfiguration:
    assert material.key is not None and material.cert is not None
    return grpc.ssl_server_certificate_configuration([(material.key, material.cert)],
                                                     root_certificates=material.ca)


class ServerCertificates:
    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self.watch = FileWatch(files.paths(), what="gRPC server TLS",
                               check_seconds=files.check_seconds, logger=log)

    def credentials(self) -> grpc.ServerCredentials:
        # Whether client certificates are required is fixed here: a server started with mTLS
        # stays mTLS whatever its files become.
        return grpc.dynamic_ssl_server_credentials(
            _configuration(self.watch.material), self.fetch,
            require_client_authentication=self.files.client_ca)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        # Runs on a gRPC core thread in the middle of a handshake: whatever goes wrong here
        # must become "keep the current configuration", never an exception into the core.
        try:
            material = self.watch.poll()
            return None if material is None else _configuration(material)
        except Exception:
            log.exception("new TLS certificates could not be handed to gRPC; keeping the old")
            return None
