#!/usr/bin/env bash
# make bench: every benchmark whose figures BENCHMARKS.md quotes, with the same commands.
# Usage: tests/bench/run.sh [state|wasm|replay|simulator|router|simrss|evalrun|engine ...]   (default: all of them)
# Takes tens of minutes; run it on an otherwise idle machine and compare builds in one sitting.
set -euo pipefail
cd "$(dirname "$0")/../.."
suites=("$@")
((${#suites[@]})) || suites=(state wasm replay simulator router simrss evalrun engine)

bench_state() {
  command -v redis-server >/dev/null || { echo "bench state: needs redis-server (apt-get install redis-server)" >&2; return 1; }
  local dir port=6399
  dir=$(mktemp -d)
  redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --save '' --appendonly no --daemonize yes --pidfile "$dir/pid"
  trap 'kill "$(cat "$dir/pid")" 2>/dev/null; rm -rf "$dir"' RETURN
  sleep 0.3
  REDIS_URL=redis://127.0.0.1:$port/0 go test -run '^$' -bench BenchmarkList -benchtime 300x ./runtime/state/redisstore/
}

bench_wasm() {
  go test -run XXX -bench 'Mooncake|HostLoad' -benchtime 30x -count 5 ./tests/conformance/
  go test -run XXX -bench 'Schedule' -benchtime 20000x -count 5 ./tests/conformance/
  # The native-to-guest ratio of the Mooncake core and of the loops it is made of: the same
  # benchmarks natively, then as wasip1 test binaries run by the wazero CLI.
  GOFLAGS= go install github.com/tetratelabs/wazero/cmd/wazero@v1.12.0
  local pkgs=(./wasm-modules/tracefmt/jsonscan/ ./wasm-modules/tracefmt/mooncake/)
  go test -run XXX -bench 'Floor|RealConv' -count 3 "${pkgs[@]}"
  PATH=$PATH:$(go env GOPATH)/bin:$(go env GOROOT)/lib/wasm GOWASIRUNTIME=wazero GOOS=wasip1 GOARCH=wasm \
    GOWASM=satconv,signext go test -run XXX -bench 'Floor|RealConv' -count 3 "${pkgs[@]}"
}

bench_replay() {
  go build -o /tmp/lensfn-bench-sim ./functions/inferencesim/cmd/inference-sim
  go test -run '^$' -bench SchedulingFloor -benchtime 1x ./tests/bench/replay/
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench ReplayConstantRate -benchtime 1x -count 5 ./tests/bench/replay/
  for n in 100000 1000000 3000000; do
    LENS_REPLAY_MEMORY_REQUESTS=$n go test -run '^$' -bench 'ReplayMemory/spool' -benchtime 1x -count 2 ./tests/bench/replay/
  done
  go test -run '^$' -bench 'ReplayMemory/slice' -benchtime 1x -count 2 ./tests/bench/replay/
}

# The vLLM engine model: its accuracy against the real runs (make fidelity, with the
# leave-one-model-out fits), the predictor on the largest shipped experiment, the engine's
# bookkeeping per step, and 16 real-time replicas in one simulator process.
bench_engine() {
  go run ./tests/fidelity/cmd/fidelity -seeds 1,2,3 -lomo 150
  go test -run '^$' -bench PredictLargestExperiment -benchtime 5x -count 5 ./runtime/predict/
  go test -run '^$' -bench StepAtBatch128 -benchtime 20000x -count 5 ./runtime/enginemodel/
  go build -o /tmp/lensfn-bench-sim ./functions/inferencesim/cmd/inference-sim
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench RealTimeReplicas -benchtime 1x -count 3 ./tests/bench/enginemodel/
}

bench_simulator() {
  tests/bench/simulator/run.sh all
}

bench_router() {
  tests/bench/router/run.sh
}

# Peak RSS of a fresh simulator process under each hostile request of issue 9 (not timing-sensitive).
bench_simrss() {
  go build -o /tmp/lensfn-bench-sim ./functions/inferencesim/cmd/inference-sim
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench HostileRequestRSS -benchtime 1x ./tests/bench/simrss/
}

# Issue 12's benchmark-runner figures: a 4,096-wide closed loop (the engine, streamed and not,
# beside k6 and vegeta doing the non-streamed work), a 5,000 req/s Poisson stage, and the
# benchmark-runner function on the local stack (100,000-request runs: peak RSS; orchestration
# overhead). k6 and vegeta are installed into $GOPATH/bin when missing.
bench_evalrun() {
  go build -o /tmp/lensfn-bench-sim ./functions/inferencesim/cmd/inference-sim
  local gobin
  gobin=$(go env GOPATH)/bin
  [[ -x $gobin/k6 ]] || command -v k6 >/dev/null || GOFLAGS= go install go.k6.io/k6@v1.8.1
  [[ -x $gobin/vegeta ]] || command -v vegeta >/dev/null || GOFLAGS= go install github.com/tsenart/vegeta/v12@v12.13.0
  ulimit -n "$(ulimit -Hn)"   # 4,096 connections each side
  local pkg=./tests/bench/evalrun/
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench 'ClosedLoop' -benchtime 1x -count 3 -timeout 60m "$pkg"
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench 'PoissonStage' -benchtime 1x -count 3 -timeout 30m "$pkg"
  LENS_SIM_BIN=/tmp/lensfn-bench-sim go test -run '^$' -bench 'RunnerStack' -benchtime 1x -count 2 -timeout 60m "$pkg"
}

for s in "${suites[@]}"; do
  echo "== bench $s"
  "bench_$s"
done
