#!/bin/sh
# Are the real model files there?  The tests read them from TSR_SHARED (set
# by `make test` from SHARED; default: ../shared beside the source tree).
# Without them no test can run: say so in one line and fail.
shared=${TSR_SHARED:-$(dirname "$0")/../../shared}
missing=""
for f in models/stories260K.bin models/tok512.bin models/tokenizer.bin \
         models/stories260K-f32.gguf models/stories260K-f16.gguf models/stories260K-q8_0.gguf \
         models/stories260K-q4_0.gguf reference/stories260K_once_upon_a_time.tokens \
         reference/stories260K_once_upon_a_time.txt vocab/Qwen-Qwen2.5-7B-Instruct.jinja \
         vocab/meta-llama-Llama-3.2-3B-Instruct.jinja vocab/microsoft-Phi-3.5-mini-instruct.jinja; do
    [ -f "$shared/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && exit 0
echo "tests: model files missing in $shared (not found:$missing): point SHARED at the folder" \
     "holding models/, reference/ and vocab/, e.g. make test SHARED=/path/to/shared" >&2
exit 1
