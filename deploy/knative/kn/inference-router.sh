#!/usr/bin/env bash
# inference-router as kn commands. The Service is inference-router.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/inferencerouter/cmd/inference-router). The deployer creates
# one router per routed deployment from the same template; this applies the example.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the inference-router image}
kn service apply inference-router -n "$NS" --filename inference-router.yaml --image "$IMAGE"
