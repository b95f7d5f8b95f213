#!/usr/bin/env bash
# Benchmarks functions/inferencesim with the shared loopback kit
# (../shared/bench/simulator), exactly as its README says: server pinned to
# core 0, wrk (one thread) to core 1, 12 s runs, repeated; figures go to
# $OUT_DIR (default tests/bench/simulator/results/<UTC timestamp>).
#
# Usage: tests/bench/simulator/run.sh [zero|latency|all]   (default all)
# Env:   KIT (path of the kit), REPEAT (default 3), DURATION (default 12s),
#        PORT (default 18000), OUT_DIR.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
KIT="${KIT:-$ROOT/../shared/bench/simulator}"
WHAT="${1:-all}"
PORT="${PORT:-18000}"
export REPEAT="${REPEAT:-3}" DURATION="${DURATION:-12s}" MODEL="${MODEL:-fake-model}"
OUT_DIR="${OUT_DIR:-$ROOT/tests/bench/simulator/results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT_DIR"
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install -y wrk)" >&2; exit 1; }

BIN="$OUT_DIR/inference-sim"
(cd "$ROOT" && go build -o "$BIN" ./functions/inferencesim/cmd/inference-sim)

SPID=""
start_server() { # args: simulator flags
  taskset -c "${SERVER_CPU:-0}" "$BIN" --model "$MODEL" --port "$PORT" --seed 1 "$@" >"$OUT_DIR/server.log" 2>&1 &
  SPID=$!
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$PORT/health" && return 0
    sleep 0.1
  done
  echo "simulator did not start" >&2; cat "$OUT_DIR/server.log" >&2; exit 1
}
stop_server() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; SPID=""; }
trap stop_server EXIT

{ echo "host: $(uname -srm), $(nproc) cores, load before run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "go: $(go version)"; echo "commit: $(git -C "$ROOT" rev-parse --short HEAD)"; } > "$OUT_DIR/host.txt"

if [ "$WHAT" = zero ] || [ "$WHAT" = all ]; then
  # zero latency, random mode, large max-num-seqs (the kit's requirement)
  start_server --max-num-seqs 4096
  "$KIT/run_scenarios.sh" "$PORT" "$OUT_DIR/zero.txt" "$SPID"
  stop_server
fi
if [ "$WHAT" = latency ] || [ "$WHAT" = all ]; then
  # (d): TTFT 10 ms + ITL 1 ms; the latency calculator as it ships (auto:
  # constant because a TTFT is set) ...
  start_server --max-num-seqs 4096 --time-to-first-token 10ms --inter-token-latency 1ms
  python3 "$KIT/ttft_itl_probe.py" "$PORT" 20 32 "$MODEL" | tee "$OUT_DIR/probe.json"
  "$KIT/run_latency_scenario.sh" "$PORT" "$OUT_DIR/latency.txt" "$SPID"
  stop_server
  # ... and the same model through the per-token calculator
  start_server --max-num-seqs 4096 --latency-calculator per-token --prefill-overhead 10ms --inter-token-latency 1ms
  REPEAT=2 "$KIT/run_latency_scenario.sh" "$PORT" "$OUT_DIR/latency_per_token.txt" "$SPID"
  stop_server
fi
python3 "$KIT/summarize.py" "$OUT_DIR"/*.txt | tee "$OUT_DIR/summary.md"
echo "results in $OUT_DIR"
