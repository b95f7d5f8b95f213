#!/usr/bin/env bash
# inference-sim as kn commands: the same Service as deploy/knative/inference-sim.yaml.
# IMAGE is the built image (ko build ./functions/inference-sim/cmd/inference-sim).
set -euo pipefail
NS=${NS:-lensfn}
IMAGE=${IMAGE:?set IMAGE to the inference-sim image}
kn service apply inference-sim -n "$NS" --image "$IMAGE" --port http1:8080 \
  --label app.kubernetes.io/part-of=lensfn --label networking.knative.dev/visibility=cluster-local \
  --concurrency-limit 0 \
  --scale-metric rps --scale-target 8000 --scale-utilization 75 \
  --scale-min 1 --scale-init 1 --scale-max 20 --scale-window 60s \
  --annotation-revision autoscaling.knative.dev/scale-down-delay=5m \
  --annotation-revision autoscaling.knative.dev/target-burst-capacity=0 \
  --timeout 600 \
  --env-from-field POD_NAME=metadata.name --env-from-field POD_NAMESPACE=metadata.namespace \
  --env-from-field POD_IP=status.podIP --env GOMAXPROCS=2 \
  --readiness-probe http:/health/ready --liveness-probe http:/health \
  --request cpu=2,memory=128Mi --limit memory=256Mi \
  --arg --model --arg fake-model --arg --max-num-seqs --arg 256 --arg --max-model-len --arg 262144 \
  --arg --time-to-first-token --arg 10ms --arg --inter-token-latency --arg 1ms
