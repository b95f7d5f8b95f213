#!/usr/bin/env bash
# Interleaved A/B of the simulator's streaming-timing path, for a before/after figure on a
# shared host: two builds alternate in one sitting (A B A B ...), each run on a fresh server
# with the kit's scenario (d) settings (TTFT 10 ms, ITL 1 ms, 32 tokens, streamed, 256
# connections), server pinned to core 0 and wrk to core 1 as the kit requires.
#
# Usage: tests/bench/simulator/ab_stream.sh OLD_BIN NEW_BIN [OUT_DIR]
# Env:   KIT, ROUNDS (default 5), DURATION (default 12s), PORT (default 18100).
# Then:  python3 tests/bench/simulator/medians.py OUT_DIR/old.txt OUT_DIR/new.txt
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
KIT="${KIT:-$ROOT/../shared/bench/simulator}"
OLD=$1 NEW=$2
OUT_DIR="${3:-$ROOT/tests/bench/simulator/results/ab-$(date -u +%Y%m%dT%H%M%SZ)}"
ROUNDS="${ROUNDS:-5}" PORT="${PORT:-18100}"
export DURATION="${DURATION:-12s}" MODEL="${MODEL:-fake-model}"
mkdir -p "$OUT_DIR"
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install -y wrk)" >&2; exit 1; }
# shellcheck source=/dev/null
source "$KIT/lib.sh"
set +e # the kit's run_wrk waits for a sampler it killed (status 143), as its own scripts allow
cd "$KIT" # run_wrk finds chat.lua here

SPID=""
stop_server() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null; SPID=""; }
trap stop_server EXIT
run_one() { # label binary
  taskset -c "$SERVER_CPU" "$2" --model "$MODEL" --port "$PORT" --seed 1 --max-num-seqs 4096 \
    --time-to-first-token 10ms --inter-token-latency 1ms >"$OUT_DIR/server.log" 2>&1 &
  SPID=$!
  wait_health "$PORT"
  python3 "$KIT/ttft_itl_probe.py" "$PORT" 20 32 "$MODEL" >>"$OUT_DIR/$1.probe.json"
  MAX_TOKENS=32 STREAM=true IGNORE_EOS=true DURATION=3s run_wrk warmup "$PORT" 256 chat.lua "" /dev/null "$SPID" >/dev/null
  MAX_TOKENS=32 STREAM=true IGNORE_EOS=true run_wrk "d_latency_stream_$1_r$r" "$PORT" 256 chat.lua "" "$OUT_DIR/$1.txt" "$SPID"
  echo "load $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT_DIR/$1.txt"
  stop_server
}
echo "host: $(uname -srm), $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg), start $(date -u +%H:%M:%S)" >"$OUT_DIR/host.txt"
for r in $(seq 1 "$ROUNDS"); do
  run_one old "$OLD"
  run_one new "$NEW"
done
echo "end $(date -u +%H:%M:%S), load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT_DIR/host.txt"
echo "results in $OUT_DIR"
