#!/usr/bin/env bash
# Builds the built-in Lensfn WASM modules into OUTDIR with a manifest.json pinning each
# module's sha256, and the example user module(s) into OUTDIR/examples with their own
# manifest (use that directory as LENS_MODULE_DIR).
#
# usage: wasm-modules/build.sh OUTDIR [--no-examples] [--defer NAME]... [--only NAME]...
#
#   (no option)   every built-in and the example (`make wasm`, `make kodata`: all eight at once)
#   --defer NAME  every built-in but NAME: the manifest lists NAME under "pending" (a build still
#                 to come; the functions answer 503 naming it) unless NAME is already up to date
#                 (`make run` builds the Baseten parser behind the first answer this way)
#   --only NAME   NAME alone (no example), added to the manifest; what lensfn-local runs in the
#                 background for a pending module
#
# Each module is rebuilt only when something it may read changed since it was last built (its
# stamp: the Go toolchain, the module graph, this script and every source under wasm-modules),
# so a warm `make run` spends no time here. The manifest always lists every built-in: under
# "modules" the ones built from the current sources, under "pending" the others (with "error"
# when this run failed to build it). It is replaced atomically (rename) after the modules it
# lists are in place, and only when its content changes; runs on one OUTDIR take turns (flock).
set -euo pipefail

usage() { echo "usage: $0 OUTDIR [--no-examples] [--defer NAME]... [--only NAME]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1
shift
examples=1
defer=()
only=()
while [ $# -gt 0 ]; do
	case $1 in
	--no-examples) examples=0 ;;
	--defer) [ $# -ge 2 ] || usage; defer+=("$2"); shift ;;
	--only) [ $# -ge 2 ] || usage; only+=("$2"); shift ;;
	*) usage ;;
	esac
	shift
done
if [ ${#defer[@]} -gt 0 ] && [ ${#only[@]} -gt 0 ]; then
	echo "build.sh: --defer and --only do not go together" >&2
	exit 2
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
	"stepcost latency-calculator wasm-modules/stepcost/guest"
)

is_builtin() { local b; for b in "${builtins[@]}"; do [ "${b%% *}" = "$1" ] && return 0; done; return 1; }
for name in "${defer[@]}" "${only[@]}"; do
	is_builtin "$name" || { echo "build.sh: no built-in module named $name" >&2; exit 2; }
done
listed() { # NAME LIST...: is NAME in LIST?
	local name=$1 n; shift
	for n in "$@"; do [ "$n" = "$name" ] && return 0; done
	return 1
}

# write_manifest DIR MODULES PENDING: MODULES are "name kind file" lines, PENDING "name kind
# error" lines (error optional, the rest of the line). Replaces DIR/manifest.json only when the
# content changes, so the functions watching it see one change per build.
write_manifest() {
	local dir=$1 modules=$2 pending=$3 tmp="$1/manifest.json.tmp" sep="" name kind file sum rest
	{
		printf '{"manifest_version":1,"modules":['
		while read -r name kind file; do
			[ -n "$name" ] || continue
			sum=$(sha256sum "$dir/$file" | cut -d' ' -f1)
			printf '%s\n  {"file":"%s","sha256":"%s","kind":"%s","name":"%s"}' "$sep" "$file" "$sum" "$kind" "$name"
			sep=","
		done <<<"$modules"
		if [ -n "$pending" ]; then
			printf '\n],"pending":['
			sep=""
			while read -r name kind rest; do
				[ -n "$name" ] || continue
				printf '%s\n  {"name":"%s","kind":"%s"' "$sep" "$name" "$kind"
				[ -z "$rest" ] || printf ',"error":"%s"' "$rest"
				printf '}'
				sep=","
			done <<<"$pending"
		fi
		printf '\n]}\n'
	} >"$tmp"
	if cmp -s "$tmp" "$dir/manifest.json"; then
		rm -f "$tmp"
	else
		mv "$tmp" "$dir/manifest.json"
	fi
}

cd "$root"

# One build at a time per OUTDIR (make run's background build and a `make wasm` in another
# terminal write the same files).
exec 9>"$out/.build.lock"
flock 9
# A stopped build (Ctrl-C on make run stops its background build) leaves no partial output.
trap 'rm -f "$out"/*.wasm.tmp "$out"/manifest.json.tmp' EXIT

# What every module may read (the guests import nothing of ours outside wasm-modules).
source_sum=$({
	go version
	sha256sum go.mod go.sum wasm-modules/build.sh
	find wasm-modules -type f \( -name '*.go' -o -name '*.wat' \) -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -d' ' -f1)
stamps="$out/.stamps"
mkdir -p "$stamps"
rm -f "$out/.source-sha256" # the one stamp of the whole build before per-module stamps
# current NAME [FILE]: NAME's stamp is this source state and its file (default OUTDIR/NAME.wasm) exists.
current() { [ -f "$stamps/$1" ] && [ "$(cat "$stamps/$1")" = "$source_sum" ] && [ -f "${2:-$out/$1.wasm}" ]; }

# The modules this run builds: the requested ones that are not up to date.
todo=()
for b in "${builtins[@]}"; do
	read -r name _ _ <<<"$b"
	if [ ${#only[@]} -gt 0 ]; then listed "$name" "${only[@]}" || continue; fi
	if [ ${#defer[@]} -gt 0 ] && listed "$name" "${defer[@]}"; then continue; fi
	current "$name" || todo+=("$b")
done
[ ${#only[@]} -eq 0 ] || examples=0

failed=()
if [ ${#todo[@]} -gt 0 ]; then
	# GOWASM=satconv,signext: wazero runs WebAssembly 2.0 core features by default, so the Go
	# compiler may use non-trapping float-to-int conversions and sign-extension instructions
	# instead of longer helper sequences.
	export GOOS=wasip1 GOARCH=wasm GOWASM=satconv,signext
	pkgs=()
	for b in "${todo[@]}"; do
		read -r _ _ pkg <<<"$b"
		pkgs+=("./$pkg")
	done
	# A cold build is almost all compiling the modules' dependencies (the standard library for
	# wasip1, parquet-go and protobuf for the Baseten parser). Concurrent `go build` processes
	# do not share work in flight, so seven of them on an empty build cache compiled the
	# standard library seven times over (201 CPU s instead of 92). One `go build` of every
	# dependency that is not a module's main package compiles each once, into the build cache,
	# with the flags the module builds below use (c-shared adds no code generation flag on
	# wasip1), so they find it there and only compile their main package and link.
	mapfile -t deps < <(go list -deps -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' "${pkgs[@]}")
	go build -trimpath "${deps[@]}" || true # a failure shows again, per module, below

	# Then the modules build in parallel: each is its own main package and link (c-shared
	# takes one main package per go build). Each lands under its name only when it built.
	pids=()
	for b in "${todo[@]}"; do
		read -r name _ pkg <<<"$b"
		rm -f "$stamps/$name"
		go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o "$out/$name.wasm.tmp" "./$pkg" &
		pids+=($!)
	done
	for i in "${!todo[@]}"; do
		read -r name _ _ <<<"${todo[$i]}"
		if wait "${pids[$i]}"; then
			mv "$out/$name.wasm.tmp" "$out/$name.wasm"
			echo "$source_sum" >"$stamps/$name"
		else
			rm -f "$out/$name.wasm.tmp"
			failed+=("$name")
		fi
	done
fi

modules="" pending=""
for b in "${builtins[@]}"; do
	read -r name kind _ <<<"$b"
	if current "$name"; then
		modules+="$name $kind $name.wasm"$'\n'
	elif [ ${#only[@]} -gt 0 ] && ! listed "$name" "${only[@]}" && [ -f "$out/$name.wasm" ]; then
		# Built earlier, by the run that deferred this one, from sources that changed since
		# (an edit or a checkout during the background build): --only was not asked to build
		# it, so it stays as built (its sha256 from its file) rather than turning pending with
		# no build to come; `make wasm` rebuilds it.
		modules+="$name $kind $name.wasm"$'\n'
	elif [ ${#failed[@]} -gt 0 ] && listed "$name" "${failed[@]}"; then
		pending+="$name $kind go build failed; see the output of wasm-modules/build.sh (make run prints it)"$'\n'
	else
		pending+="$name $kind"$'\n'
	fi
done
write_manifest "$out" "$modules" "$pending"
if [ ${#failed[@]} -gt 0 ]; then
	echo "build.sh: building the WASM module(s) ${failed[*]} failed (see above)" >&2
	exit 1
fi

built=${#todo[@]}
if [ "$examples" = 1 ] && ! current examples "$out/examples/manifest.json"; then
	if ! command -v wat2wasm >/dev/null 2>&1; then
		echo "build.sh: wat2wasm not found; the example user module is WebAssembly text." >&2
		echo "build.sh: install Debian's wabt (apt-get install wabt) or pass --no-examples." >&2
		exit 1
	fi
	mkdir -p "$out/examples"
	rm -f "$stamps/examples"
	wat2wasm "$root/wasm-modules/examples/simple_csv_trace/simple_csv_trace.wat" \
		-o "$out/examples/simple_csv_trace.wasm.tmp"
	mv "$out/examples/simple_csv_trace.wasm.tmp" "$out/examples/simple_csv_trace.wasm"
	write_manifest "$out/examples" "simple_csv_trace trace-parser simple_csv_trace.wasm" ""
	echo "$source_sum" >"$stamps/examples"
	built=$((built + 1))
fi
if [ "$built" = 0 ]; then
	echo "build.sh: the WASM modules in $out are up to date"
fi
