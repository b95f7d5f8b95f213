#!/usr/bin/env bash
# The platform objects: namespace, Redis, the shared volume, the Broker and its dead-letter sink.
# kn has no verbs for StatefulSets, PVCs or RedisStreamSinks, so those are applied with kubectl.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
kubectl apply -f namespace.yaml -f redis.yaml -f data-volume.yaml
# The key that seals endpoint API keys in Redis; created once, never committed.
kubectl -n "$NS" get secret lensfn-secrets >/dev/null 2>&1 ||
  kubectl -n "$NS" create secret generic lensfn-secrets --from-literal=secret-key="$(openssl rand -base64 32)"
kubectl apply -f broker.yaml # RedisStreamSink needs eventing-redis installed
kn broker create lensfn -n "$NS" --class MTChannelBasedBroker \
  --dl-sink "RedisStreamSink:sinks.knative.dev/v1alpha1:dead-letters" \
  --retry 5 --backoff-policy exponential --backoff-delay PT0.5S --timeout PT60S 2>/dev/null ||
  echo "broker lensfn exists (applied from broker.yaml)"
kn source binding create lensfn-functions -n "$NS" \
  --subject "Service:serving.knative.dev/v1:lensfn.dev/emits-events=true" --sink broker:lensfn 2>/dev/null ||
  echo "sink binding lensfn-functions exists (applied from broker.yaml)"
