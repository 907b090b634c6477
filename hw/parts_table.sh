#!/bin/sh
# hw/parts_table.sh - the fit / speed table of docs/parts.md, from
# `tessera plan --json` for the stories15M / 42M / 110M shapes on every part
# of hw/parts.def.  Every speed in it is a projection of the cycle model.
#
# usage: sh hw/parts_table.sh [TESSERA]      (default build/tessera)
# Prints the markdown table on stdout; paste it into docs/parts.md.
# POSIX sh, sed.
set -u
T=${1:-build/tessera}
PARTS=$(sed -n 's/^TSR_PART(\([a-z0-9]*\),.*/\1/p' "$(dirname "$0")/parts.def")

# plan ARGS...: the JSON of `tessera plan ARGS --json`; its exit status is
# the verdict (0 fits, 1 does not, 3 cannot decide), 2 is an error
plan() {
    out=$("$T" plan "$@" --json)
    rc=$?
    [ "$rc" = 2 ] && exit 1
    printf '%s\n' "$out"
}

# field NAME JSON: the number/true/false/null after "NAME": (first match)
field() { printf '%s\n' "$2" | sed -n "s/.*\"$1\":\([-0-9.a-z]*\).*/\1/p" | head -n 1; }

echo "| model | part | fits one card | PEs | projected tok/s | weights streamed would need | part's off-chip |"
echo "|---|---|---|---|---|---|---|"
for shape in stories15M stories42M stories110M; do
    for part in $PARTS; do
        j=$(plan --shape "$shape" --part "$part") || exit 1
        off=$(field offchip_gbps "$j")
        [ "$off" = "null" ] && off="unknown" || off="$off GB/s"
        if [ "$(field decidable "$j")" != "true" ]; then
            echo "| $shape | $part | unknown (block counts not in hw/parts.def) | - | - | - | $off |"
            continue
        fi
        if [ "$(field fits "$j")" = "true" ]; then
            echo "| $shape | $part | yes | $(field pes "$j") | $(field tok_s_mean "$j") | $(field stream_gbps "$j") GB/s | $off |"
            continue
        fi
        fix=$(printf '%s\n' "$j" | sed -n 's/.*"fix":{\([^}]*\)}.*/\1/p')
        k=$(field cards "{$fix}")
        if [ -z "$k" ] || [ "$k" = "null" ]; then
            echo "| $shape | $part | no (no split fits) | - | - | - | $off |"
            continue
        fi
        js=$(plan --shape "$shape" --part "$part" --cards "$k") || exit 1
        echo "| $shape | $part | no: $k cards | $(field pes "$js") per card | $(field tok_s_mean "$js") | $(field stream_gbps "$js") GB/s | $off |"
    done
done
