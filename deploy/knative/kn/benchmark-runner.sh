#!/usr/bin/env bash
# benchmark-runner as kn commands. The Service is benchmark-runner.yaml itself, the manifest that tests/knative
# validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the built image
# (ko build ./functions/benchmarkrunner/cmd/benchmark-runner), so anything else is set in the manifest. The Trigger
# is the one in triggers.yaml (tests/knative checks each kn flag against it).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the benchmark-runner image}
kn service apply benchmark-runner -n "$NS" --filename benchmark-runner.yaml --image "$IMAGE"
kn trigger create run-queued-to-benchmark-runner -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/evaluation-api \
  --sink ksvc:benchmark-runner:/events 2>/dev/null ||
  kn trigger update run-queued-to-benchmark-runner -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/evaluation-api \
    --sink ksvc:benchmark-runner:/events
kn trigger create run-worker-queued-to-benchmark-runner -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.worker.queued.v1 --filter source=/lensfn/benchmark-runner \
  --sink ksvc:benchmark-runner:/events 2>/dev/null ||
  kn trigger update run-worker-queued-to-benchmark-runner -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.worker.queued.v1 --filter source=/lensfn/benchmark-runner \
    --sink ksvc:benchmark-runner:/events
kn trigger create run-queued-from-orchestrator-to-benchmark-runner -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/workflow-orchestrator \
  --sink ksvc:benchmark-runner:/events 2>/dev/null ||
  kn trigger update run-queued-from-orchestrator-to-benchmark-runner -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/workflow-orchestrator \
    --sink ksvc:benchmark-runner:/events
