/*
 * fuzz_vocab.c - libFuzzer harness for GGUF tokenizers (driver/format_gguf.c
 * read_tokenizer, driver/tokenizer_gguf.c, driver/pretok.c): the input is a
 * GGUF file (vocab-only or a model), of which only the tokenizer.ggml.*
 * metadata is read.  A tokenizer that builds then encodes texts that reach
 * the pre-tokenizers' corners (contractions, digits, CJK, whitespace runs,
 * invalid UTF-8, special tokens written in the text) with and without
 * special tokens parsed, and every piece is decoded.  Every failure must be
 * a status with a one-line message, never a crash, leak or undefined
 * behaviour.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tokenizer.h"

static const char *const texts[] = {
    "", "Hello world", " it's 12345 o'clock\n\n\t  ", "\xe4\xb8\xad\xe6\x96\x87 \xea\xb0\x80 1\xc2\xbd",
    "\xff\xc0\x80 \xe2\x96\x81 bad utf8 \xf0\x9f", "<|im_start|>user\nhi<|im_end|><s></s><|user|>",
    "  \r\n  x   \n", "\xf0\x9f\xa6\x99.cpp ab ab",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tsr_tokenizer *t = NULL;
    tsr_err e = { 0 };
    int rc = tsr_gguf_read_tokenizer(data, size, "fuzz.gguf", &t, &e);
    if (rc != TSR_OK) {
        assert(!t && e.msg[0] && !strchr(e.msg, '\n'));
        return 0;
    }
    int vocab = tsr_tokenizer_vocab_size(t);
    int toks[512];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (int flags = 0; flags <= (TSR_ENC_BOS | TSR_ENC_SPECIAL); flags += 5) {
            int n = 0;
            if (tsr_tokenizer_encode_ex(t, texts[i], strlen(texts[i]), flags, toks, 512, &n, &e))
                continue;
            for (int k = 0; k < n; k++) {
                size_t len;
                assert(toks[k] >= 0 && toks[k] < vocab);
                (void)tsr_tokenizer_piece(t, k ? toks[k - 1] : -1, toks[k], &len);
            }
        }
    for (int id = 0; id < vocab && id < 4096; id++) {
        size_t len;
        (void)tsr_tokenizer_piece(t, -1, id, &len);
        (void)tsr_tokenizer_is_eog(t, id);
    }
    tsr_tokenizer_free(t);
    return 0;
}
