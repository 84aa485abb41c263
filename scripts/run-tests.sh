#!/usr/bin/env bash
# run-tests.sh BUILD_DIR — runs every test program and ends with "N passed, N failed".
#   build/tests/<module>_test_*      run once
#   build/tests/<module>_mpitest_*   run under mpirun with P = 1..4 ranks (if MPI was built)
#   tests/py/test_*.py               run with pytest (if present), counted case by case
#   scripts/check-layering.py        one case: module deps, includes, include and call cycles
#   build-fuzz/fuzz_*                libFuzzer targets, FUZZ_SECONDS each (default 5; 0 skips)
set -u
BUILD=${1:-build}
passed=0
failed=0
failed_names=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT

count() {  # count PASS/FAIL lines of a finished program; a crash with no lines counts as 1 fail
    local name=$1 rc=$2
    local p f
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" -ne 0 ]; then
        failed_names+=("$name")
        echo "---- $name (exit $rc)"
        cat "$log"
    else
        echo "ok   $name ($p cases)"
    fi
}

for t in "$BUILD"/tests/*_test_*; do
    [ -x "$t" ] || continue
    timeout 600 "$t" >"$log" 2>&1
    count "$(basename "$t")" $?
done

# the tree's layering (scripts/check-layering.py): module deps, includes, include and call cycles
if command -v python3 >/dev/null 2>&1 && [ -d "$BUILD/obj" ]; then
    if python3 scripts/check-layering.py --objects "$BUILD/obj" >"$log.out" 2>&1; then
        echo "PASS layering" >"$log"
    else
        { cat "$log.out"; echo "FAIL layering"; } >"$log"
    fi
    rm -f "$log.out"
    count "check-layering" 0
fi

MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
if command -v mpirun >/dev/null 2>&1; then
    for t in "$BUILD"/tests/*_mpitest_*; do
        [ -x "$t" ] || continue
        for np in 1 2 3 4; do
            timeout 600 "${MPIRUN[@]}" -np "$np" "$t" >"$log" 2>&1
            rc=$?
            # every rank prints PASS/FAIL; count rank 0's lines only (they carry a "[0]" tag)
            sed -n 's/^\[0\] //p' "$log" > "$log.r0"
            grep -v '^\[' "$log" >> "$log.r0" || true
            mv "$log.r0" "$log"
            count "$(basename "$t") -np $np" $rc
        done
    done
fi

# the libFuzzer targets (fuzz/): built with clang, each run for FUZZ_SECONDS (default 5) from a
# scratch corpus seeded with the kept crash inputs, so a parser crash fails the suite
if command -v clang >/dev/null 2>&1 && [ "${FUZZ_SECONDS:-5}" != 0 ]; then
    if make -s fuzz >"$log" 2>&1; then
        for f in build-fuzz/fuzz_*; do
            [ -x "$f" ] || continue
            n=$(basename "$f" .c)
            corpus=$(mktemp -d)
            cp tests/*/fuzz-crashes/*.json "$corpus"/ 2>/dev/null || true
            # the HLO reader starts from the real XLA dumps and its kept crashes
            if [ "$n" = fuzz_hlo ]; then
                cp tests/fixtures/hlo/*.hlo tests/aoizora/fuzz-crashes/*.hlo "$corpus"/ 2>/dev/null || true
            fi
            if "$f" -max_total_time="${FUZZ_SECONDS:-5}" -artifact_prefix="$corpus/" \
                "$corpus" >"$log.out" 2>&1; then
                echo "PASS $n" >"$log"
                rm -rf "$corpus"
            else
                { tail -40 "$log.out"; echo "FAIL $n (crash input kept in $corpus)"; } >"$log"
            fi
            rm -f "$log.out"
            count "$n (${FUZZ_SECONDS:-5} s)" 0
        done
    else
        echo "FAIL fuzz build" >>"$log"
        count "make fuzz" 1
    fi
fi

if ls tests/py/test_*.py >/dev/null 2>&1 && python3 -c 'import pytest' 2>/dev/null; then
    ZG_BUILD="$BUILD" python3 -m pytest -q tests/py >"$log" 2>&1
    rc=$?
    p=$(grep -oE '[0-9]+ passed' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
    f=$(grep -oE '[0-9]+ (failed|error)' "$log" | awk '{s+=$1} END {print s+0}')
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + ${p:-0}))
    failed=$((failed + f))
    if [ "$f" -ne 0 ]; then failed_names+=("pytest"); cat "$log"; else echo "ok   pytest tests/py ($p cases)"; fi
fi

if [ ${#failed_names[@]} -ne 0 ]; then echo "failed: ${failed_names[*]}"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
