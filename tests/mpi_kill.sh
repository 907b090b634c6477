#!/bin/sh
# mpi_kill.sh MPI_TESSERA MODEL TOKENIZER SIGNAL RANK: a long generation
# under mpirun -np 2; once its first tokens are out, SIGNAL to RANK.  Prints
# "rc=N elapsed_ms=M" (mpirun's exit status, the time from the signal to
# mpirun's end); mpirun's stderr goes to stderr.  Bounded: timeout 60.
bin=$1 model=$2 tok=$3 sig=$4 rank=$5
out=$(mktemp) err=$(mktemp)
timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$bin" run --cards 2 \
    -m "$model" -z "$tok" -p "Once" -n 4096 -t 0 >"$out" 2>"$err" &
job=$!
# the first tokens: stdout not empty (at most 20 s)
i=0
while [ ! -s "$out" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
victim=
for p in $(pgrep -f "$bin run --cards 2"); do
    r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ "$r" = "$rank" ] && victim=$p
done
[ -n "$victim" ] || { echo "no rank $rank"; kill $job; exit 1; }
t0=$(date +%s%N)
kill -"$sig" "$victim"
wait $job; rc=$?
t1=$(date +%s%N)
cat "$err" >&2
echo "rc=$rc elapsed_ms=$(( (t1 - t0) / 1000000 )) tokens_bytes=$(wc -c < "$out")"
rm -f "$out" "$err"
