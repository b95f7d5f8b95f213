#!/usr/bin/env bash
# trace-replayer as kn commands: the same Service and Trigger as trace-replayer.yaml and
# triggers.yaml. IMAGE is the built image (ko build ./functions/trace-replayer/cmd/trace-replayer).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the trace-replayer image}
kn service apply trace-replayer -n "$NS" --image "$IMAGE" --port h2c:8080 --cluster-local \
  --label lensfn.dev/emits-events=true \
  --scale-metric concurrency --scale-target 10 --scale-min 1 --scale-max 4 \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=30m \
  --concurrency-limit 0 --timeout 600 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 \
  --env LENS_DATA_DIR=/data --env LENS_BUILTIN_MODULE_DIR=/var/run/ko/modules --env LENS_CACHE_DIR=/tmp/wazero-cache \
  --env LENS_MAX_CONCURRENT_TASKS=1 --env GOMEMLIMIT=1600MiB \
  --env-value-from LENS_SECRET_KEY=secret:lensfn-secrets:secret-key \
  --env-from-field POD_NAME=metadata.name \
  --mount /data=pvc:lensfn-data \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=1,memory=512Mi --limit memory=2Gi
kn trigger create task-queued-to-trace-replayer -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.task.queued.v1 --filter source=/lensfn/simulation-api \
  --sink ksvc:trace-replayer:/events 2>/dev/null ||
  kn trigger update task-queued-to-trace-replayer -n "$NS" \
    --filter type=dev.lensfn.simulation.task.queued.v1 --filter source=/lensfn/simulation-api \
    --sink ksvc:trace-replayer:/events
