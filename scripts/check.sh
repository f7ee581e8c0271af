#!/usr/bin/env bash
# Everything CI checks, in order: lint, plain build + unit/fuzz replay, ASan+UBSan build + unit/fuzz replay,
# integration tests (real BIND, Knot, etcd, loop devices) against the sanitized binary. Ends with one summary
# line "check: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count_meson() { # adds the Ok:/Fail: counts of the last meson test run
        local ok fail
        ok=$(grep -E '^Ok:' "$log" | tail -1 | awk '{print $2}')
        fail=$(grep -E '^(Fail|Timeout|Unexpected Pass):' "$log" | awk '{s+=$NF} END {print s+0}')
        passed=$((passed + ${ok:-0}))
        failed=$((failed + ${fail:-0}))
}

step() { echo; echo "=== $*"; }

step lint
if make -s lint; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

step "build + unit tests"
if make -s build >/dev/null; then
        meson test -C build --print-errorlogs 2>&1 | tee "$log" | tail -n 12
        count_meson
else
        make build 2>&1 | tail -40
        failed=$((failed + 1))
fi

step "ASan+UBSan build + unit tests"
if make -s build-asan >/dev/null; then
        meson test -C build-asan --print-errorlogs 2>&1 | tee "$log" | tail -n 12
        count_meson
else
        make build-asan 2>&1 | tail -40
        failed=$((failed + 1))
fi

step "Kubernetes 1.20.2 binaries (cached outside the repository; a cold build takes ~16 min)"
if scripts/k8s-binaries.sh >/dev/null; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

step "etcd 3.5.16 binaries (Debian trixie's packages, cached outside the repository; a few seconds)"
if scripts/etcd-binaries.sh >/dev/null; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

step "integration tests (real components, ASan+UBSan binary)"
if [[ -x build-asan/src/cli/protokube ]]; then
        PROTOKUBE_BIN=$PWD/build-asan/src/cli/protokube PROTOKUBE_BUILD=$PWD/build-asan \
                scripts/run-integration.sh 2>&1 | tee "$log" | tail -n 40
        # a failure's long output can push the summary out of that tail: name every failure, and the slowest
        echo "--- failed tests and the slowest ones:"
        grep -E '^(FAILED|ERROR) ' "$log" | cut -c1-240 || true
        sed -n '/slowest 25 durations/,/^$/p' "$log" | head -n 28
        p=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | awk '{print $1}')
        f=$(grep -oE '[0-9]+ (failed|error|errors)' "$log" | tail -1 | awk '{print $1}')
        if ! grep -qE '[0-9]+ passed' "$log"; then f=$((${f:-0} + 1)); fi
        passed=$((passed + ${p:-0}))
        failed=$((failed + ${f:-0}))
else
        failed=$((failed + 1))
fi

echo
echo "check: $passed passed, $failed failed"
((failed == 0))
