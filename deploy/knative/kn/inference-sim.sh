#!/usr/bin/env bash
# inference-sim as kn commands. The Service is inference-sim.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/inferencesim/cmd/inference-sim), so anything else is set in
# the manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the inference-sim image}
kn service apply inference-sim -n "$NS" --filename inference-sim.yaml --image "$IMAGE"
