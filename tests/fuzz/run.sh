#!/usr/bin/env bash
# make fuzz: discovers every Fuzz* target of the module (go test -list) and runs each for
# FUZZTIME (default 10s), one at a time, so a target added anywhere is fuzzed without being
# listed here. FUZZ_PKGS narrows the packages (default ./...). A failure keeps going and the
# script exits non-zero at the end, naming the targets that failed (their inputs are under
# each package's testdata/fuzz).
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
failed=()
count=0
for pkg in $($GO list ${FUZZ_PKGS:-./...}); do
  dir=$($GO list -f '{{.Dir}}' "$pkg")
  ls "$dir"/*_test.go >/dev/null 2>&1 || continue
  grep -q '^func Fuzz' "$dir"/*_test.go || continue
  for target in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    count=$((count + 1))
    echo "fuzz: $pkg $target for $FUZZTIME"
    if ! $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"; then
      failed+=("$pkg $target")
    fi
  done
done
echo "fuzz: ran $count targets"
if ((${#failed[@]})); then
  printf 'fuzz: FAILED %s\n' "${failed[@]}"
  exit 1
fi
