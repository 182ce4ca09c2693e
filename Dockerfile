# One image for every command: `decider serve` (the entrypoint), `decider-shim` and
# `decider-kueue-check` (their Deployments set `command: ["decider-shim"]` and so on).
#
#   docker build -t ghcr.io/jobset-decider/jobset-decider:0.1.0 .
#
# Runs as a non-root user on a read-only root file system: nothing is written outside /tmp
# (mount an emptyDir there; `serve --webhook-self-signed` writes its certificate there).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: wheels for the project and every dependency ------------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what the package is built from (.dockerignore keeps the rest out of the context).
COPY pyproject.toml README.md LICENSE ./
COPY decider ./decider
COPY decider_telemetry ./decider_telemetry
COPY shim ./shim
COPY clients/python ./clients/python
# Binary wheels exist for every dependency (grpcio, protobuf, google-re2, cryptography) on
# amd64 and arm64, so no compiler is needed even here.
RUN python -m pip wheel --wheel-dir /wheels .

# ---- run: the installed package and nothing to build with ----------------------------------
FROM ${PYTHON_IMAGE}
# No .pyc written at run time (the root file system is read-only; pip compiled them at
# install), output unbuffered for `kubectl logs`, and a HOME that is writable.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    TMPDIR=/tmp
# The wheels are bind-mounted from the build stage, so none of them stays in a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-index --find-links=/wheels jobset-decider \
    && groupadd --gid 65532 decider \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
               --shell /usr/sbin/nologin decider
# Numeric, so the kubelet can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
WORKDIR /tmp
# gRPC, the admission webhook (HTTPS), the shim's health endpoint.
EXPOSE 50051 9443 8081
ENTRYPOINT ["decider"]
CMD ["serve"]
