#!/bin/sh
# parity.sh MODEL.gguf F32(0|1) [PES]: tessera against llama.cpp on four
# prompts given as token ids (the SentencePiece vocabulary's, BOS first):
# how many of 64 greedy tokens agree from the start, and the NMSE of the
# logits after BOS (sum (t - l)^2 / sum l^2, llama.cpp's as the
# reference).  Needs llama_greedy and tsr_greedy beside it (built by hand:
# see their headers) and python3.
set -e
here=$(dirname "$0")
f=$1; f32=$2; pes=${3:-16}
# PROMPTS (optional): the prompts' ids, a comma-separated list each,
# space-separated (parity_text.sh sets it)
for p in ${PROMPTS:-1,9038,2501,263,931,29892 1,450,7483,310,3444,338 \
         1,822,18755,29898,29876,1125 1,306,763,304,1708,411,590,4091}; do
    a=$("$here/llama_greedy" "$f" 64 "$p" /tmp/parity_ll.bin 2>/dev/null)
    b=$("$here/tsr_greedy" "$f" 64 "$p" /tmp/parity_ts.bin "$f32" "$pes" 2>/dev/null)
    python3 - "$f" "$f32" "$p" "$a" "$b" <<'PY'
import array, sys
f, f32, p, a, b = sys.argv[1:6]
a, b = a.split(','), b.split(',')
k = 0
while k < min(len(a), len(b)) and a[k] == b[k]:
    k += 1
l = array.array('f'); l.frombytes(open('/tmp/parity_ll.bin', 'rb').read())
t = array.array('f'); t.frombytes(open('/tmp/parity_ts.bin', 'rb').read())
e = sum((x - y) ** 2 for x, y in zip(t, l)) / sum(y * y for y in l)
print('%s %s prompt %s: %d of 64 greedy tokens agree from the start; logits NMSE %.3g'
      % (f, 'F32' if f32 == '1' else 'quantized', p, k, e))
PY
done
