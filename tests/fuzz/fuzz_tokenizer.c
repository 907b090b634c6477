/*
 * fuzz_tokenizer.c - libFuzzer harness for the llama2.c tokenizer
 * (driver/tokenizer.c), load and encode.  Input: uint16 vocab size (0 means
 * 1), uint8 text length L, L bytes of text, then the tokenizer.bin bytes.
 * A tokenizer that loads encodes the text (with and without BOS/EOS, into
 * a buffer too small and one large enough) and gives every piece.  Every
 * failure must be a status with a one-line message.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int vocab = data[0] | data[1] << 8;
    if (vocab == 0) vocab = 1;
    size_t tlen = data[2];
    if (3 + tlen > size) return 0;
    char *text = fuzz_string(data + 3, tlen);
    const char *path = fuzz_file(data + 3 + tlen, size - 3 - tlen);
    tsr_tokenizer *t = NULL;
    tsr_err e = {0};
    int rc = path ? tsr_tokenizer_load(path, vocab, &t, &e) : TSR_ERR_IO;
    if (rc != TSR_OK) {
        assert(!t && (!path || (e.msg[0] && !strchr(e.msg, '\n'))));
        free(text);
        return 0;
    }
    assert(tsr_tokenizer_vocab_size(t) == vocab);
    int cap = (int)tlen + 4, n = 0;
    int *toks = malloc((size_t)cap * sizeof *toks);
    if (!toks) abort();
    for (int mode = 0; mode < 4; mode++) {
        int bos = mode & 1, eos = mode >> 1;
        rc = tsr_tokenizer_encode(t, text, bos, eos, toks, cap, &n, &e);
        if (rc != TSR_OK) continue;
        assert(n >= 0 && n <= cap);
        for (int i = 0; i < n; i++) {
            assert(toks[i] >= 0 && toks[i] < vocab);
            size_t len;
            (void)tsr_tokenizer_piece(t, i ? toks[i - 1] : 1, toks[i], &len);
        }
        if (n > 1) (void)tsr_tokenizer_encode(t, text, bos, eos, toks, n - 1, &n, &e);
    }
    (void)tsr_tokenizer_lookup(t, text);
    free(toks);
    free(text);
    tsr_tokenizer_free(t);
    return 0;
}
