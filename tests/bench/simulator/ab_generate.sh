#!/usr/bin/env bash
# Alternating A/B of two simulator binaries on one generation scenario (chat, non-streamed,
# ignore_eos, 256 connections): a fresh process per run, pinned to core 0, wrk to core 1.
# Usage: tests/bench/simulator/ab_generate.sh BIN_A BIN_B [simulator flags...]
# Env: MAX_TOKENS (default 16), ROUNDS (default 3), DURATION (default 8s), KIT.
set -euo pipefail
KIT=${KIT:-$(cd "$(dirname "$0")/../../.." && pwd)/../shared/bench/simulator}
a=$1 b=$2
shift 2
for round in $(seq 1 "${ROUNDS:-3}"); do
  for bin in "$a" "$b"; do
    taskset -c 0 "$bin" --model fake-model --port 18100 --seed 1 --max-num-seqs 4096 "$@" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do curl -sf -o /dev/null http://127.0.0.1:18100/health && break; sleep 0.1; done
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$(MAX_TOKENS=${MAX_TOKENS:-16} STREAM=false IGNORE_EOS=true MODEL=fake-model taskset -c 1 wrk -t1 -c256 -d"${DURATION:-8s}" -s "$KIT/chat.lua" http://127.0.0.1:18100 2>&1 | grep Requests/sec)
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    echo "$round $bin $out server_cpu_ticks=$((t1-t0))"
    kill $pid; wait $pid 2>/dev/null
  done
done
