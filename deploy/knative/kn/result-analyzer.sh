#!/usr/bin/env bash
# result-analyzer as kn commands. The Service is result-analyzer.yaml itself, the manifest that
# tests/knative validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the
# built image (ko build ./functions/resultanalyzer/cmd/result-analyzer), so anything else is set
# in the manifest. The Trigger is the one in triggers.yaml (tests/knative checks each kn flag
# against it).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the result-analyzer image}
kn service apply result-analyzer -n "$NS" --filename result-analyzer.yaml --image "$IMAGE"
kn trigger create task-replayed-to-result-analyzer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.task.replayed.v1 --filter source=/lensfn/trace-replayer \
  --sink ksvc:result-analyzer:/events 2>/dev/null ||
  kn trigger update task-replayed-to-result-analyzer -n "$NS" \
    --filter type=dev.lensfn.simulation.task.replayed.v1 --filter source=/lensfn/trace-replayer \
    --sink ksvc:result-analyzer:/events
