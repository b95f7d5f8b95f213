#!/usr/bin/env bash
# Times `make run` to its first answer, as BENCHMARKS.md ("First start") reports it: cold (an
# empty Go build cache in a temp dir, no bin/, a new data dir; the module cache as it is) and
# warm (the same again with nothing changed). Prints the phases, the load average and the
# CPU seconds (user+sys) of the build phase, which a loaded host inflates far less than wall time.
# After the first answer it times the Baseten parser's background build (the "built WASM
# module" line; a cold run only) and every module ready ("WASM modules ready").
#
# usage: tests/bench/first-start.sh   (run from the repository root; uses free loopback ports)
set -euo pipefail
cd "$(dirname "$0")/../.."

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

gocache=$(mktemp -d)
data=$(mktemp -d)
trap 'rm -rf "$gocache" "$data"; [ -n "${pid:-}" ] && kill -INT "$pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
export GOCACHE=$gocache GOFLAGS=-modcacherw LENS_DATA_DIR=$data
addr=127.0.0.1:$(free_port)
export LENS_ADDR=$addr LENS_SIM_ADDR=127.0.0.1:$(free_port)

run_once() { # label
	local label=$1 t0 t2
	echo "== $label (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
	t0=$(now)
	# As make run builds: the functions and the WASM modules but the Baseten parser side by side.
	/usr/bin/time -f '%U %S' -o "$data/build.cpu" make -s --no-print-directory -j2 build wasm-first >/dev/null
	echo "  build+wasm: $(since "$t0") s, $(awk '{ printf "%.1f", $1 + $2 }' "$data/build.cpu") CPU s (make -j2 build wasm-first, as make run)"
	t2=$(now)
	bin/lensfn-local >"$data/stdout.log" 2>"$data/stderr.log" &
	pid=$!
	until curl -sf "http://$addr/api/simulation/backends" >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || { echo "lensfn-local exited:"; tail -20 "$data/stderr.log"; exit 1; }
		sleep 0.2
	done
	echo "  stack:  $(since "$t2") s to the first answer"
	# A first start builds the Baseten parser and compiles the WASM modules in the background
	# after that: time them too.
	local built=0
	until grep -q '^WASM modules ready' "$data/stdout.log" || { grep -q '^Ctrl-C' "$data/stdout.log" && ! grep -q '^  Modules:' "$data/stdout.log"; }; do
		kill -0 "$pid" 2>/dev/null || { echo "lensfn-local exited:"; tail -20 "$data/stderr.log"; exit 1; }
		if grep -q '^WASM modules: .* failed' "$data/stdout.log"; then
			echo "a WASM module failed to build:"; cat "$data/stdout.log"; exit 1
		fi
		if [ "$built" = 0 ] && grep -q '^built WASM module' "$data/stdout.log"; then
			echo "  baseten: $(since "$t2") s to the Baseten parser built in the background ($(grep '^built WASM module' "$data/stdout.log"))"
			built=1
		fi
		sleep 0.2
	done
	if [ "$built" = 0 ] && grep -q '^built WASM module' "$data/stdout.log"; then
		echo "  baseten: ($(grep '^built WASM module' "$data/stdout.log"))"
	fi
	echo "  modules: $(since "$t2") s to every route answering (WASM modules built and compiled)"
	echo "  total:  $(since "$t0") s"
	kill -INT "$pid"
	wait "$pid" || true
	pid=
}

rm -rf bin
run_once cold
run_once warm
