#!/bin/sh
# hw/lint_hls.sh - check kernel C sources against tessera's synthesizable
# subset (DESIGN.md, "Kernel rules"), so the rules are checked, not hoped for.
#
# usage: sh hw/lint_hls.sh DIR        (`make lint-hls` runs it on kernels/)
#
# Every DIR/*.c is compiled alone as freestanding C99 with the synthesis
# view of the sources (-D__SYNTHESIS__), headers from DIR and DIR/profiles.
# Nothing is linked.  Then, over the whole set of objects:
#   1. compile errors and warnings (-Wall -Wextra -Werror, -Werror=vla),
#      once at -O0 and once at -O2 (some warnings need the optimiser);
#   2. undefined symbols: what no object in the set defines must be on the
#      allowlist (memcpy, memset, the float math Vitis HLS maps).  So
#      malloc, free, printf, fopen, ... fail here without a list of their own;
#   3. recursion: a cycle in the call graph, self-calls included, across
#      files (gcc -fcallgraph-info writes one VCG graph per file);
#   4. function pointers: any indirect call;
#   5. unbounded stack frames (alloca; VLAs are already errors);
#   6. the emulator named in a kernel file (DIR's .c and .h, profiles too):
#      TSR_EMU anywhere, or an include of an emu/ or tsr_emu header.  Where a
#      platform runs the kernels differently, the kernels call a hook of
#      tsr_platform.h and emu/ defines it (docs/emulator.md).
# One line per problem, "lint-hls: <file>: <problem>", and a final
# "lint-hls: N files OK" when there is none.  Exit status 1 on any problem.
#
# Flags, and why:
#   -ffreestanding -fno-builtin  no hosted library assumed, and no call is
#        turned into an inline builtin: memcpy/expf stay real calls that nm
#        reports, so the allowlist sees exactly what the source calls (and a
#        printf never hides as an inlined or rewritten builtin).  The library
#        headers (<string.h>, <math.h>) are still found; only linking would
#        need libc, and nothing is linked (-nostdlib documents that).
#   -O0 for the checks  no inlining and no tail-call elimination, so every
#        call in the source is an edge in the call graph and recursion cannot
#        be optimised out of sight.
#   -Wno-unknown-pragmas -Wno-unused-label  `#pragma HLS ...` and loop labels
#        are the HLS idiom, not mistakes.
#   -fno-stack-protector  a distribution default would add __stack_chk_fail.
#
# POSIX sh, cc (gcc >= 10 for -fcallgraph-info), binutils nm, awk.

set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "lint-hls: usage: sh hw/lint_hls.sh DIR (no such directory: '${dir}')" >&2
    exit 2
fi
dir=${dir%/}
CC=${CC:-cc}

# The only undefined symbols a kernel may leave: memory copies and the
# float math that Vitis HLS implements (single and double precision).
ALLOW="memcpy memset expf sqrtf powf cosf sinf logf fabsf floorf roundf fmaxf fminf tanhf
exp sqrt pow cos sin log fabs floor round"

FLAGS="-std=c99 -ffreestanding -fno-builtin -nostdlib -fno-stack-protector
-D__SYNTHESIS__ -Wall -Wextra -Werror -Werror=vla -Wno-unknown-pragmas -Wno-unused-label"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lint_hls.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM HUP

problems=0
nfiles=0
bad_compile=0

# ------------------------------------------------------------- compile ---
# objects are named by index (0.o, 1.o, ...) so any file name is safe; the
# map file pairs each object with its source path.
: > "$tmp/map"
for src in "$dir"/*.c; do
    [ -f "$src" ] || continue
    obj="$tmp/$nfiles.o"
    nfiles=$((nfiles + 1))
    # shellcheck disable=SC2086  # FLAGS is a word list
    if ! $CC $FLAGS -O0 -fcallgraph-info=su -I"$dir" -I"$dir/profiles" \
            -c "$src" -o "$obj" 2> "$tmp/err"; then
        sed 's/^/    /' "$tmp/err"
        echo "lint-hls: $src: does not compile as freestanding C99 (see above)"
        problems=$((problems + 1))
        bad_compile=$((bad_compile + 1))
        rm -f "$obj"
        continue
    fi
    # shellcheck disable=SC2086
    if ! $CC $FLAGS -O2 -I"$dir" -I"$dir/profiles" \
            -c "$src" -o "$tmp/O2.o" 2> "$tmp/err"; then
        sed 's/^/    /' "$tmp/err"
        echo "lint-hls: $src: warnings at -O2 (see above)"
        problems=$((problems + 1))
    fi
    printf '%s %s\n' "$obj" "$src" >> "$tmp/map"
done

if [ "$nfiles" -eq 0 ]; then
    echo "lint-hls: $dir: no .c files to check"
    exit 1
fi
if [ "$bad_compile" -gt 0 ]; then
    # a missing object would make every symbol it defines look undefined
    echo "lint-hls: symbol and call-graph checks skipped: $bad_compile file(s) did not compile"
    echo "lint-hls: $problems problem(s) in $nfiles files"
    exit 1
fi

# --------------------------------------------------- undefined symbols ---
# nm -A prefixes each line with its object; symbols defined by any object
# of the set are fine, as are those on the allowlist.
objs=$(awk '{ print $1 }' "$tmp/map")
# shellcheck disable=SC2086  # object paths come from mktemp + digits
nm -A -g --defined-only $objs > "$tmp/defs" || exit 2
# shellcheck disable=SC2086
nm -A -u $objs > "$tmp/undef" || exit 2
awk -v allow="$ALLOW" '
    # nm -A lines start "obj:" (temp paths hold no colon)
    function obj_of(line) { return substr(line, 1, index(line, ":") - 1) }
    FILENAME == ARGV[1] { src[$1] = substr($0, length($1) + 2); next }
    FILENAME == ARGV[2] {               # "obj:addr T name"
        o = obj_of($0)
        if ($NF in def && def[$NF] != o)
            print "lint-hls: " src[o] ": symbol " $NF " also defined in " src[def[$NF]]
        def[$NF] = o
        next
    }
    {                                   # "obj:          U name"
        o = obj_of($0)
        if (!($NF in def) && !($NF in ok))
            print "lint-hls: " src[o] ": undefined symbol " $NF
    }
    BEGIN { n = split(allow, a, /[ \n]+/); for (i = 1; i <= n; i++) ok[a[i]] = 1 }
' "$tmp/map" "$tmp/defs" "$tmp/undef" > "$tmp/sym"

# -------------------------------------------------------- call graph -----
# VCG from gcc: node titles are function names ("file.c:name" for statics),
# labels "name\nfile:line:col\nN bytes (static|dynamic...)"; edges carry
# the call's file:line:col.  Indirect calls target "__indirect_call".
ci=$(for o in $objs; do echo "${o%.o}.ci"; done)
# shellcheck disable=SC2086
awk '
    function field(s, key,    i, r) {  # value of key: "..." on this line
        i = index(s, key ": \"")
        if (i == 0) return ""
        r = substr(s, i + length(key) + 3)
        return substr(r, 1, index(r, "\"") - 1)
    }
    /^graph:/ { file = field($0, "title") }
    /^node:/ {
        t = field($0, "title")
        if (!(t in seen)) { seen[t] = 1; order[++nn] = t }
        lab = field($0, "label")
        # "(dynamic)" is unbounded (alloca); "(dynamic,bounded)" is only
        # arguments pushed around a call, which is fine
        if (lab ~ /bytes \(dynamic\)/)
            print "lint-hls: " file ": unbounded stack frame (alloca) in " t
    }
    /^edge:/ {
        s = field($0, "sourcename"); d = field($0, "targetname")
        if (d == "__indirect_call") {
            print "lint-hls: " field($0, "label") ": indirect call (function pointer) in " s
            next
        }
        if ((s, d) in has) next
        has[s, d] = 1
        adj[s, ++nadj[s]] = d
    }
    # depth-first search; a grey target closes a cycle along the stack
    function dfs(u,    i, v, j, c) {
        color[u] = 1; stack[++sp] = u
        for (i = 1; i <= nadj[u]; i++) {
            v = adj[u, i]
            if (color[v] == 1) {
                for (j = sp; stack[j] != v; j--) ;
                c = stack[j]
                for (j++; j <= sp; j++) c = c " -> " stack[j]
                c = c " -> " v
                if (!(c in told)) { told[c] = 1; print "lint-hls: recursion: " c }
            } else if (color[v] == 0)
                dfs(v)
        }
        sp--; color[u] = 2
    }
    END { sp = 0; for (k = 1; k <= nn; k++) if (color[order[k]] == 0) dfs(order[k]) }
' $ci > "$tmp/graph"

# ----------------------------------------------------- platform names ---
grep -s -n -E 'TSR_EMU|^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]*/)?(emu/|tsr_emu)' \
        "$dir"/*.c "$dir"/*.h "$dir"/profiles/*.h |
    sed 's/^\([^:]*:[0-9]*\):.*/lint-hls: \1: the emulator named in a kernel file (a tsr_platform.h hook instead)/' \
    > "$tmp/platform"

# --------------------------------------------------------------- report --
cat "$tmp/sym" "$tmp/graph" "$tmp/platform"
problems=$((problems + $(cat "$tmp/sym" "$tmp/graph" "$tmp/platform" | wc -l)))
if [ "$problems" -gt 0 ]; then
    echo "lint-hls: $problems problem(s) in $nfiles files"
    exit 1
fi
echo "lint-hls: $nfiles files OK"
exit 0
