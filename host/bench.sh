#!/bin/sh
# bench.sh - run `tessera bench` over the benchmark shapes and thread counts,
# measure the peers given in the environment in the same run, interleaved
# with tessera's runs, and write a markdown report (make bench runs this).
# A ratio is printed only against a peer measured here; without peers the
# peer columns say "-".
#
# usage: sh host/bench.sh TESSERA SHARED BENCHDIR OUT.md
#   TESSERA   the tessera program (build/tessera)
#   SHARED    the shared folder holding models/ (stories260K.bin, tok512.bin,
#             tokenizer.bin)
#   BENCHDIR  where the synthetic Q8 checkpoints are (written if missing)
#   OUT.md    the report
# environment (each optional; docs/benchmarks.md says how to build the peers):
#   RUNQ=FILE               llama2.c's runq (runq.c), run on the same version 2
#                           checkpoint as tessera, OMP_NUM_THREADS = threads
#   LLAMA_BENCH=FILE        llama.cpp's llama-bench; it needs a GGUF of the same
#                           weights per shape, found as
#   LLAMA_GGUF_<shape>=FILE   e.g. LLAMA_GGUF_stories15M=/m/stories15M.q8_0.gguf, else
#   LLAMA_GGUF_DIR=DIR        DIR/<shape>.q8_0.gguf; a shape without one: "-"
#   BENCH_ROUNDS=N          interleaved rounds (default 3): each round runs
#                           tessera, then runq, then llama-bench, for each row
#   BENCH_SHAPES="..."      default "stories260K stories15M stories42M stories110M";
#                           also smollm2-135m, qwen2.5-0.5b (GGUF files of those
#                           shapes, `tessera synth --arch`, with the real Llama 3
#                           and Qwen2 vocabularies of SHARED/vocab/, on 64 PEs;
#                           llama-bench reads the same file)
#   BENCH_THREADS="..."     default "1 2"
#   BENCH_PROMPT=P BENCH_DECODE=N   prompt and generated tokens (default 16, 240)
#   BENCH_BACKEND=SPEC      tessera's device (default emu), e.g. emu:simd=avx2
#                           for an AVX2-only CPU's paths on a CPU with AVX-512
set -eu

[ $# -eq 4 ] || { echo "usage: sh host/bench.sh TESSERA SHARED BENCHDIR OUT.md" >&2; exit 2; }
TESSERA=$1
SHARED=$2
BENCHDIR=$3
OUT=$4
ROUNDS=${BENCH_ROUNDS:-3}
SHAPES=${BENCH_SHAPES:-stories260K stories15M stories42M stories110M}
THREADS=${BENCH_THREADS:-1 2}
P=${BENCH_PROMPT:-16}
N=${BENCH_DECODE:-240}
BACKEND=${BENCH_BACKEND:-emu}
RUNQ=${RUNQ:-}
LLAMA_BENCH=${LLAMA_BENCH:-}
LLAMA_GGUF_DIR=${LLAMA_GGUF_DIR:-}
for peer in "$RUNQ" "$LLAMA_BENCH"; do
    [ -z "$peer" ] || [ -x "$peer" ] || { echo "bench: $peer is not an executable" >&2; exit 2; }
done
mkdir -p "$BENCHDIR"

# The model, tokenizer and GGUF of a shape (GGUF "" when none is given).
# The real small models' shapes are GGUF files with their own tokenizer.
is_gguf_shape() { case $1 in smollm2-135m|qwen2.5-0.5b) return 0 ;; *) return 1 ;; esac; }
model_of() {
    case $1 in
        stories260K) echo "$SHARED/models/stories260K.bin" ;;
        smollm2-135m|qwen2.5-0.5b) echo "$BENCHDIR/$1-q8_0.gguf" ;;
        *) echo "$BENCHDIR/$1-q8.bin" ;;
    esac
}
tok_of() {
    case $1 in
        stories260K) echo "$SHARED/models/tok512.bin" ;;
        smollm2-135m|qwen2.5-0.5b) echo "" ;;
        *) echo "$SHARED/models/tokenizer.bin" ;;
    esac
}
# tessera's device for a shape: the real shapes' weights need 64 PEs of the
# emulator's profile (16 hold up to stories110M)
backend_of() {
    if is_gguf_shape "$1"; then
        case $BACKEND in *:*) echo "$BACKEND,pes=64" ;; *) echo "$BACKEND:pes=64" ;; esac
    else
        echo "$BACKEND"
    fi
}
gguf_of() {
    if is_gguf_shape "$1"; then model_of "$1"; return; fi   # llama-bench reads it as it is
    g=$(eval "echo \"\${LLAMA_GGUF_$1:-}\"")
    [ -z "$g" ] && [ -n "$LLAMA_GGUF_DIR" ] && [ -f "$LLAMA_GGUF_DIR/$1.q8_0.gguf" ] &&
        g=$LLAMA_GGUF_DIR/$1.q8_0.gguf
    echo "$g"
}

# Synthetic Q8_0 checkpoints (version 2, group 32) of the llama2.c shapes.
for shape in $SHAPES; do
    [ "$shape" = stories260K ] && continue
    f=$(model_of "$shape")
    [ -f "$f" ] && continue
    echo "bench: writing $f" >&2
    case $shape in   # written under a temporary name, renamed when complete
        smollm2-135m) "$TESSERA" synth --arch llama3 --vocab "$SHARED/vocab/ggml-vocab-llama-bpe.gguf" \
                          --shape "$shape" --q8 -o "$f" ;;
        qwen2.5-0.5b) "$TESSERA" synth --arch qwen2 --vocab "$SHARED/vocab/ggml-vocab-qwen2.gguf" \
                          --shape "$shape" --q8 -o "$f" ;;
        *) "$TESSERA" synth --shape "$shape" --q8 -o "$f" ;;
    esac
done

WORK=$(mktemp -d /tmp/tsr_bench_XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ROWS=$WORK/rows
CMDS=$WORK/cmds
: > "$ROWS"
: > "$CMDS"

# The median, minimum and maximum of stdin's numbers, one a line ("-" for none).
median() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
lowest() { sort -g | head -n 1; }
highest() { sort -g | tail -n 1; }
# The number after "key": in each JSON line of file $2.
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" "$2"; }
# a / b as "1.23x", or "-" when either is missing.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 <= 0) print "-"; else printf "%.2fx\n", a / b }'; }
# A number with d decimals, or "-".
num() { awk -v v="$1" -v d="$2" 'BEGIN { if (v == "-" || v == "") print "-"; else printf "%.*f\n", d, v }'; }
# Log a command once (the first round) for the report.
logcmd() { [ "$round" -eq 1 ] && echo "$*" >> "$CMDS"; return 0; }

for shape in $SHAPES; do
    model=$(model_of "$shape")
    tok=$(tok_of "$shape")
    gguf=$(gguf_of "$shape")
    be=$(backend_of "$shape")
    zt=""   # -z TOKENIZER, for llama2.c files
    [ -n "$tok" ] && zt="-z $tok"
    for t in $THREADS; do
        tj=$WORK/tessera.json dj=$WORK/tessera-decode.json rj=$WORK/runq.txt lj=$WORK/llama.jsonl
        : > "$tj"; : > "$dj"; : > "$rj"; : > "$lj"
        round=1
        while [ "$round" -le "$ROUNDS" ]; do
            # tessera: one load, a warm-up run, one measured run; then the
            # decode alone from a 1-token prompt (positions 1..N, where
            # llama-bench's tgN decodes: 0..N-1)
            logcmd "$TESSERA bench -m $model $zt --backend $be --prompt-tokens $P --decode-tokens $N --repeat 1 --warmup 1 --threads $t --json"
            echo "bench: $shape, $t thread(s), round $round: tessera" >&2
            # shellcheck disable=SC2086
            "$TESSERA" bench -m "$model" $zt --backend "$be" --prompt-tokens "$P" \
                --decode-tokens "$N" --repeat 1 --warmup 1 --threads "$t" --json >> "$tj"
            logcmd "$TESSERA bench -m $model $zt --backend $be --prompt-tokens 1 --decode-tokens $N --repeat 1 --warmup 1 --threads $t --json"
            # shellcheck disable=SC2086
            "$TESSERA" bench -m "$model" $zt --backend "$be" --prompt-tokens 1 \
                --decode-tokens "$N" --repeat 1 --warmup 1 --threads "$t" --json >> "$dj"
            # runq: the same file (version 2 only); its own "achieved tok/s"
            if [ -n "$RUNQ" ] && [ "$shape" != stories260K ] && ! is_gguf_shape "$shape"; then
                logcmd "OMP_NUM_THREADS=$t $RUNQ $model -z $tok -n $((P + N)) -i 'Once upon a time' -t 0"
                echo "bench: $shape, $t thread(s), round $round: runq" >&2
                OMP_NUM_THREADS=$t "$RUNQ" "$model" -z "$tok" -n $((P + N)) -i "Once upon a time" \
                    -t 0 2>&1 >/dev/null | sed -n 's/^achieved tok\/s: *\([0-9.]*\).*/\1/p' >> "$rj"
            fi
            # llama-bench: the GGUF of the same weights, pp P and tg N
            if [ -n "$LLAMA_BENCH" ] && [ -n "$gguf" ]; then
                logcmd "$LLAMA_BENCH -m $gguf -p $P -n $N -t $t -r 1 -o jsonl"
                echo "bench: $shape, $t thread(s), round $round: llama-bench" >&2
                "$LLAMA_BENCH" -m "$gguf" -p "$P" -n "$N" -t "$t" -r 1 -o jsonl 2>/dev/null >> "$lj"
            fi
            round=$((round + 1))
        done
        n=$(field decode_tokens "$dj" | head -n 1)
        dmed=$(field decode_tok_s "$dj" | median)
        dmin=$(field decode_tok_s "$dj" | lowest); dmax=$(field decode_tok_s "$dj" | highest)
        amed=$(field decode_tok_s "$tj" | median)   # after the P-token prompt
        pmed=$(field prefill_tok_s "$tj" | median)
        tmed=$(field ttft_ms "$tj" | median)
        prep=$(field load_prep_s "$tj" | median)
        lsec=$(field load_s "$tj" | median)
        rss=$(field peak_rss_mb "$tj" | highest)
        runq=$(median < "$rj")
        ltg=$(grep "\"n_gen\": *$N," "$lj" | grep "\"n_prompt\": *0," | field avg_ts /dev/stdin | median)
        lpp=$(grep "\"n_prompt\": *$P," "$lj" | grep "\"n_gen\": *0," | field avg_ts /dev/stdin | median)
        printf '| %s | %s | %s | %s (%s..%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$shape" "$t" "$n" "$(num "$dmed" 1)" "$(num "$dmin" 1)" "$(num "$dmax" 1)" \
            "$(num "$ltg" 1)" "$(ratio "$dmed" "$ltg")" "$(num "$amed" 1)" \
            "$(num "$runq" 1)" "$(ratio "$amed" "$runq")" \
            "$(num "$pmed" 1)" "$(num "$lpp" 1)" "$(ratio "$pmed" "$lpp")" "$(num "$tmed" 2)" \
            "$(num "$lsec" 3)" "$(num "$prep" 3)" "$(num "$rss" 1)" >> "$ROWS"
    done
done

# How to build the peers outside the tree and run with them: part of every
# report, so that `make bench DOCS=1` keeps it in docs/benchmarks.md.
peers_howto() {
    cat <<'HOWTO'
## Peers: building them, running with them

The peers are built outside this source tree and never committed.  Any folder
will do; `/tmp/peers` below.  Sources: karpathy/llama2.c (master, commit
350e04fe35433e6d2941dce5a1f53308f87058eb) and ggml-org/llama.cpp (commit
c392e5094deaf2d1a7c18683214f007fad3fe42b, build 4748), checked out into
`/tmp/peers/llama2.c` and `/tmp/peers/llama.cpp`.

llama2.c's runq (Q8_0, OpenMP):

```sh
cd /tmp/peers/llama2.c
gcc -Ofast -march=native -fopenmp runq.c -lm -o runq
```

llama.cpp's llama-bench and the two tools that make the GGUF:

```sh
cd /tmp/peers/llama.cpp
cmake -B build -DGGML_NATIVE=ON -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
      -DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
cmake --build build -j2 --target llama-bench llama-cli llama-quantize llama-convert-llama2c-to-ggml
```

On a CPU with AMX (Sapphire Rapids and later) that native build computes
wrong Q8_0 results at this commit (its AMX buffer type takes the quantized
matmuls; `llama-cli` prints garbage): build without AMX instead, and use
`build-noamx/bin/` below:

```sh
cmake -B build-noamx -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
      -DGGML_F16C=ON -DGGML_AVX_VNNI=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON \
      -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DCMAKE_BUILD_TYPE=Release \
      -DLLAMA_CURL=OFF -DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
cmake --build build-noamx -j2 --target llama-bench llama-cli llama-quantize llama-convert-llama2c-to-ggml
```

For an AVX2-only CPU's figures on a CPU with more (tessera with
`BENCH_BACKEND=emu:simd=avx2`), llama.cpp built for AVX2 alone, in
`build-avx2/bin/`:

```sh
cmake -B build-avx2 -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
      -DGGML_F16C=ON -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF \
      -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
      -DGGML_AMX_BF16=OFF -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_LLGUIDANCE=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF
cmake --build build-avx2 -j2 --target llama-bench llama-cli llama-quantize llama-convert-llama2c-to-ggml
```

(`objdump -d build-avx2/bin/libggml-cpu.so | grep -c zmm` should print 0.)

(The native build with `-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"`
and the same for `CMAKE_CXX_FLAGS` also leaves AMX out; it measured the same.
Check either with `llama-cli -m ../shared/models/stories260K-q8_0.gguf -p "Once
upon a time" -n 40 --temp 0 -no-cnv` against
`../shared/reference/stories260K_once_upon_a_time.txt`.)

GGUF Q8_0 files of the same weights as make bench's checkpoints: `tessera
synth` writes the same pseudo-random weights (seed 42) as llama2.c's legacy
fp32 layout, which llama.cpp's converter reads; llama-quantize makes Q8_0
(group 32, fp16 scales) of them.  From this tree, after `make`:

```sh
L=/tmp/peers/llama.cpp/build/bin      # or build-noamx/bin
mkdir -p /tmp/peers/models
for s in stories15M stories42M stories110M; do
    build/tessera synth --shape $s --legacy -o /tmp/peers/models/$s.legacy.bin
    $L/llama-convert-llama2c-to-ggml --copy-vocab-from-model ../shared/models/tokenizer.bin \
        --llama2c-model /tmp/peers/models/$s.legacy.bin \
        --llama2c-output-model /tmp/peers/models/$s.f32.gguf
    $L/llama-quantize /tmp/peers/models/$s.f32.gguf /tmp/peers/models/$s.q8_0.gguf Q8_0
done
```

Then, with either peer or both (each optional; a peer not given gets "-" and
no ratio; every ratio is against a peer measured in the same run,
interleaved with tessera's runs):

```sh
make bench RUNQ=/tmp/peers/llama2.c/runq \
           LLAMA_BENCH=/tmp/peers/llama.cpp/build/bin/llama-bench \
           LLAMA_GGUF_DIR=/tmp/peers/models          # DIR/<shape>.q8_0.gguf
# or one file per shape:
make bench LLAMA_BENCH=... LLAMA_GGUF_stories15M=/path/a.gguf LLAMA_GGUF_stories110M=/path/b.gguf
# fewer rows or rounds:
make bench RUNQ=... BENCH_SHAPES="stories110M" BENCH_THREADS=2 BENCH_ROUNDS=5
# an AVX2-only CPU's paths, against the AVX2 build:
make bench BENCH_BACKEND=emu:simd=avx2 LLAMA_BENCH=/tmp/peers/llama.cpp/build-avx2/bin/llama-bench \
           LLAMA_GGUF_DIR=/tmp/peers/models
```

The report goes to `build/bench/benchmarks.md` (`DOCS=1`: this file, whose
sections after the report's end marker are kept as they are).
HOWTO
}

KEEP_MARK="<!-- end of make bench's report: the sections below are kept by make bench DOCS=1 -->"
CPU=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
NCPU=$(grep -c '^processor' /proc/cpuinfo 2>/dev/null || echo "?")
{
    echo "# Benchmarks"
    echo
    echo "Generated by \`make bench DOCS=1\` (host/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC')."
    echo "Device: the emulator (\`$BACKEND\`, 16 PEs, 64 for smollm2-135m and qwen2.5-0.5b; Q8_0 weights at group 32 on chip), worker threads: $(echo "$THREADS" | sed "s/ / and /")."
    echo "CPU: ${CPU:-unknown} ($NCPU logical CPUs)."
    echo "Peers measured in this run: runq ${RUNQ:-(none: RUNQ not set)}; llama-bench ${LLAMA_BENCH:-(none: LLAMA_BENCH not set)}."
    echo
    echo "Each row: $ROUNDS interleaved rounds; a round runs tessera twice (each time one model"
    echo "load, 1 warm-up run, 1 measured run on a fresh sequence, tokens generated greedily"
    echo "with ignore_stop = 1: first prefill $P prompt token ids, then generate N tokens; then"
    echo "from a 1-token prompt generate N tokens), then runq, then llama-bench, so the programs"
    echo "share the machine's state.  Figures are medians over the rounds.  Decode tok/s (with"
    echo "min..max) is the second run's, positions 1..N, as llama-bench's tg$N decodes at"
    echo "0..$((N - 1)) from an empty cache; \"after prompt\" is the first run's, positions"
    echo "$P..$((P + N - 1)), where attention reads more of the KV cache.  runq is llama2.c's runq.c"
    echo "on the same version 2 checkpoint (its \"achieved tok/s\" over $((P + N)) steps, positions"
    echo "0..$((P + N - 1)), prompt and generated alike: one forward each), compared with the"
    echo "after-prompt decode; llama.cpp is llama-bench on a GGUF Q8_0 of the same weights"
    echo "(tg$N and pp$P); x = tessera's median / the peer's, and only for a peer measured here"
    echo "(\"-\": not measured).  Load s is tessera's whole model load (open, check, build"
    echo "and stream the image); prep s the part before the first chunk is sent (open, the"
    echo "non-finite check, the tokenizer, configure).  Peak RSS is tessera's ru_maxrss.  The"
    echo "stories15M/42M/110M checkpoints are synthetic (\`tessera synth --q8\`, deterministic"
    echo "pseudo-random weights, std 0.02) with the real shapes, so the speeds are those of"
    echo "the real models but the text is noise; smollm2-135m and qwen2.5-0.5b are GGUF files of"
    echo "those models' shapes (\`tessera synth --arch\`, the same weights' law) with the real"
    echo "Llama 3 and Qwen2 vocabularies, which llama-bench reads as they are (no runq: llama2.c"
    echo "has neither architecture).  The machine is shared: compare rows of one"
    echo "run, and expect the absolute figures to move by up to 2x between runs (with how"
    echo "busy the shared DRAM is; the same-run ratios move less)."
    echo
    echo "| shape | threads | N | decode tok/s | llama.cpp tg tok/s | x llama.cpp | decode after prompt | runq tok/s | x runq | prefill tok/s | llama.cpp pp tok/s | x llama.cpp pp | TTFT ms | load s | prep s | peak RSS MB |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    cat "$ROWS"
    echo
    echo "Commands (each round; the peers' as given to this run):"
    echo
    echo '```sh'
    for shape in $SHAPES; do
        [ "$shape" = stories260K ] && continue
        case $shape in
            smollm2-135m) echo "$TESSERA synth --arch llama3 --vocab $SHARED/vocab/ggml-vocab-llama-bpe.gguf --shape $shape --q8 -o $(model_of "$shape")" ;;
            qwen2.5-0.5b) echo "$TESSERA synth --arch qwen2 --vocab $SHARED/vocab/ggml-vocab-qwen2.gguf --shape $shape --q8 -o $(model_of "$shape")" ;;
            *) echo "$TESSERA synth --shape $shape --q8 -o $(model_of "$shape")" ;;
        esac
    done
    cat "$CMDS"
    echo '```'
    echo
    peers_howto
    echo
    echo "$KEEP_MARK"
} > "$OUT.tmp"
# Hand-written sections after the marker in an earlier report (docs/
# benchmarks.md: analyses of single runs) are kept as they are.
if [ -f "$OUT" ] && grep -qxF "$KEEP_MARK" "$OUT"; then
    awk -v m="$KEEP_MARK" 'keep { print } $0 == m { keep = 1 }' "$OUT" >> "$OUT.tmp"
fi
mv "$OUT.tmp" "$OUT"
echo "bench: wrote $OUT" >&2
