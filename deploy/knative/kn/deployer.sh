#!/usr/bin/env bash
# deployer as kn commands. The Service is deployer.yaml itself, the manifest that tests/knative
# validates with Knative's own code: kn only swaps its ko:// image for IMAGE, the built image
# (ko build ./functions/deployer/cmd/deployer). The Triggers are the ones in triggers.yaml
# (tests/knative checks each kn flag against them).
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the deployer image}
kn service apply deployer -n "$NS" --filename deployer.yaml --image "$IMAGE"
kn trigger create deployment-requested-to-deployer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.deployment.requested.v1 --filter source=/lensfn/workflow-orchestrator \
  --sink ksvc:deployer:/events 2>/dev/null ||
  kn trigger update deployment-requested-to-deployer -n "$NS" \
    --filter type=dev.lensfn.evaluation.deployment.requested.v1 --filter source=/lensfn/workflow-orchestrator \
    --sink ksvc:deployer:/events
kn trigger create deployment-cleanup-requested-to-deployer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.deployment.cleanup.requested.v1 --filter source=/lensfn/workflow-orchestrator \
  --sink ksvc:deployer:/events 2>/dev/null ||
  kn trigger update deployment-cleanup-requested-to-deployer -n "$NS" \
    --filter type=dev.lensfn.evaluation.deployment.cleanup.requested.v1 --filter source=/lensfn/workflow-orchestrator \
    --sink ksvc:deployer:/events
