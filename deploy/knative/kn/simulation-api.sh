#!/usr/bin/env bash
# simulation-api as kn commands: the same Service and Trigger as simulation-api.yaml and
# triggers.yaml. IMAGE is the built image (ko build ./functions/simulation-api/cmd/simulation-api).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the simulation-api image}
kn service apply simulation-api -n "$NS" --image "$IMAGE" --port h2c:8080 \
  --label lensfn.dev/emits-events=true \
  --annotation-service lensfn.dev/path-prefix=/api/simulation \
  --scale-metric concurrency --scale-target 50 --scale-min 1 --scale-max 10 \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=2m \
  --concurrency-limit 0 --timeout 600 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 \
  --env LENS_DATA_DIR=/data --env LENS_BUILTIN_MODULE_DIR=/var/run/ko/modules --env LENS_CACHE_DIR=/tmp/wazero-cache \
  --env-from-field POD_NAME=metadata.name --env-value-from LENS_SECRET_KEY=secret:lensfn-secrets:secret-key \
  --mount /data=pvc:lensfn-data \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=250m,memory=256Mi --limit memory=1Gi
kn trigger create dataset-downloaded-to-simulation-api -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.simulation.dataset.downloaded.v1 --filter source=/lensfn/simulation-api \
  --sink ksvc:simulation-api:/events 2>/dev/null ||
  kn trigger update dataset-downloaded-to-simulation-api -n "$NS" \
    --filter type=dev.lensfn.simulation.dataset.downloaded.v1 --filter source=/lensfn/simulation-api \
    --sink ksvc:simulation-api:/events
