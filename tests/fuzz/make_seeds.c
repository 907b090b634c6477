/*
 * make_seeds.c - the small seed files of the libFuzzer harnesses.
 *
 *   usage: make_seeds OUTDIR SHARED
 *
 * Writes OUTDIR/llama2c/ (tiny legacy, v1 and v2 checkpoints, shared and
 * separate classifier), OUTDIR/gguf/ (the tiny GGUF of
 * tests/support/gguf_write.c in each tensor type), OUTDIR/tokenizer/ (the
 * harness's header, then tok512.bin and tokenizer.bin from SHARED/models,
 * and a tiny vocab), OUTDIR/xclbin/ (metadata-only xclbins from
 * tests/support/xclbin_write.c) and OUTDIR/devspec/ (spec strings).  The
 * real model files are linked beside them by the Makefile.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_write.h"
#include "gguf_write.h"
#include "model.h"
#include "xclbin_write.h"

static const char *out;

static void save(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", out, dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
        exit(1);
    }
}

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *d = len > 0 ? malloc((size_t)len) : NULL;
    if (d && fread(d, 1, (size_t)len, f) != (size_t)len) { free(d); d = NULL; }
    fclose(f);
    *n = d ? (size_t)len : 0;
    return d;
}

/* ------------------------------------------------------------- llama2.c --- */

#define TINY "8x1:hidden=16,heads=2,kv=1,vocab=8,seq=4"

static void synth(const char *spec, int group, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/llama2c/%s", out, name);
    if (tsr_test_synth(spec, group, path)) exit(1);
}

static void legacy_from(const char *v1, const char *name)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/llama2c/%s", out, v1);
    snprintf(dst, sizeof dst, "%s/llama2c/%s", out, name);
    if (tsr_test_write_legacy(src, dst)) exit(1);
}

/* ------------------------------------------------------------ tokenizer --- */

/* The harness's header (uint16 vocab, uint8 text length, text), then the file. */
static void tok_seed(const char *name, int vocab, const char *text, const void *file, size_t n)
{
    size_t tl = strlen(text), total = 3 + tl + n;
    uint8_t *b = malloc(total);
    if (!b) exit(1);
    b[0] = (uint8_t)vocab;
    b[1] = (uint8_t)(vocab >> 8);
    b[2] = (uint8_t)tl;
    memcpy(b + 3, text, tl);
    if (n) memcpy(b + 3 + tl, file, n);
    save("tokenizer", name, b, total);
    free(b);
}

/* A tokenizer.bin of 8 pieces: <unk> <s> </s>, bytes, merges. */
static void tiny_tokenizer(void)
{
    static const char *const pieces[8] = { "<unk>", "<s>", "</s>", " ", "a", "b", " a", "ab" };
    uint8_t b[256];
    size_t n = 0;
    int32_t max_len = 5;
    memcpy(b + n, &max_len, 4); n += 4;
    for (int i = 0; i < 8; i++) {
        float score = (float)-i;
        int32_t len = (int32_t)strlen(pieces[i]);
        memcpy(b + n, &score, 4); n += 4;
        memcpy(b + n, &len, 4); n += 4;
        memcpy(b + n, pieces[i], (size_t)len); n += (size_t)len;
    }
    tok_seed("tiny8", 8, " ab a ba\xc3\xa9", b, n);
}

/* ----------------------------------------------------------------- main --- */

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: make_seeds OUTDIR SHARED\n");
        return 2;
    }
    out = argv[1];
    const char *shared = argv[2];

    synth(TINY, 0, "tiny-v1.bin");
    synth(TINY ",shared=0", 0, "tiny-v1-unshared.bin");
    synth(TINY, 8, "tiny-v2-g8.bin");
    synth(TINY ",shared=0", 4, "tiny-v2-g4-unshared.bin");
    legacy_from("tiny-v1.bin", "tiny-legacy.bin");
    legacy_from("tiny-v1-unshared.bin", "tiny-legacy-unshared.bin");

    const struct { const char *name; tsr_gguf_spec sp; } gg[] = {
        { "tiny-f32.gguf", { 0 } },
        { "tiny-f16.gguf", { .emb_type = 1 } },
        { "tiny-q4_0.gguf", { .emb_type = 2 } },
        { "tiny-q8_0.gguf", { .emb_type = 8 } },
        { "tiny-output-a64.gguf", { .with_output = 1, .alignment = 64 } },
        { "tiny-qwen2.gguf", { .qwen2 = 1 } },
        { "tiny-llama3-rope.gguf", { .rope_freqs = 1, .emb_type = 8 } },
    };
    for (size_t i = 0; i < sizeof gg / sizeof gg[0]; i++) {
        tsr_gbuf b = { 0 };
        tsr_gguf_build(&b, &gg[i].sp);
        save("gguf", gg[i].name, b.p, b.n);
        free(b.p);
    }

    /* byte-level BPE vocabularies: as gguf_write.h writes one, with each
     * pre-tokenizer family, and refused ones */
    static const char *const merges[] = { "a b", "\xC4\xA0 a", "\xC4\xA0" "a b" };
    const struct { const char *name, *model, *pre; int n_merges; } vv[] = {
        { "bpe-gpt2.gguf", "gpt2", "gpt-2", 3 },      { "bpe-llama3.gguf", "gpt2", "llama-bpe", 3 },
        { "bpe-qwen2.gguf", "gpt2", "qwen2", 3 },     { "bpe-deepseek.gguf", "gpt2", "deepseek-coder", 3 },
        { "bpe-starcoder.gguf", "gpt2", "starcoder", 3 }, { "bpe-nopre.gguf", "gpt2", NULL, 3 },
        { "bpe-nomerges.gguf", "gpt2", "gpt-2", 0 },  { "bpe-unknown-pre.gguf", "gpt2", "x", 3 },
    };
    for (size_t i = 0; i < sizeof vv / sizeof vv[0]; i++) {
        tsr_gbuf b = { 0 };
        tsr_gguf_bpe_vocab(&b, vv[i].model, vv[i].pre, vv[i].n_merges ? merges : NULL,
                           vv[i].n_merges);
        save("vocab", vv[i].name, b.p, b.n);
        free(b.p);
    }

    char path[4096];
    size_t n;
    void *d;
    snprintf(path, sizeof path, "%s/models/tok512.bin", shared);
    if ((d = slurp(path, &n))) { tok_seed("tok512", 512, "Once upon a time", d, n); free(d); }
    snprintf(path, sizeof path, "%s/models/tokenizer.bin", shared);
    if ((d = slurp(path, &n))) { tok_seed("tok32000", 32000, "Hello <0x41> w\xc3\xb6rld!", d, n); free(d); }
    tiny_tokenizer();

    const char *profile = "name=stories260k,pes=4,rows=4,cols=4,dim=64,hidden=172,layers=5,"
                          "heads=8,kv_heads=4,head_size=8,vocab=512,seq=512,slots=2,group_min=16,"
                          "group_max=64,i8_bytes=81920,f32_words=163840";
    const struct { const char *name; tsr_xclbin_desc d; } xs[] = {
        { "plain.xclbin", { 0 } },
        { "profile.xclbin", { .profile = profile } },
        { "ddr.xclbin", { .profile = profile, .bank = { "DDR[0]", "DDR[1]", "DDR[1]" } } },
        { "no-cancel.xclbin", { .profile = profile, .omit_arg = 4 } },
        { "vadd.xclbin", { .kernel = "vadd" } },
    };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        snprintf(path, sizeof path, "%s/xclbin/%s", out, xs[i].name);
        if (tsr_xclbin_write(path, &xs[i].d) != 0) break;   /* built without XRT headers */
    }
    save("xclbin", "profile.txt", profile, strlen(profile));

    const char *specs[] = { "emu", "emu:part=u55c,pes=16,threads=2", "emu:simd=0,pes=4",
                            "xrt:0", "xrt:1,xclbin=/tmp/k.xclbin", "xrt:index=3,part=U280",
                            "emu:pes=3,pes=4", "gpu:0", "emu:batch=2,pes=8" };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "spec%zu", i);
        save("devspec", name, specs[i], strlen(specs[i]));
    }
    return 0;
}
