#!/usr/bin/env bash
# trace-replayer as kn commands. The Service is trace-replayer.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/tracereplayer/cmd/trace-replayer), so anything else is set in
# the manifest. The Trigger is the one in triggers.yaml (tests/knative checks each kn flag against
# it).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the trace-replayer image}
kn service apply trace-replayer -n "$NS" --filename trace-replayer.yaml --image "$IMAGE"
kn trigger create task-queued-to-trace-replayer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.task.queued.v1 --filter source=/lensfn/simulation-api \
  --sink ksvc:trace-replayer:/events 2>/dev/null ||
  kn trigger update task-queued-to-trace-replayer -n "$NS" \
    --filter type=dev.lensfn.simulation.task.queued.v1 --filter source=/lensfn/simulation-api \
    --sink ksvc:trace-replayer:/events
