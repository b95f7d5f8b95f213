#!/usr/bin/env bash
# benchmark-runner as kn commands: the same Service and Trigger as benchmark-runner.yaml and
# triggers.yaml. IMAGE is the built image (ko build ./functions/benchmark-runner/cmd/benchmark-runner).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the benchmark-runner image}
kn service apply benchmark-runner -n "$NS" --image "$IMAGE" --port h2c:8080 --cluster-local \
  --label lensfn.dev/emits-events=true \
  --scale-metric concurrency --scale-target 1 --scale-min 1 --scale-max 32 \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=30m \
  --concurrency-limit 1 --timeout 14400 \
  --env REDIS_URL=redis://redis.lensfn.svc.cluster.local:6379/0 --env LENS_DATA_DIR=/data \
  --env LENS_MAX_CONCURRENT_RUNS=1 --env LENS_LEASE_TTL=15s --env GOMEMLIMIT=1600MiB \
  --env-value-from LENS_SECRET_KEY=secret:lensfn-secrets:secret-key \
  --env-from-field POD_NAME=metadata.name \
  --mount /data=pvc:lensfn-data \
  --readiness-probe http:/readyz --liveness-probe http:/healthz \
  --request cpu=1,memory=512Mi --limit memory=2Gi
kn trigger create run-queued-to-benchmark-runner -n "$NS" --broker lensfn \
  --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/evaluation-api \
  --sink ksvc:benchmark-runner:/events 2>/dev/null ||
  kn trigger update run-queued-to-benchmark-runner -n "$NS" \
    --filter type=dev.lensfn.evaluation.run.queued.v1 --filter source=/lensfn/evaluation-api \
    --sink ksvc:benchmark-runner:/events
