#!/usr/bin/env bash
# inventory-api as kn commands: the same Service as inventory-api.yaml (it consumes no events, so
# it has no Trigger). IMAGE is the built image (ko build ./functions/inventory-api/cmd/inventory-api).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the inventory-api image}
kn service apply inventory-api -n "$NS" --image "$IMAGE" --port h2c:8080 \
  --annotation-service lensfn.dev/path-prefix=/api/cluster,/api/v1/deployments,/api/v1/model-services,/api/v1/configurations \
  --scale-metric concurrency --scale-target 50 --scale-min 1 --scale-max 5 \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=2m \
  --concurrency-limit 0 --timeout 60 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 \
  --env LENS_MEMBER_PROBE_INTERVAL=10s --env LENS_ENDPOINT_PROBE_TIMEOUT=5s \
  --env-from-field POD_NAME=metadata.name --env-value-from LENS_SECRET_KEY=secret:lensfn-secrets:secret-key \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=100m,memory=64Mi --limit memory=256Mi
