#!/bin/sh
# parity_text.sh MODEL.gguf F32(0|1) [PES]: parity.sh on four text prompts
# (plain text, code, and the chat template of the file's vocabulary),
# tokenized by llama.cpp's llama-tokenize (LLAMA_TOKENIZE, default
# llama-tokenize on PATH) with the vocabulary's BOS rule and special
# tokens parsed: the ids tessera's tokenizer gives too (tests/test_vocab.c).
# For files whose vocabulary is byte-level BPE (synth --arch ... --vocab
# ../shared/vocab/ggml-vocab-qwen2.gguf or -llama-bpe.gguf).
set -e
here=$(dirname "$0")
f=$1; f32=$2; pes=${3:-16}
tk=${LLAMA_TOKENIZE:-llama-tokenize}
nl='
'
chatml="<|im_start|>user${nl}Write a poem<|im_end|>${nl}<|im_start|>assistant${nl}"
llama3="<|start_header_id|>user<|end_header_id|>${nl}${nl}Write a poem<|eot_id|><|start_header_id|>assistant<|end_header_id|>${nl}${nl}"
PROMPTS=""
for text in "Once upon a time" "The capital of France is" "def fib(n):" "$chatml" "$llama3"; do
    ids=$(printf '%s' "$text" | "$tk" -m "$f" --stdin --ids --log-disable --no-escape 2>/dev/null |
          tail -n 1 | tr -d '[] ')
    case $text in   # the chat prompt of the vocabulary's own template
        "$chatml") grep -q 'im_start' "$f" || continue ;;
        "$llama3") grep -q 'start_header_id' "$f" || continue ;;
    esac
    PROMPTS="$PROMPTS $ids"
done
export PROMPTS
exec sh "$here/parity.sh" "$f" "$f32" "$pes"
