/*
 * tb_tessera_top.c - C-simulation testbench of the persistent kernel top
 * tessera_top (kernels/tsr_kernel.c), for Vitis csim / cosim and for gcc.
 *
 *   IMAGE (make_image.c) -> the command ring, as the driver's command layer
 *   (driver/kcmd.c) writes it: CONFIGURE, LOAD x n_chunks, RESET, PREFILL
 *   the prompt, DECODE greedy, READ_COUNTERS, EXIT
 *   -> tessera_top(ctl, in, in, out, out_f) serves the ring, returns at EXIT
 *   -> every response (sequence number, status), the fit, the decoded ids
 *   against REF (llama2.c run.c's ids, BOS first, one decimal a line), the
 *   kernel's counters -> exit 0 on a match, 1 otherwise
 *
 * usage: tb_tessera_top IMAGE.timg REF.tokens [max_new]
 *        max_new (default: all of REF) caps the decoded tokens, so cosim can
 *        check a few tokens through the RTL in reasonable time.
 *
 * The whole ring is written before the start: C simulation runs
 * tessera_top on this thread, so nothing could write the ring while it
 * runs.  The kernel reads an entry only once its sequence word has the
 * entry's number, so a ring filled in advance is served as one filled
 * live: the same entries, words and order (the host keeps at most two
 * LOADs in flight, reusing two halves of `in`; here every command has its
 * own payload and answer region instead, since nothing is reused).
 *
 * Build: the kernel sources with -DTSR_CSIM (the synthesis view of the
 * device state and of the ring's waits, without __SYNTHESIS__) and the
 * profile header, e.g. -DTSR_PROFILE_HEADER='"profiles/profile_stories260k.h"'.
 * The testbench calls tessera_top only, as XRT starts it on a card; it uses
 * no driver, emulator or libc beyond stdio/stdlib/string.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tsr_kernel.h"

#define TIMG_MAGIC   0x474D4954u  /* "TIMG" */
#define TIMG_VERSION 2u
#define TB_MAX_REF   4096
#define TB_SEED      0x9E3779B97F4A7C15ull   /* DECODE's RNG seed (greedy: unused) */

/* The link buffers, at the m_axi depths of tessera_top: cosim moves exactly
 * `depth` words behind each pointer.  `in` is bound to both of its ports
 * (uint32 and fp32), as the host binds one buffer object to in_w and in_f:
 * the kernel only reads it.  The answers get two buffers, out for out_w and
 * out_f for out_f (no command here writes floats): cosim keeps one memory
 * image per pointer argument and copies each back after the run, so one
 * buffer behind both would have out_f's untouched image written over
 * out_w's tokens (UG1399, "pragma HLS alias": pointers are independent
 * channels). */
static uint32_t ctl[TSR_CTL_DEPTH];
static uint32_t in[TSR_IN_DEPTH];
static uint32_t out[TSR_OUT_DEPTH];
static float out_f[TSR_OUT_DEPTH];

/* ------------------------------------------------------------------------ */
/* Input                                                                      */

/* Whole file into a malloc'd word array; *n gets the word count. */
static uint32_t *read_words(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1u << 16, len = 0, got;
    uint32_t *w = malloc(cap * sizeof *w);   /* (cap,) */
    while (w && (got = fread(w + len, sizeof *w, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint32_t *g = realloc(w, 2 * cap * sizeof *w);
            if (!g) { free(w); w = NULL; break; }
            w = g;
            cap *= 2;
        }
    }
    fclose(f);
    *n = len;
    return w;
}

/* REF: decimal ids, whitespace separated; returns the count or -1. */
static int read_ref(const char *path, int32_t *ids, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    long v;
    while (n < max && fscanf(f, "%ld", &v) == 1) ids[n++] = (int32_t)v;
    fclose(f);
    return n;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ------------------------------------------------------------------------ */
/* The ring                                                                   */

typedef struct ring {
    uint32_t n;          /* entries written                               */
    uint32_t in_at;      /* next free word of `in`                        */
    uint32_t out_at;     /* next free word of `out`                       */
} ring;

/* Append a command: its payload (in_words words, or none) to `in`, room for
 * its answer in `out`, the entry's words, then its sequence word.  Returns
 * the answer's offset in `out`, or -1 when the ring or a buffer is full. */
static long submit(ring *r, uint32_t op, uint32_t slot, const uint32_t a[6], const uint32_t *pay,
                   uint32_t in_words, uint32_t out_words)
{
    if (r->n == TSR_RING_MAX || in_words > TSR_IN_WORDS - r->in_at ||
        out_words > TSR_OUT_WORDS - r->out_at)
        return -1;
    if (in_words) memcpy(in + r->in_at, pay, 4u * (size_t)in_words);
    uint32_t *e = ctl + TSR_CTL_CMD0 + r->n * TSR_CMD_WORDS;
    e[TSR_CMD_OP] = op;
    e[TSR_CMD_SLOT] = slot;
    e[TSR_CMD_IN_OFF] = r->in_at;
    e[TSR_CMD_IN_WORDS] = in_words;
    e[TSR_CMD_OUT_OFF] = r->out_at;
    e[TSR_CMD_OUT_WORDS] = out_words;
    for (int i = 0; i < 6; i++) e[TSR_CMD_A0 + i] = a ? a[i] : 0u;
    e[TSR_CMD_SEQ] = r->n + 1u;      /* last: the kernel waits for it */
    long at = (long)r->out_at;
    r->n++;
    r->in_at += in_words;
    r->out_at += out_words;
    return at;
}

/* Response k: its sequence number must be k + 1; returns its status. */
static int response(uint32_t n, uint32_t k, uint32_t *out_words)
{
    const uint32_t *r = ctl + TSR_CTL_RESP(n) + k * TSR_RESP_WORDS;
    if (r[TSR_RESP_SEQ] != k + 1u) return -1;
    if (out_words) *out_words = r[TSR_RESP_OUT_WORDS];
    return (int)r[TSR_RESP_STATUS];
}

/* Counter field i (uint64, as (low, high) words, in tsr_kcounters' field
 * order) of a READ_COUNTERS answer. */
static uint64_t counter(const uint32_t *a, uint32_t i)
{
    return (uint64_t)a[2u * i] | ((uint64_t)a[2u * i + 1u] << 32);
}

/* ------------------------------------------------------------------------ */
/* Main                                                                       */

static int fail(const char *msg, const char *arg, uint32_t *w)
{
    fprintf(stderr, "tb_tessera_top: %s%s%s\n", arg ? arg : "", arg ? ": " : "", msg);
    free(w);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s IMAGE.timg REF.tokens [max_new]\n", argv[0]);
        return 2;
    }
    size_t nw = 0;
    uint32_t *w = read_words(argv[1], &nw);  /* (nw,) the image file */
    static int32_t ref[TB_MAX_REF];
    int n_ref = read_ref(argv[2], ref, TB_MAX_REF);
    if (!w || nw < 3 || w[0] != TIMG_MAGIC || w[1] != TIMG_VERSION)
        return fail("not a version 2 TIMG image (tests/csim/make_image.c)", argv[1], w);
    if (n_ref < 2) return fail("no reference token ids", argv[2], w);

    /* the prompt, then the CONFIGURE payload */
    size_t at = 2;
    uint32_t n_prompt = w[at++];
    if (n_prompt == 0 || (int)n_prompt >= n_ref || at + n_prompt + TSR_KCONFIG_WORDS + 1 > nw)
        return fail("truncated header", argv[1], w);
    const uint32_t *prompt = w + at;         /* (n_prompt,) */
    at += n_prompt;
    int fails = 0;
    for (uint32_t i = 0; i < n_prompt; i++)
        if ((int32_t)prompt[i] != ref[i]) {
            fprintf(stderr, "tb_tessera_top: prompt token %u is %u, reference %d\n", i, prompt[i],
                    ref[i]);
            fails++;
        }
    uint32_t want = (uint32_t)n_ref - n_prompt;
    if (argc == 4 && (uint32_t)atoi(argv[3]) < want) want = (uint32_t)atoi(argv[3]);

    /* ---- the ring: the host's command sequence for one model and one prompt ---- */
    ring r = { 0, 0, 0 };
    long fit_at = submit(&r, TSR_OP_CONFIGURE, 0, NULL, w + at, TSR_KCONFIG_WORDS, TSR_KFIT_WORDS);
    at += TSR_KCONFIG_WORDS;
    uint32_t n_chunks = w[at++];
    for (uint32_t c = 0; c < n_chunks; c++) {
        if (at + 5 > nw || w[at + 4] > nw - at - 5) {
            fprintf(stderr, "tb_tessera_top: %s: truncated at chunk %u\n", argv[1], c);
            free(w);
            return 1;
        }
        const uint32_t *h = w + at;          /* pe, region, offset, length, n_words */
        const uint32_t a[6] = { h[0], h[1], h[2], h[3], 0, 0 };
        if (submit(&r, TSR_OP_LOAD, 0, a, h + 5, h[4], 0) < 0)
            return fail("the image does not fit the kernel's `in` depth and ring at once", argv[1],
                        w);
        at += 5 + h[4];
    }
    submit(&r, TSR_OP_RESET, 0, NULL, NULL, 0, 0);
    const uint32_t pre[6] = { n_prompt, 0, 0, 0, 0, 0 };
    submit(&r, TSR_OP_PREFILL, 0, pre, prompt, n_prompt, 0);
    const uint32_t dec[6] = { want, (uint32_t)TB_SEED, (uint32_t)(TB_SEED >> 32), TSR_DEC_RESEED,
                              0, 0 };
    const uint32_t sampler[2] = { f32_bits(0.0f), f32_bits(1.0f) };   /* greedy */
    long dec_at = submit(&r, TSR_OP_DECODE, 0, dec, sampler, 2, want + 1u);
    const uint32_t cnt_words = 2u * (TSR_KCOUNTERS_FIXED + TSR_PES);
    long cnt_at = submit(&r, TSR_OP_READ_COUNTERS, 0, NULL, NULL, 0, cnt_words);
    long exit_at = submit(&r, TSR_OP_EXIT, 0, NULL, NULL, 0, 0);
    if (fit_at < 0 || dec_at < 0 || cnt_at < 0 || exit_at < 0)
        return fail("the commands do not fit the ring or the buffers", argv[1], w);
    ctl[TSR_CTL_RING_N] = r.n;   /* the header, before the start */

    /* ---- the card: started once, returns at EXIT ---- */
    tessera_top(ctl, in, (const float *)(const void *)in, out, out_f);

    if (ctl[TSR_CTL_SERVING] != 1u) return fail("the kernel never served its ring", NULL, w);
    static const char *const names[TSR_OP_COUNT] = { "NOP", "LOAD", "CONFIGURE", "RESET",
                                                     "TRUNCATE", "PREFILL", "DECODE",
                                                     "READ_LOGITS", "READ_COUNTERS", "EXIT",
                                                     "DECODE_BATCH" };
    for (uint32_t k = 0; k < r.n; k++) {
        uint32_t op = ctl[TSR_CTL_CMD0 + k * TSR_CMD_WORDS + TSR_CMD_OP];
        int st = response(r.n, k, NULL);
        if (st == -1) {
            fprintf(stderr, "tb_tessera_top: command %u (%s) has no response\n", k, names[op]);
            fails++;
        } else if (st != TSR_K_OK) {
            fprintf(stderr, "tb_tessera_top: command %u (%s): status %d\n", k, names[op], st);
            fails++;
        }
    }
    const uint32_t *fit = out + fit_at;
    if (fit[TSR_KFIT_STATUS] != TSR_K_OK)
        fprintf(stderr, "tb_tessera_top: CONFIGURE: needs %u int8 words / %u fp32 words / %u KV "
                "words per PE; profile %s has %u / %u / %u\n", fit[TSR_KFIT_W8_WORDS],
                fit[TSR_KFIT_F32_WORDS], fit[TSR_KFIT_KV_WORDS], TSR_PROFILE_NAME,
                (unsigned)TSR_PE_W8_WORDS, (unsigned)TSR_PE_F32_WORDS, (unsigned)TSR_PE_KV_WORDS);

    /* ---- the tokens ---- */
    const uint32_t *ids = out + dec_at;      /* count, then (count,) ids */
    uint32_t got = 0;
    response(r.n, (uint32_t)(r.n - 3u), &got);
    if (ids[0] != want || got != want + 1u) {
        fprintf(stderr, "tb_tessera_top: decoded %u tokens (answer %u words), expected %u\n",
                ids[0], got, want);
        fails++;
    }
    int bad = 0;
    for (uint32_t i = 0; i < ids[0] && i < want && bad < 5; i++)
        if ((int32_t)ids[1 + i] != ref[n_prompt + i]) {
            fprintf(stderr, "tb_tessera_top: token %u (position %u) is %u, reference %d\n", i,
                    n_prompt + i, ids[1 + i], ref[n_prompt + i]);
            bad++;
        }
    fails += bad;

    /* ---- what the kernel counted ---- */
    const uint32_t *kc = out + cnt_at;
    const uint32_t f_sampled = (uint32_t)(offsetof(tsr_kcounters, tokens_sampled) / 8u);
    const uint32_t f_cyc = (uint32_t)(offsetof(tsr_kcounters, cyc) / 8u);
    const uint32_t f_mark = (uint32_t)(offsetof(tsr_kcounters, cyc_mark) / 8u);
    if (counter(kc, TSR_OP_LOAD) != n_chunks || counter(kc, TSR_OP_DECODE) != 1u ||
        counter(kc, f_sampled) != ids[0]) {
        fprintf(stderr, "tb_tessera_top: counters: %llu LOADs, %llu DECODEs, %llu tokens sampled; "
                "expected %u, 1, %u\n", (unsigned long long)counter(kc, TSR_OP_LOAD),
                (unsigned long long)counter(kc, TSR_OP_DECODE),
                (unsigned long long)counter(kc, f_sampled), n_chunks, ids[0]);
        fails++;
    }
    /* the cycles the code charged for the last forward pass and its
     * sampling (cyc - cyc_mark), and the controller's share of them */
    uint64_t total = 0, ctrl = 0;
    for (uint32_t g = 0; g < TSR_RG_COUNT; g++) {
        uint64_t c = counter(kc, f_cyc + g) - counter(kc, f_mark + g);
        total += c;
        if (g < TSR_RG_FIRST_MESH) ctrl += c;
    }
    printf("tb_tessera_top: last token: %llu cycles charged, controller %.1f %%\n",
           (unsigned long long)total, total ? 100.0 * (double)ctrl / (double)total : 0.0);

    if (fails == 0)
        printf("tb_tessera_top: PASS: %u prompt + %u decoded tokens match the reference "
               "(profile %s, %u commands)\n", n_prompt, want, TSR_PROFILE_NAME, r.n);
    else
        printf("tb_tessera_top: FAIL: %d mismatch(es)\n", fails);
    free(w);
    return fails ? 1 : 0;
}
