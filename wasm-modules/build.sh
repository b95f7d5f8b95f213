#!/usr/bin/env bash
# Builds every built-in Lensfn WASM module into OUTDIR with a manifest.json pinning each
# module's sha256, and the example user module(s) into OUTDIR/examples with their own
# manifest (use that directory as LENS_MODULE_DIR).
#
# usage: wasm-modules/build.sh OUTDIR [--no-examples]
set -euo pipefail

usage() { echo "usage: $0 OUTDIR [--no-examples]" >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1
examples=1
if [ $# -ge 2 ]; then
	[ "$2" = "--no-examples" ] || usage
	examples=0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

# name kind package-dir (relative to the repo root)
builtins=(
	"mooncake_trace trace-parser wasm-modules/tracefmt/mooncake/guest"
	"bailian_trace trace-parser wasm-modules/tracefmt/bailian/guest"
	"baseten_trace trace-parser wasm-modules/tracefmt/baseten/guest"
	"burst_gpt_trace trace-parser wasm-modules/tracefmt/burstgpt/guest"
	"weka_public_dataset trace-parser wasm-modules/tracefmt/weka/guest"
	"constant latency-calculator wasm-modules/latency/constant/guest"
	"per-token latency-calculator wasm-modules/latency/pertoken/guest"
)

# write_manifest DIR ENTRIES...: each entry is "name kind file"
write_manifest() {
	local dir=$1; shift
	local tmp="$dir/manifest.json.tmp" sep=""
	{
		printf '{"manifest_version":1,"modules":['
		for entry in "$@"; do
			read -r name kind file <<<"$entry"
			sum=$(sha256sum "$dir/$file" | cut -d' ' -f1)
			printf '%s\n  {"file":"%s","sha256":"%s","kind":"%s","name":"%s"}' "$sep" "$file" "$sum" "$kind" "$name"
			sep=","
		done
		printf '\n]}\n'
	} >"$tmp"
	mv "$tmp" "$dir/manifest.json"
}

cd "$root"

# Skip the whole build when nothing it reads changed since the last one (the Go toolchain, the
# module graph, this script and every source under wasm-modules): a warm `make run` then spends
# no time here. (The guests import nothing of ours outside wasm-modules.)
stamp="$out/.source-sha256"
source_sum=$({
	go version
	sha256sum go.mod go.sum wasm-modules/build.sh
	find wasm-modules -type f \( -name '*.go' -o -name '*.wat' \) -print0 | sort -z | xargs -0 sha256sum
	echo "examples=$examples"
} | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$source_sum" ] && [ -f "$out/manifest.json" ]; then
	echo "build.sh: the WASM modules in $out are up to date"
	exit 0
fi
rm -f "$stamp"

# GOWASM=satconv,signext: wazero runs WebAssembly 2.0 core features by default, so the Go
# compiler may use non-trapping float-to-int conversions and sign-extension instructions
# instead of longer helper sequences.
export GOOS=wasip1 GOARCH=wasm GOWASM=satconv,signext
pkgs=()
for b in "${builtins[@]}"; do
	read -r _ _ pkg <<<"$b"
	pkgs+=("./$pkg")
done

# A cold build is almost all compiling the modules' dependencies (the standard library for
# wasip1, parquet-go and protobuf for the Baseten parser). Concurrent `go build` processes do
# not share work in flight, so seven of them on an empty build cache compiled the standard
# library seven times over (201 CPU s instead of 92). One `go build` of every dependency that is
# not a module's main package compiles each once, into the build cache, with the flags the
# module builds below use (c-shared adds no code generation flag on wasip1), so they find it
# there and only compile their main package and link.
mapfile -t deps < <(go list -deps -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' "${pkgs[@]}")
go build -trimpath "${deps[@]}"

# Then the modules build in parallel: each is its own main package and link (c-shared takes one
# main package per go build).
entries=()
pids=()
for b in "${builtins[@]}"; do
	read -r name kind pkg <<<"$b"
	go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o "$out/$name.wasm.tmp" "./$pkg" &
	pids+=($!)
	entries+=("$name $kind $name.wasm")
done
failed=0
for pid in "${pids[@]}"; do
	wait "$pid" || failed=1
done
if [ "$failed" = 1 ]; then
	rm -f "$out"/*.wasm.tmp
	echo "build.sh: building the WASM modules failed (see above)" >&2
	exit 1
fi
for e in "${entries[@]}"; do
	read -r name _ _ <<<"$e"
	mv "$out/$name.wasm.tmp" "$out/$name.wasm"
done
write_manifest "$out" "${entries[@]}"

if [ "$examples" = 1 ]; then
	if ! command -v wat2wasm >/dev/null 2>&1; then
		echo "build.sh: wat2wasm not found; the example user module is WebAssembly text." >&2
		echo "build.sh: install Debian's wabt (apt-get install wabt) or pass --no-examples." >&2
		exit 1
	fi
	mkdir -p "$out/examples"
	wat2wasm "$root/wasm-modules/examples/simple_csv_trace/simple_csv_trace.wat" \
		-o "$out/examples/simple_csv_trace.wasm"
	write_manifest "$out/examples" "simple_csv_trace trace-parser simple_csv_trace.wasm"
fi
echo "$source_sum" >"$stamp"
