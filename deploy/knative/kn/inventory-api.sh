#!/usr/bin/env bash
# inventory-api as kn commands. The Service is inventory-api.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/inventoryapi/cmd/inventory-api), so anything else is set in
# the manifest. It consumes no events, so it has no Trigger.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the inventory-api image}
kn service apply inventory-api -n "$NS" --filename inventory-api.yaml --image "$IMAGE"
