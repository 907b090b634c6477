#!/bin/sh
# summary.sh NAME LOG - one line from a libFuzzer log: executions, exec/s,
# coverage (edges), features and corpus size (from -print_final_stats and
# the last status line).
name=$1; log=$2
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
line=$(grep -E '^#[0-9]+' "$log" | tail -1)
cov=$(printf '%s\n' "$line" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(printf '%s\n' "$line" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
corp=$(printf '%s\n' "$line" | sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p')
echo "fuzz: $name: ${execs:-?} executions (${rate:-?}/s), coverage ${cov:-?} edges, ${ft:-?} features, corpus ${corp:-?}"
