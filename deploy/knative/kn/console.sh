#!/usr/bin/env bash
# console as kn commands. The Service is console.yaml itself, the manifest that tests/knative
# validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the built image
# (ko build ./functions/console/cmd/console), so anything else is set in the manifest. It
# consumes no events, so it has no Trigger.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the console image}
kn service apply console -n "$NS" --filename console.yaml --image "$IMAGE"
