#!/usr/bin/env bash
# The platform objects: the Knative Serving features the functions need, namespace, Redis, the
# shared volume, the Broker with its dead-letter sink and the SinkBinding. kn has no verbs for
# ConfigMaps, StatefulSets, PVCs or RedisStreamSinks, and broker.yaml holds the Broker's full
# delivery spec, so these are the manifests themselves, applied with kubectl: the same files
# tests/knative validates.
set -euo pipefail
cd "$(dirname "$0")/.."
NS=${NS:-lensfn}
# Server-side apply sets only our two keys of Knative's config-features and keeps the rest.
kubectl apply --server-side --field-manager=lensfn -f config-features.yaml
kubectl apply -f namespace.yaml
# The key that seals endpoint API keys in Redis and Redis's password; created once, never committed.
kubectl -n "$NS" get secret lensfn-secrets >/dev/null 2>&1 ||
  kubectl -n "$NS" create secret generic lensfn-secrets --from-literal=secret-key="$(openssl rand -base64 32)"
kubectl -n "$NS" get secret lensfn-redis >/dev/null 2>&1 ||
  kubectl -n "$NS" create secret generic lensfn-redis --from-literal=password="$(openssl rand -hex 24)"
# The simulator's /admin/* bearer token (LENS_SIM_ADMIN_TOKEN of inference-sim.yaml); read it with
# kubectl -n lensfn get secret lensfn-sim-admin -o jsonpath='{.data.token}' | base64 -d
kubectl -n "$NS" get secret lensfn-sim-admin >/dev/null 2>&1 ||
  kubectl -n "$NS" create secret generic lensfn-sim-admin --from-literal=token="$(openssl rand -hex 32)"
# The bootstrap admin token (every scope): only its SHA-256 is kept; the token is printed once.
if ! kubectl -n "$NS" get secret lensfn-bootstrap-token >/dev/null 2>&1; then
  TOKEN="lens_bootstrap_$(openssl rand -hex 32)"
  kubectl -n "$NS" create secret generic lensfn-bootstrap-token \
    --from-literal=sha256="$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)"
  echo "Bootstrap admin token (shown once; keep it in a password manager): $TOKEN"
fi
kubectl apply -f redis.yaml -f data-volume.yaml
kubectl apply -f broker.yaml # RedisStreamSink needs eventing-redis installed
