#!/usr/bin/env bash
# workflow-orchestrator as kn commands. The Service is workflow-orchestrator.yaml itself, the
# manifest that tests/knative validates with Knative's own code: kn only swaps its ko:// image for
# IMAGE, the built image (ko build ./functions/workfloworchestrator/cmd/workflow-orchestrator).
# The Triggers are the ones in triggers.yaml (tests/knative checks each kn flag against them).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the workflow-orchestrator image}
kn service apply workflow-orchestrator -n "$NS" --filename workflow-orchestrator.yaml --image "$IMAGE"
kn trigger create workflow-queued-to-workflow-orchestrator -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.workflow.queued.v1 --filter source=/lensfn/evaluation-api \
  --sink ksvc:workflow-orchestrator:/events 2>/dev/null ||
  kn trigger update workflow-queued-to-workflow-orchestrator -n "$NS" \
    --filter type=dev.lensfn.evaluation.workflow.queued.v1 --filter source=/lensfn/evaluation-api \
    --sink ksvc:workflow-orchestrator:/events
kn trigger create deployment-ready-to-workflow-orchestrator -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.deployment.ready.v1 --filter source=/lensfn/deployer \
  --sink ksvc:workflow-orchestrator:/events 2>/dev/null ||
  kn trigger update deployment-ready-to-workflow-orchestrator -n "$NS" \
    --filter type=dev.lensfn.evaluation.deployment.ready.v1 --filter source=/lensfn/deployer \
    --sink ksvc:workflow-orchestrator:/events
kn trigger create deployment-failed-to-workflow-orchestrator -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.deployment.failed.v1 --filter source=/lensfn/deployer \
  --sink ksvc:workflow-orchestrator:/events 2>/dev/null ||
  kn trigger update deployment-failed-to-workflow-orchestrator -n "$NS" \
    --filter type=dev.lensfn.evaluation.deployment.failed.v1 --filter source=/lensfn/deployer \
    --sink ksvc:workflow-orchestrator:/events
kn trigger create deployment-cleaned-to-workflow-orchestrator -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.deployment.cleaned.v1 --filter source=/lensfn/deployer \
  --sink ksvc:workflow-orchestrator:/events 2>/dev/null ||
  kn trigger update deployment-cleaned-to-workflow-orchestrator -n "$NS" \
    --filter type=dev.lensfn.evaluation.deployment.cleaned.v1 --filter source=/lensfn/deployer \
    --sink ksvc:workflow-orchestrator:/events
kn trigger create run-finished-to-workflow-orchestrator -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.finished.v1 \
  --sink ksvc:workflow-orchestrator:/events 2>/dev/null ||
  kn trigger update run-finished-to-workflow-orchestrator -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.finished.v1 \
    --sink ksvc:workflow-orchestrator:/events
