#!/bin/sh
# Run each CMocka test program; print one closing line with the totals.
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
[ -z "$bad" ]
