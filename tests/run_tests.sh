#!/bin/sh
# Run each CMocka test program, then the Python suites when PYTEST names
# the pytest command for them (make test sets it); print the totals of
# each, and one closing line with the sum.  Any failure fails the run.
# The real model files first: without them, one line says so.
sh "$(dirname "$0")/check_shared.sh" || exit 1
passed=0; failed=0; bad=""
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ]; then
        bad="$bad $(basename "$t")"
        [ -z "$f" ] && failed=$((failed + 1))
    fi
done
[ -n "$bad" ] && echo "failing programs:$bad"
echo "cmocka: $passed passed, $failed failed"

if [ -n "$PYTEST" ]; then
    # pytest's summary line: "12 passed, 1 failed, 2 errors in 3.4s"
    out=$($PYTEST 2>&1); rc=$?
    printf '%s\n' "$out"
    last=$(printf '%s\n' "$out" | grep -E '[0-9]+ (passed|failed|errors?)' | tail -1)
    pp=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p')
    pf=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) failed.*/\1/p')
    pe=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) errors\{0,1\}\b.*/\1/p')
    pf=$((${pf:-0} + ${pe:-0}))
    if [ $rc -ne 0 ]; then
        bad="$bad pytest"
        [ "$pf" -eq 0 ] && pf=1
    fi
    echo "pytest: ${pp:-0} passed, $pf failed"
    passed=$((passed + ${pp:-0})); failed=$((failed + pf))
    echo "total: $passed passed, $failed failed"
fi
[ -z "$bad" ]
