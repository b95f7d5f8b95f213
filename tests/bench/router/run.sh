#!/usr/bin/env bash
# The inference router's added latency, as BENCHMARKS.md ("Inference router") quotes it:
# 1. the in-memory Go benchmark of the router's own work per request, by profile;
# 2. the open-loop Go benchmark: RATE req/s (default 10000) for SECONDS_PER_RUN against each
#    upstream of UPSTREAMS directly, then through a router process in front of it (the p50
#    difference is the issue's figure). The upstreams: a zero-latency simulator process, and the
#    lean responder (an epoll loop in the benchmark answering the bytes the simulator answered,
#    at a fraction of its CPU: the router's hop measured apart from the simulator's own work, as
#    proxy benchmarks do). By default (PIN=0, the figure's form: nobody pins a router in a
#    deployment) all the processes share both cores; with PIN=1 the upstreams run on core 0 and
#    the routers on core 1, the benchmark's lean sender unpinned (a diagnostic: one core each
#    queues sooner than two shared). Each leg's line gives the achieved rate, p50/p90/p99, CPU per request
#    of the sender, the upstream and the router, and the router's upstream connections;
# 3. wrk (closed loop, one thread, CONNS connections) against the simulator and a router in front
#    of it, pinned the same way, wrk unpinned; the router's CPU per request after the routed pass.
# The last lines repeat the added p50/p99 per upstream (the figure the target needs).
# Usage: tests/bench/router/run.sh    Env: RATE, SECONDS_PER_RUN, COUNT (runs of 2, default 3),
#        UPSTREAMS (default simulator,lean), PIN, PROFILE (default random), CONNS (default 32),
#        DURATION (wrk, default 10s; WRK=0 skips it), PORT (default 18100),
#        ROUTER_ARGS / ROUTER_ENV (extra flags / NAME=value for the routers of 2).
# The last lines are the added p50/p99 of every run and their medians per upstream (the figure).
# The quiet sitting's short form (about two minutes): COUNT=3 WRK=0 tests/bench/router/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
RATE="${RATE:-10000}" SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}" PROFILE="${PROFILE:-random}" COUNT="${COUNT:-3}"
UPSTREAMS="${UPSTREAMS:-simulator,lean}" WRK="${WRK:-1}"
CONNS="${CONNS:-32}" DURATION="${DURATION:-10s}" PORT="${PORT:-18100}"
DIR=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$DIR"; }
trap cleanup EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(go version), commit $(git rev-parse --short HEAD)"

go build -o "$DIR/inference-sim" ./functions/inferencesim/cmd/inference-sim
go build -o "$DIR/inference-router" ./functions/inferencerouter/cmd/inference-router

go test -run '^$' -bench ServeHTTP -benchtime 1s -count 3 ./functions/inferencerouter/
PIN="${PIN:-0}"
[ "$PIN" = 0 ] || command -v taskset >/dev/null || { echo "taskset is missing (util-linux): the open loop runs unpinned" >&2; PIN=0; }
LENS_SIM_BIN="$DIR/inference-sim" LENS_ROUTER_BIN="$DIR/inference-router" LENS_ROUTER_PIN="$PIN" \
  LENS_ROUTER_RATE="$RATE" LENS_ROUTER_SECONDS="$SECONDS_PER_RUN" LENS_ROUTER_PROFILE="$PROFILE" \
  LENS_ROUTER_UPSTREAMS="$UPSTREAMS" LENS_ROUTER_ARGS="${ROUTER_ARGS:-}" LENS_ROUTER_PROCESS_ENV="${ROUTER_ENV:-}" \
  go test -run '^$' -bench AddedLatency -benchtime 1x -count "$COUNT" ./tests/bench/router/ | tee "$DIR/open-loop.txt"
summary() {
  echo "== added latency at $RATE req/s (routed minus direct), pinned=$PIN, per run:"
  sed -n 's/.*added_latency_test.go:[0-9]*: \([a-z]*: added latency.*\) (target.*/  \1/p' "$DIR/open-loop.txt"
  # the figure: per upstream, the median over the runs of each run's added p50 (and p99)
  sed -n 's/.*added_latency_test.go:[0-9]*: \([a-z]*\): added latency (routed minus direct) p50 \(-*[0-9]*\) us, p99 \(-*[0-9]*\) us.*/\1 \2 \3/p' \
    "$DIR/open-loop.txt" >"$DIR/added.txt"
  median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
  for name in $(cut -d' ' -f1 "$DIR/added.txt" | sort -u); do
    echo "  $name: median over $(grep -c "^$name " "$DIR/added.txt") runs: added p50 $(awk -v n="$name" '$1 == n { print $2 }' "$DIR/added.txt" | median) us," \
      "p99 $(awk -v n="$name" '$1 == n { print $3 }' "$DIR/added.txt" | median) us (target: p50 <= 100 us)"
  done
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
}
[ "$WRK" = 0 ] && { summary; exit 0; }

command -v wrk >/dev/null || { echo "wrk is missing (apt-get install -y wrk): skipping the wrk pass" >&2; summary; exit 0; }
wait_up() { for _ in $(seq 1 100); do curl -sf -o /dev/null "$1/health" && return 0; sleep 0.1; done; echo "$1 did not start" >&2; exit 1; }
# exec: the background job is the server itself, so cleanup's kill reaches it
pin() { if [ "$PIN" = 1 ]; then exec taskset -c "$@"; else shift; exec "$@"; fi; }
pin 0 "$DIR/inference-sim" --model fake-model --port "$PORT" --max-num-seqs 4096 --seed 1 >"$DIR/sim.log" 2>&1 &
PIDS+=($!)
pin 1 "$DIR/inference-router" --host 127.0.0.1 --port $((PORT + 1)) --profile "$PROFILE" --replicas "http://127.0.0.1:$PORT" \
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
summary
