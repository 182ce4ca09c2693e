#!/usr/bin/env bash
# Render each overlay into the single file `kubectl apply --server-side -f` installs, and copy
# the CRD into the Helm chart (a chart reads only files inside it).
# tests/test_install.py and tests/test_helm_values.py fail when a copy drifts.
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
cp crd/jobset.x-k8s.io_jobsets.yaml ../charts/jobset-decider/files/jobset.x-k8s.io_jobsets.yaml
