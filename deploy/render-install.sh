#!/usr/bin/env bash
# Render each overlay into the single file `kubectl apply --server-side -f` installs.
# tests/test_install.py fails when a file and its kustomization drift apart.
set -euo pipefail
cd "$(dirname "$0")"
for overlay in standalone beside-upstream; do
  {
    echo "# jobset-decider, $overlay: rendered from deploy/$overlay by deploy/render-install.sh."
    echo "# Do not edit: change the kustomizations and render again."
    echo "#   kubectl apply --server-side -f deploy/install-$overlay.yaml"
    kubectl kustomize "$overlay"
  } > "install-$overlay.yaml"
done
