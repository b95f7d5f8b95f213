#!/usr/bin/env bash
# evaluation-api as kn commands. The Service is evaluation-api.yaml itself, the manifest that tests/knative
# validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the built image
# (ko build ./functions/evaluationapi/cmd/evaluation-api), so anything else is set in the manifest. The Trigger
# is the one in triggers.yaml (tests/knative checks each kn flag against it).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the evaluation-api image}
kn service apply evaluation-api -n "$NS" --filename evaluation-api.yaml --image "$IMAGE"
kn trigger create run-requested-to-evaluation-api -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.requested.v1 \
  --sink ksvc:evaluation-api:/events 2>/dev/null ||
  kn trigger update run-requested-to-evaluation-api -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.requested.v1 \
    --sink ksvc:evaluation-api:/events
kn trigger create ping-run-requested-to-evaluation-api -n "$NS" --broker lensfn \
  --filter type=dev.knative.sources.ping --filter lensfnevent=dev.lensfn.evaluation.run.requested.v1 \
  --sink ksvc:evaluation-api:/events 2>/dev/null ||
  kn trigger update ping-run-requested-to-evaluation-api -n "$NS" \
    --filter type=dev.knative.sources.ping --filter lensfnevent=dev.lensfn.evaluation.run.requested.v1 \
    --sink ksvc:evaluation-api:/events
kn trigger create evaluation-requested-to-evaluation-api -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.requested.v1 \
  --sink ksvc:evaluation-api:/events 2>/dev/null ||
  kn trigger update evaluation-requested-to-evaluation-api -n "$NS" \
    --filter type=dev.lensfn.evaluation.requested.v1 \
    --sink ksvc:evaluation-api:/events
