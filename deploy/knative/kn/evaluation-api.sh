#!/usr/bin/env bash
# evaluation-api as kn commands: the same Service and Trigger as evaluation-api.yaml and
# triggers.yaml. IMAGE is the built image (ko build ./functions/evaluation-api/cmd/evaluation-api).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the evaluation-api image}
kn service apply evaluation-api -n "$NS" --image "$IMAGE" --port h2c:8080 \
  --label lensfn.dev/emits-events=true --annotation-service lensfn.dev/path-prefix=/api/v1/evaluate \
  --scale-metric concurrency --scale-target 50 --scale-min 1 --scale-max 10 \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=2m \
  --concurrency-limit 0 --timeout 60 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 --env LENS_DATA_DIR=/data \
  --env LENS_STATIC_EXECUTIONS= \
  --env 'K_LOGGING_CONFIG={"level":"info","encoding":"json"}' \
  --env-value-from LENS_SECRET_KEY=secret:lensfn-secrets:secret-key \
  --env-from-field POD_NAME=metadata.name \
  --mount /data=pvc:lensfn-data \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=250m,memory=256Mi --limit memory=1Gi
kn trigger create run-requested-to-evaluation-api -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.requested.v1 \
  --sink ksvc:evaluation-api:/events 2>/dev/null ||
  kn trigger update run-requested-to-evaluation-api -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.requested.v1 \
    --sink ksvc:evaluation-api:/events
