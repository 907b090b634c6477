/* gguf_write.c - the tiny GGUF of gguf_write.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_write.h"

#define TD TSR_GGUF_TD
#define TH TSR_GGUF_TH
#define TV TSR_GGUF_TV

static void put(tsr_gbuf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) { fputs("gguf_write: out of memory\n", stderr); abort(); }
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put_u8(tsr_gbuf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(tsr_gbuf *b, uint16_t v) { put(b, &v, 2); }
static void put_u32(tsr_gbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(tsr_gbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_f32(tsr_gbuf *b, float v) { put(b, &v, 4); }
static void put_str(tsr_gbuf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }

/* Bytes of n elements of a type. */
static size_t type_bytes(uint32_t t, size_t n)
{
    switch (t) {
    case 1: return 2 * n;
    case 2: return n / 32 * 18;
    case 8: return n / 32 * 34;
    default: return 4 * n;
    }
}

/* The tensor data of one tensor: value i is (i % 7 - 3) / 4 for F32, 1.0
 * for F16; the quantized embedding is a fixed pattern (d = 0.5; Q8_0
 * q = j - 16, Q4_0 low nibble j, high 15 - j).  Element (F32, F16) or
 * block (Q8_0, Q4_0) `bad` gets the poison value (bad < 0: none). */
static void put_data(tsr_gbuf *b, uint32_t t, size_t n, int64_t bad, int inf)
{
    if (t == 0) {
        for (size_t i = 0; i < n; i++)
            put_f32(b, (int64_t)i == bad ? (inf ? INFINITY : NAN) : (float)((int)(i % 7) - 3) / 4);
        return;
    }
    uint16_t poison = inf ? 0x7c00 : 0x7e00;   /* fp16 +Inf, quiet NaN */
    if (t == 1) {
        for (size_t i = 0; i < n; i++) put_u16(b, (int64_t)i == bad ? poison : 0x3c00);  /* 1.0 */
        return;
    }
    for (size_t k = 0; k < n / 32; k++) {
        put_u16(b, (int64_t)k == bad ? poison : 0x3800);   /* d = 0.5 */
        if (t == 8) for (int j = 0; j < 32; j++) put_u8(b, (uint8_t)(int8_t)(j - 16));
        else for (int j = 0; j < 16; j++) put_u8(b, (uint8_t)(j | ((15 - j) << 4)));
    }
}

void tsr_gguf_build(tsr_gbuf *b, const tsr_gguf_spec *sp)
{
    struct tdesc { const char *name; uint64_t ne0, ne1; uint32_t type; } ts[16];
    int nt = 0;
#define T(nm, a, c, ty) ts[nt++] = (struct tdesc){ nm, a, c, ty }
    T("token_embd.weight", TD, TV, sp->emb_type);
    T("output_norm.weight", TD, 1, 0);
    if (sp->with_output) T("output.weight", TD, TV, 0);
    T("blk.0.attn_norm.weight", TD, 1, 0);
    T("blk.0.attn_q.weight", TD, TD, 0);
    T("blk.0.attn_k.weight", TD, TD / 2, 0);   // kv_dim: 1 kv head of 2
    T("blk.0.attn_v.weight", TD, TD / 2, 0);
    T("blk.0.attn_output.weight", TD, TD, 0);
    T("blk.0.ffn_norm.weight", TD, 1, 0);
    T("blk.0.ffn_gate.weight", TD, TH, 0);
    T("blk.0.ffn_down.weight", TH, TD, 0);
    T("blk.0.ffn_up.weight", TD, TH, 0);
    if (sp->qwen2) {
        T("blk.0.attn_q.bias", TD, 1, 0);
        T("blk.0.attn_k.bias", TD / 2, 1, 0);
        T("blk.0.attn_v.bias", TD / 2, 1, 0);
    }
    if (sp->rope_freqs) T("rope_freqs.weight", TD / 2 / 2, 1, 0);   // head_size / 2
#undef T
    int n_out = nt - (sp->omit ? 1 : 0);
    int n_kv = 17 + (sp->alignment ? 1 : 0) + (sp->eos_id ? 1 : 0) + (sp->chat_template ? 1 : 0);
    size_t start = b->n;

    put(b, "GGUF", 4);
    put_u32(b, sp->version ? sp->version : 3);
    put_u64(b, (uint64_t)n_out);
    put_u64(b, (uint64_t)n_kv);
    // metadata (every value type appears at least once)
    const char *arch = sp->arch ? sp->arch : sp->qwen2 ? "qwen2" : "llama";
    const char *kp = sp->qwen2 ? "qwen2" : "llama";   // the keys' prefix
    char k[64];
    put_str(b, "general.architecture"); put_u32(b, 8);
    if (sp->arch_len) { put_u64(b, sp->arch_len); put(b, arch, strlen(arch)); }
    else put_str(b, arch);
    const struct { const char *k; uint32_t v; } u32s[] = {
        { "embedding_length", TD }, { "feed_forward_length", TH },
        { "block_count", 1 }, { "attention.head_count", 2 },
        { "attention.head_count_kv", 1 }, { "context_length", 64 },
    };
    for (int i = 0; i < 6; i++) {
        snprintf(k, sizeof k, "%s.%s", kp, u32s[i].k);
        put_str(b, k); put_u32(b, 4); put_u32(b, u32s[i].v);
    }
    snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", kp);
    put_str(b, k); put_u32(b, 6);
    put_f32(b, sp->hyper ? sp->rms_eps : 1e-6f);
    snprintf(k, sizeof k, "%s.rope.freq_base", kp);
    put_str(b, k); put_u32(b, 12);
    { double d = sp->hyper ? sp->freq_base : 5e5; put(b, &d, 8); }
    put_str(b, "tokenizer.ggml.model"); put_u32(b, 8); put_str(b, "llama");
    const char *toks[TV] = { "<unk>", "<s>", "</s>", "\xe2\x96\x81" "a\xe2\x96\x81" "b" };
    put_str(b, "tokenizer.ggml.tokens"); put_u32(b, 9); put_u32(b, 8);
    put_u64(b, sp->tok_count ? sp->tok_count : TV);
    for (int i = 0; i < TV; i++) put_str(b, toks[i]);
    put_str(b, "tokenizer.ggml.scores"); put_u32(b, 9); put_u32(b, 6); put_u64(b, TV);
    for (int i = 0; i < TV; i++) put_f32(b, (float)-i);
    put_str(b, "tokenizer.ggml.token_type"); put_u32(b, 9); put_u32(b, 5); put_u64(b, TV);
    for (int i = 0; i < TV; i++) put_u32(b, i < 3 ? 3 : 1);
    // unknown keys of the other types, skipped: u8 i8 u16 i16 i32 bool u64
    // i64, and an array of arrays of strings
    put_str(b, "x.small"); put_u32(b, 0); put_u8(b, 1);
    put_str(b, "x.mixed"); put_u32(b, 9); put_u32(b, 9); put_u64(b, 2);
    for (int i = 0; i < 2; i++) { put_u32(b, 8); put_u64(b, 1); put_str(b, "zz"); }
    put_str(b, "x.many"); put_u32(b, 9); put_u32(b, 11); put_u64(b, 3);
    for (int i = 0; i < 3; i++) put_u64(b, (uint64_t)i);
    put_str(b, "x.flags"); put_u32(b, 9); put_u32(b, 7); put_u64(b, 2); put_u8(b, 1); put_u8(b, 0);
    if (sp->alignment) { put_str(b, "general.alignment"); put_u32(b, 4); put_u32(b, (uint32_t)sp->alignment); }
    if (sp->eos_id) { put_str(b, "tokenizer.ggml.eos_token_id"); put_u32(b, 4); put_u32(b, (uint32_t)sp->eos_id); }
    if (sp->chat_template) {
        uint64_t n = sp->chat_template_len ? sp->chat_template_len : strlen(sp->chat_template);
        put_str(b, "tokenizer.chat_template"); put_u32(b, 8);
        put_u64(b, n); put(b, sp->chat_template, n);
    }

    uint64_t align = sp->alignment > 0 ? (uint64_t)sp->alignment : 32;
    uint64_t off = 0, offs[16], prev = 0;
    for (int i = 0; i < nt; i++) {
        offs[i] = off;
        off += type_bytes(ts[i].type, ts[i].ne0 * ts[i].ne1);
        off = (off + align - 1) / align * align;
    }
    for (int i = 0; i < nt; i++) {
        if (sp->omit && !strcmp(ts[i].name, sp->omit)) continue;
        int bad = sp->bad_name && !strcmp(ts[i].name, sp->bad_name);
        put_str(b, ts[i].name);
        int nd = ts[i].ne1 == 1 ? 1 : 2;
        put_u32(b, (uint32_t)nd);
        put_u64(b, ts[i].ne0);
        if (nd == 2) put_u64(b, ts[i].ne1);
        put_u32(b, bad && sp->bad_type ? sp->bad_type : ts[i].type);
        uint64_t o = offs[i];
        if (bad && sp->overlap) o = prev;
        if (bad) o += (uint64_t)sp->off_delta;
        put_u64(b, o);
        prev = offs[i];
    }
    while ((b->n - start) % align) put_u8(b, 0);
    size_t data0 = b->n;
    for (int i = 0; i < nt; i++) {
        while (b->n < data0 + offs[i]) put_u8(b, 0);
        int64_t at = sp->poison && !strcmp(ts[i].name, sp->poison) ? (int64_t)sp->poison_at : -1;
        if (!strcmp(ts[i].name, "rope_freqs.weight"))   // divisors: 1, 2, ...
            for (uint64_t j = 0; j < ts[i].ne0; j++) put_f32(b, (float)(j + 1));
        else
            put_data(b, ts[i].type, ts[i].ne0 * ts[i].ne1, at, sp->poison_inf);
    }
    while ((b->n - data0) % align) put_u8(b, 0);
}

/* GPT-2's character for byte c (bytes_to_unicode), as UTF-8 into p. */
static void byte_char_utf8(int c, char p[3])
{
#define OWN(x) (((x) >= 0x21 && (x) <= 0x7E) || ((x) >= 0xA1 && (x) <= 0xAC) || (x) >= 0xAE)
    int u = c;
    if (!OWN(c)) {
        int k = 0;
        for (int x = 0; x < c; x++) k += !OWN(x);
        u = 0x100 + k;
    }
#undef OWN
    if (u < 0x80) {
        p[0] = (char)u;
        p[1] = 0;
    } else {
        p[0] = (char)(0xC0 | (u >> 6));
        p[1] = (char)(0x80 | (u & 0x3F));
        p[2] = 0;
    }
}

static void kv_strs(tsr_gbuf *b, const char *k, const char *const *v, int n)
{
    put_str(b, k);
    put_u32(b, 9);   // array
    put_u32(b, 8);   // of strings
    put_u64(b, (uint64_t)n);
    for (int i = 0; i < n; i++) put_str(b, v[i]);
}

void tsr_gguf_bpe_vocab(tsr_gbuf *b, const char *model, const char *pre,
                        const char *const *merges, int n_merges)
{
    static char chars[256][3];
    const char *toks[TSR_GGUF_BPE_VOCAB];
    for (int c = 0; c < 256; c++) {
        byte_char_utf8(c, chars[c]);
        toks[c] = chars[c];
    }
    toks[256] = "ab";
    toks[257] = "\xC4\xA0" "a";    // "Ġa"
    toks[258] = "\xC4\xA0" "ab";   // "Ġab"
    toks[259] = "<|im_end|>";
    toks[260] = "<|user|>";
    static const int32_t types[2] = { 3, 4 };   // control, user-defined
    put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, 0);   // no tensors
    put_u64(b, 3 + (pre != NULL) + (merges != NULL));
    put_str(b, "tokenizer.ggml.model");
    put_u32(b, 8);
    put_str(b, model);
    if (pre) {
        put_str(b, "tokenizer.ggml.pre");
        put_u32(b, 8);
        put_str(b, pre);
    }
    kv_strs(b, "tokenizer.ggml.tokens", toks, TSR_GGUF_BPE_VOCAB);
    put_str(b, "tokenizer.ggml.token_type");
    put_u32(b, 9);
    put_u32(b, 5);   // int32
    put_u64(b, TSR_GGUF_BPE_VOCAB);
    for (int i = 0; i < TSR_GGUF_BPE_VOCAB; i++) put_u32(b, (uint32_t)(i < 259 ? 1 : types[i - 259]));
    if (merges) kv_strs(b, "tokenizer.ggml.merges", merges, n_merges);
}
