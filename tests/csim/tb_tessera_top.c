/*
 * tb_tessera_top.c - C-simulation testbench of the persistent kernel top
 * tessera_top (kernels/tsr_kernel.c), for Vitis csim / cosim and for gcc.
 *
 *   IMAGE (make_image.c) -> the command ring, as the driver's command layer
 *   (driver/kcmd.c) writes it: CONFIGURE, LOAD x n_chunks, RESET, PREFILL
 *   the prompt, DECODE greedy (K times, each then READ_LOGITS, when
 *   LOGITS is given), READ_COUNTERS, EXIT
 *   -> tessera_top(ctl, in, in, out, out_f) serves the ring, returns at EXIT
 *   -> every response (sequence number, status), the fit, the decoded ids
 *   against REF (llama2.c run.c's ids, BOS first, one decimal a line; or
 *   the ids of an emulator, emu_ref.c), the logits against LOGITS bit for
 *   bit, the kernel's counters -> exit 0 on a match, 1 otherwise
 *
 * usage: tb_tessera_top IMAGE.timg REF.tokens [max_new [LOGITS.f32 [CYCLES]]]
 *        max_new (default or 0: all of REF) caps the decoded tokens, so
 *        cosim can check a few tokens through the RTL in reasonable time.
 *        LOGITS.f32 (K x vocab fp32 values, e.g. from emu_ref.c): the
 *        decode runs as K DECODE commands (of want * (i + 1) / K - want *
 *        i / K tokens), each followed by READ_LOGITS, which must return
 *        exactly the i-th vocab values' bits.
 *        CYCLES: the cycles the last token's pass must have been charged
 *        (cyc - cyc_mark over every region): `tessera plan`'s projection
 *        for that position (make csim-gcc passes it).
 *
 * The whole ring is written before the start: C simulation runs
 * tessera_top on this thread, so nothing could write the ring while it
 * runs.  The kernel reads an entry only once its sequence word has the
 * entry's number, so a ring filled in advance is served as one filled
 * live: the same entries, words and order (the host keeps at most two
 * LOADs in flight, reusing two halves of `in`; here every command has its
 * own payload and answer region instead, since nothing is reused).
 *
 * An image larger than `in` (stories15M in Q8_0: 17 MB of weights against
 * the 2 Mi words, 8 MiB, of `in`) cannot be written in advance.  Built with
 * -DTB_LIVE_RING (and -pthread; gcc only, not Vitis csim or cosim), the
 * testbench then runs tessera_top on a second thread and serves the ring
 * live as the driver does, one command at a time: each payload at the
 * start of `in`, the entry, its sequence word last, then the response's
 * sequence word awaited before the next entry (the ring wraps at
 * TSR_RING_MAX entries, as the kernel's does).
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

#ifdef TB_LIVE_RING
#include <pthread.h>
#include <time.h>
#endif

#define TIMG_MAGIC   0x474D4954u  /* "TIMG" */
#define TIMG_VERSION 2u
#define TB_MAX_REF   4096
#define TB_MAX_CMDS  16384   /* commands one run submits, at most */
#define TB_MAX_CHECKS 64     /* logits checkpoints (K), at most */
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
/* the link ports: a model on one card (stage 0) never touches them */
static float link_in[TSR_LINK_WORDS];
static float link_out[TSR_LINK_WORDS];

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
    uint32_t size;       /* ring entries (ctl[TSR_CTL_RING_N])            */
    uint32_t in_at;      /* next free word of `in`                        */
    uint32_t out_at;     /* next free word of `out`                       */
    int      live;       /* 1: tessera_top runs on a thread (TB_LIVE_RING) */
} ring;

/* Per command: its op, and (live ring) its status and answer words. */
static uint32_t cmd_op[TB_MAX_CMDS];
static int cmd_status[TB_MAX_CMDS];
static uint32_t cmd_out_words[TB_MAX_CMDS];

/* Response of entry k of a ring of n entries: its sequence number must be
 * seq; returns its status, or -1 when it has none. */
static int response(uint32_t n, uint32_t k, uint32_t seq, uint32_t *out_words)
{
    const volatile uint32_t *r = ctl + TSR_CTL_RESP(n) + k * TSR_RESP_WORDS;
    if (r[TSR_RESP_SEQ] != seq) return -1;
    if (out_words) *out_words = r[TSR_RESP_OUT_WORDS];
    return (int)r[TSR_RESP_STATUS];
}

#ifdef TB_LIVE_RING
static void *kernel_thread(void *arg)
{
    (void)arg;
    tessera_top(ctl, in, (const float *)(const void *)in, out, out_f, link_in, link_out);
    return NULL;
}

/* Wait for command seq's response at entry k (the kernel publishes its
 * sequence word last). */
static void await(const ring *r, uint32_t k, uint32_t seq)
{
    const volatile uint32_t *w = ctl + TSR_CTL_RESP(r->size) + k * TSR_RESP_WORDS + TSR_RESP_SEQ;
    const struct timespec nap = { 0, 50000 };
    while (*w != seq) nanosleep(&nap, NULL);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
#endif

/* Append a command: its payload (in_words words, or none) to `in`, room for
 * its answer in `out`, the entry's words, then its sequence word.  Returns
 * the answer's offset in `out`, or -1 when the ring or a buffer is full.
 * Live ring: the payload at the start of `in`, and the command served
 * before this returns. */
static long submit(ring *r, uint32_t op, uint32_t slot, const uint32_t a[6], const uint32_t *pay,
                   uint32_t in_words, uint32_t out_words)
{
    if (r->live) r->in_at = 0;
    if ((!r->live && r->n == r->size) || r->n == TB_MAX_CMDS ||
        in_words > TSR_IN_WORDS - r->in_at || out_words > TSR_OUT_WORDS - r->out_at)
        return -1;
    uint32_t k = r->n % r->size, seq = r->n + 1u;
    if (in_words) memcpy(in + r->in_at, pay, 4u * (size_t)in_words);
    volatile uint32_t *e = ctl + TSR_CTL_CMD0 + k * TSR_CMD_WORDS;
    e[TSR_CMD_OP] = op;
    e[TSR_CMD_SLOT] = slot;
    e[TSR_CMD_IN_OFF] = r->in_at;
    e[TSR_CMD_IN_WORDS] = in_words;
    e[TSR_CMD_OUT_OFF] = r->out_at;
    e[TSR_CMD_OUT_WORDS] = out_words;
    for (int i = 0; i < 6; i++) e[TSR_CMD_A0 + i] = a ? a[i] : 0u;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);   /* the payload and words before the number */
    e[TSR_CMD_SEQ] = seq;            /* last: the kernel waits for it */
    cmd_op[r->n] = op;
#ifdef TB_LIVE_RING
    if (r->live) {
        await(r, k, seq);
        cmd_status[r->n] = response(r->size, k, seq, &cmd_out_words[r->n]);
    }
#endif
    long at = (long)r->out_at;
    r->n++;
    r->in_at += in_words;
    r->out_at += out_words;
    return at;
}

/* Command i's status (-1: no response) and answer words, after the run. */
static int status_of(const ring *r, uint32_t i, uint32_t *out_words)
{
    if (r->live) {
        if (out_words) *out_words = cmd_out_words[i];
        return cmd_status[i];
    }
    return response(r->size, i, i + 1u, out_words);
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

/* The image's LOAD chunks fit `in` at once (each its own payload region). */
static int fits_in(const uint32_t *w, size_t nw, size_t at, uint32_t n_chunks)
{
    uint64_t words = 0;
    if (n_chunks > TSR_RING_MAX - 8u) return 0;
    for (uint32_t c = 0; c < n_chunks && at + 5 <= nw; c++) {
        words += w[at + 4];
        at += 5 + (size_t)w[at + 4];
    }
    return words + 256u <= TSR_IN_WORDS;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6) {
        fprintf(stderr, "usage: %s IMAGE.timg REF.tokens [max_new [LOGITS.f32 [CYCLES]]]\n",
                argv[0]);
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
    if (argc >= 4 && atoi(argv[3]) > 0 && (uint32_t)atoi(argv[3]) < want)
        want = (uint32_t)atoi(argv[3]);
    const uint32_t vocab = w[at + 6];        /* tsr_kconfig's vocab_size */
    size_t nl = 0;
    uint32_t *want_logits = NULL;            /* (vocab,) fp32 bits, or none */
    if (argc >= 5) {
        want_logits = read_words(argv[4], &nl);
        if (!want_logits || nl == 0 || nl % vocab || nl / vocab > TB_MAX_CHECKS ||
            nl / vocab > want) {
            fprintf(stderr, "tb_tessera_top: %s: not K x %u fp32 logits (1 <= K <= %d, %u)\n",
                    argv[4], vocab, TB_MAX_CHECKS, want);
            free(want_logits);
            free(w);
            return 1;
        }
        if (vocab > TSR_OUT_WORDS) {
            free(want_logits);
            return fail("the vocabulary exceeds the kernel's `out` depth", argv[1], w);
        }
    }

    /* ---- the ring: the host's command sequence for one model and one prompt ---- */
    size_t cfg_at = at;
    uint32_t n_chunks = w[cfg_at + TSR_KCONFIG_WORDS];
    ring r = { 0, TSR_RING_MAX, 0, 0, 0 };
    if (!fits_in(w, nw, cfg_at + TSR_KCONFIG_WORDS + 1, n_chunks)) {
#ifdef TB_LIVE_RING
        r.live = 1;
#else
        free(want_logits);
        return fail("the image does not fit the kernel's `in` depth and ring at once (build "
                    "with -DTB_LIVE_RING -pthread to serve the ring live)", argv[1], w);
#endif
    }
    ctl[TSR_CTL_RING_N] = r.size;   /* the header, before the start */
#ifdef TB_LIVE_RING
    pthread_t kt;
    if (r.live && pthread_create(&kt, NULL, kernel_thread, NULL) != 0) {
        free(want_logits);
        return fail("cannot start the kernel's thread", NULL, w);
    }
#endif
    long fit_at = submit(&r, TSR_OP_CONFIGURE, 0, NULL, w + at, TSR_KCONFIG_WORDS, TSR_KFIT_WORDS);
    at += TSR_KCONFIG_WORDS + 1;
    int bad_image = 0;
    for (uint32_t c = 0; c < n_chunks; c++) {
        if (at + 5 > nw || w[at + 4] > nw - at - 5) {
            fprintf(stderr, "tb_tessera_top: %s: truncated at chunk %u\n", argv[1], c);
            bad_image = 1;
            break;
        }
        const uint32_t *h = w + at;          /* pe, region, offset, length, n_words */
        const uint32_t a[6] = { h[0], h[1], h[2], h[3], 0, 0 };
        if (submit(&r, TSR_OP_LOAD, 0, a, h + 5, h[4], 0) < 0) {
            fprintf(stderr, "tb_tessera_top: %s: the commands do not fit the ring or the "
                    "buffers\n", argv[1]);
            bad_image = 1;
            break;
        }
        at += 5 + h[4];
    }
    /* K decode chunks, each followed by READ_LOGITS when logits are given */
    const uint32_t checks = want_logits ? (uint32_t)(nl / vocab) : 1u;
    long dec_at[TB_MAX_CHECKS], cnt_at = -1, lg_at[TB_MAX_CHECKS];
    uint32_t dec_k[TB_MAX_CHECKS], dec_n[TB_MAX_CHECKS], lg_k[TB_MAX_CHECKS];
    static float got_logits[TB_MAX_CHECKS][TSR_OUT_WORDS];   /* live: copied per READ_LOGITS */
    int unplaced = 0;
    const uint32_t cnt_words = 2u * (TSR_KCOUNTERS_FIXED + TSR_PES);
    if (!bad_image) {
        submit(&r, TSR_OP_RESET, 0, NULL, NULL, 0, 0);
        const uint32_t pre[6] = { n_prompt, 0, 0, 0, 0, 0 };
        submit(&r, TSR_OP_PREFILL, 0, pre, prompt, n_prompt, 0);
        /* exactly `want` tokens: a BOS/EOS does not stop it (nor llama2.c's
         * reference, which ends at its step count) */
        const uint32_t sampler[2] = { f32_bits(0.0f), f32_bits(1.0f) };   /* greedy */
        for (uint32_t i = 0; i < checks; i++) {
            dec_n[i] = (uint32_t)((uint64_t)want * (i + 1u) / checks - (uint64_t)want * i / checks);
            const uint32_t dec[6] = { dec_n[i], (uint32_t)TB_SEED, (uint32_t)(TB_SEED >> 32),
                                      (i == 0 ? TSR_DEC_RESEED : 0u) | TSR_DEC_IGNORE_STOP, 0, 0 };
            dec_k[i] = r.n;
            dec_at[i] = submit(&r, TSR_OP_DECODE, 0, dec, sampler, 2, dec_n[i] + 1u);
            if (dec_at[i] < 0) unplaced = 1;
            if (!want_logits) continue;
            /* the answer is in out_f only: word i * vocab when the ring
             * is filled in advance (it must fit), word 0 and copied out
             * when it is served live */
            uint32_t keep = r.out_at;
            r.out_at = r.live ? 0u : i * vocab;
            lg_k[i] = r.n;
            lg_at[i] = r.out_at + vocab <= TSR_OUT_WORDS
                           ? submit(&r, TSR_OP_READ_LOGITS, 0, NULL, NULL, 0, vocab) : -1;
            r.out_at = keep;
            if (lg_at[i] < 0) unplaced = 1;
            else if (r.live) memcpy(got_logits[i], out_f, 4u * (size_t)vocab);
        }
        cnt_at = submit(&r, TSR_OP_READ_COUNTERS, 0, NULL, NULL, 0, cnt_words);
    }
    long exit_at = submit(&r, TSR_OP_EXIT, 0, NULL, NULL, 0, 0);

    /* ---- the card: started once, returns at EXIT ---- */
#ifdef TB_LIVE_RING
    if (r.live) pthread_join(kt, NULL);
#endif
    if (!r.live && !bad_image) tessera_top(ctl, in, (const float *)(const void *)in, out, out_f, link_in, link_out);
    if (bad_image) {
        free(want_logits);
        free(w);
        return 1;
    }
    if (fit_at < 0 || unplaced || cnt_at < 0 || exit_at < 0) {
        free(want_logits);
        return fail("the commands do not fit the ring or the buffers", argv[1], w);
    }

    if (ctl[TSR_CTL_SERVING] != 1u) {
        free(want_logits);
        return fail("the kernel never served its ring", NULL, w);
    }
    static const char *const names[TSR_OP_COUNT] = { "NOP", "LOAD", "CONFIGURE", "RESET",
                                                     "TRUNCATE", "PREFILL", "DECODE",
                                                     "READ_LOGITS", "READ_COUNTERS", "EXIT",
                                                     "DECODE_BATCH" };
    for (uint32_t k = 0; k < r.n; k++) {
        uint32_t op = cmd_op[k];
        int st = status_of(&r, k, NULL);
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
    uint32_t n_dec = 0;                      /* tokens decoded, over the chunks */
    int bad = 0;
    for (uint32_t c = 0; c < checks; c++) {
        const uint32_t *ids = out + dec_at[c];   /* count, then (count,) ids */
        uint32_t got = 0;
        status_of(&r, dec_k[c], &got);
        if (ids[0] != dec_n[c] || got != dec_n[c] + 1u) {
            fprintf(stderr, "tb_tessera_top: decoded %u tokens (answer %u words), expected %u\n",
                    ids[0], got, dec_n[c]);
            fails++;
        }
        for (uint32_t i = 0; i < ids[0] && i < dec_n[c]; i++, n_dec++)
            if ((int32_t)ids[1 + i] != ref[n_prompt + n_dec] && bad++ < 5)
                fprintf(stderr, "tb_tessera_top: token %u (position %u) is %u, reference %d\n",
                        n_dec, n_prompt + n_dec, ids[1 + i], ref[n_prompt + n_dec]);
    }
    fails += bad < 5 ? bad : 5;

    /* ---- each chunk's last pass's logits, bit for bit ---- */
    if (want_logits) {
        int same = 1;
        for (uint32_t c = 0, upto = 0; c < checks; c++) {
            uint32_t lg_n = 0, differ = 0, first = 0;
            float worst = 0.0f;
            const float *g = r.live ? got_logits[c] : out_f + lg_at[c];   /* (vocab,) */
            const uint32_t *x = want_logits + (size_t)c * vocab;          /* (vocab,) */
            upto += dec_n[c];
            status_of(&r, lg_k[c], &lg_n);
            for (uint32_t i = 0; i < vocab; i++) {
                if (f32_bits(g[i]) == x[i]) continue;
                float xf;
                memcpy(&xf, &x[i], 4);
                float d = g[i] - xf;
                if (d < 0) d = -d;
                if (differ++ == 0) first = i;
                if (d > worst) worst = d;
            }
            if (lg_n != vocab || differ) {
                fprintf(stderr, "tb_tessera_top: logits of token %u (position %u): %u words "
                        "read, %u of %u differ from %s (first at %u, largest difference %g)\n",
                        upto - 1u, n_prompt + upto - 1u, lg_n, differ, vocab, argv[4], first,
                        (double)worst);
                fails++;
                same = 0;
            }
        }
        if (same)
            printf("tb_tessera_top: logits: %u x %u bit-identical to %s\n", checks, vocab,
                   argv[4]);
    }

    /* ---- what the kernel counted ---- */
    const uint32_t *kc = out + cnt_at;
    const uint32_t f_sampled = (uint32_t)(offsetof(tsr_kcounters, tokens_sampled) / 8u);
    const uint32_t f_cyc = (uint32_t)(offsetof(tsr_kcounters, cyc) / 8u);
    const uint32_t f_mark = (uint32_t)(offsetof(tsr_kcounters, cyc_mark) / 8u);
    if (counter(kc, TSR_OP_LOAD) != n_chunks || counter(kc, TSR_OP_DECODE) != checks ||
        counter(kc, f_sampled) != n_dec) {
        fprintf(stderr, "tb_tessera_top: counters: %llu LOADs, %llu DECODEs, %llu tokens sampled; "
                "expected %u, %u, %u\n", (unsigned long long)counter(kc, TSR_OP_LOAD),
                (unsigned long long)counter(kc, TSR_OP_DECODE),
                (unsigned long long)counter(kc, f_sampled), n_chunks, checks, n_dec);
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
    if (argc == 6 && strtoull(argv[5], NULL, 10) != total) {
        fprintf(stderr, "tb_tessera_top: the last token's %llu cycles are not plan's %s\n",
                (unsigned long long)total, argv[5]);
        fails++;
    }

    if (fails == 0)
        printf("tb_tessera_top: PASS: %u prompt + %u decoded tokens match the reference "
               "(profile %s, %u commands%s)\n", n_prompt, want, TSR_PROFILE_NAME, r.n,
               r.live ? ", ring served live" : "");
    else
        printf("tb_tessera_top: FAIL: %d mismatch(es)\n", fails);
    free(want_logits);
    free(w);
    return fails ? 1 : 0;
}
