#!/usr/bin/env bash
# The inference router's added latency, as BENCHMARKS.md ("Inference router") quotes it:
# 1. the in-memory Go benchmark of the router's own work per request, by profile;
# 2. the open-loop Go benchmark: RATE req/s (default 10000) for SECONDS_PER_RUN against a
#    zero-latency simulator process directly, then through a router process in front of it (the
#    p50 difference is the issue's figure), simulator on core 0, router on core 1 (taskset), the
#    benchmark's own lean sender unpinned; each leg's line gives the achieved rate, p50/p90/p99,
#    and CPU per request of the sender, the simulator and the router;
# 3. wrk (closed loop, one thread, CONNS connections) against the same pair, pinned the same way,
#    wrk unpinned; the router's CPU per request after the routed pass.
# Usage: tests/bench/router/run.sh    Env: RATE, SECONDS_PER_RUN, PROFILE (default random),
#        CONNS (default 32), DURATION (wrk, default 10s), PORT (default 18100).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
RATE="${RATE:-10000}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}" PROFILE="${PROFILE:-random}"
CONNS="${CONNS:-32}" DURATION="${DURATION:-10s}" PORT="${PORT:-18100}"
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(go version), commit $(git rev-parse --short HEAD)"

go build -o "$DIR/inference-sim" ./functions/inference-sim/cmd/inference-sim
go build -o "$DIR/inference-router" ./functions/inference-router/cmd/inference-router

go test -run '^$' -bench ServeHTTP -benchtime 1s -count 3 ./functions/inference-router/
PIN=1
command -v taskset >/dev/null || { echo "taskset is missing (util-linux): the open loop runs unpinned" >&2; PIN=0; }
LENS_SIM_BIN="$DIR/inference-sim" LENS_ROUTER_BIN="$DIR/inference-router" LENS_ROUTER_PIN="$PIN" \
  LENS_ROUTER_RATE="$RATE" LENS_ROUTER_SECONDS="$SECONDS_PER_RUN" LENS_ROUTER_PROFILE="$PROFILE" \
  go test -run '^$' -bench AddedLatency -benchtime 1x -count 3 ./tests/bench/router/

command -v wrk >/dev/null || { echo "wrk is missing (apt-get install -y wrk): skipping the wrk pass" >&2; exit 0; }
wait_up() { for _ in $(seq 1 100); do curl -sf -o /dev/null "$1/health" && return 0; sleep 0.1; done; echo "$1 did not start" >&2; exit 1; }
taskset -c 0 "$DIR/inference-sim" --model fake-model --port "$PORT" --max-num-seqs 4096 --seed 1 >"$DIR/sim.log" 2>&1 &
PIDS+=($!)
taskset -c 1 "$DIR/inference-router" --host 127.0.0.1 --port $((PORT + 1)) --profile "$PROFILE" --replicas "http://127.0.0.1:$PORT" \
  --scrape-interval 0 --seed 1 >"$DIR/router.log" 2>&1 &
ROUTER_PID=$!
PIDS+=($ROUTER_PID)
wait_up "http://127.0.0.1:$PORT"
wait_up "http://127.0.0.1:$((PORT + 1))"
cat >"$DIR/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"fake-model","max_tokens":1,"messages":[{"role":"user","content":"Hello, how are you today?"}]}'
LUA
# CPU seconds (utime + stime) a process has used so far.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat"; }
for target in "direct http://127.0.0.1:$PORT" "routed http://127.0.0.1:$((PORT + 1))"; do
  set -- $target
  echo "== wrk $1 ($PROFILE): -t1 -c$CONNS -d$DURATION"
  before=$(cpu_seconds "$ROUTER_PID")
  out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$DIR/post.lua" "$2/v1/chat/completions")
  echo "$out" | grep -E 'Latency|50%|90%|99%|Requests/sec|Non-2xx|Socket'
  if [ "$1" = routed ]; then
    # the router's own CPU per request end to end (server, client, syscalls): its ceiling on one core
    awk -v a="$before" -v b="$(cpu_seconds "$ROUTER_PID")" -v n="$(echo "$out" | awk '/requests in/ {print $1}')" \
      'BEGIN { if (n > 0) printf "  router CPU per request: %.1f us (%.2f s over %d requests)\n", (b - a) * 1e6 / n, b - a, n }'
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
