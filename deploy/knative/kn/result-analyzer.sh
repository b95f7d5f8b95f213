#!/usr/bin/env bash
# result-analyzer as kn commands: the same Service and Trigger as result-analyzer.yaml and
# triggers.yaml. IMAGE is the built image (ko build ./functions/result-analyzer/cmd/result-analyzer).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the result-analyzer image}
kn service apply result-analyzer -n "$NS" --image "$IMAGE" --port h2c:8080 --cluster-local \
  --scale-metric concurrency --scale-target 4 --scale-min 0 --scale-max 4 \
  --concurrency-limit 4 --timeout 300 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 --env LENS_DATA_DIR=/data \
  --env-from-field POD_NAME=metadata.name \
  --mount /data=pvc:lensfn-data \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=250m,memory=256Mi --limit memory=1Gi
kn trigger create task-replayed-to-result-analyzer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.task.replayed.v1 --filter source=/lensfn/trace-replayer \
  --sink ksvc:result-analyzer:/events 2>/dev/null ||
  kn trigger update task-replayed-to-result-analyzer -n "$NS" \
    --filter type=dev.lensfn.simulation.task.replayed.v1 --filter source=/lensfn/trace-replayer \
    --sink ksvc:result-analyzer:/events
