#!/usr/bin/env bash
# simulation-api as kn commands. The Service is simulation-api.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/simulationapi/cmd/simulation-api), so anything else is set in
# the manifest. The Trigger is the one in triggers.yaml (tests/knative checks each kn flag against
# it).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the simulation-api image}
kn service apply simulation-api -n "$NS" --filename simulation-api.yaml --image "$IMAGE"
kn trigger create dataset-downloaded-to-simulation-api -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.dataset.downloaded.v1 --filter source=/lensfn/simulation-api \
  --sink ksvc:simulation-api:/events 2>/dev/null ||
  kn trigger update dataset-downloaded-to-simulation-api -n "$NS" \
    --filter type=dev.lensfn.simulation.dataset.downloaded.v1 --filter source=/lensfn/simulation-api \
    --sink ksvc:simulation-api:/events
