/*
 * kcmd.c - the command layer (see kcmd.h): what a command's words are,
 * where its payload goes, how its answer comes back.
 *
 *   submit: payload -> in[off]; entry words 1..15 -> ctl ring slot; then
 *           the entry's seq word (publish: after everything else landed)
 *   await:  wait for the response's seq word, read status and words
 *   decode: one sequence a DECODE, several a DECODE_BATCH (one pass a
 *           step for all); submit, then watch each sequence's count word
 *           (the kernel publishes the tokens written to its region) and
 *           stream the new ids; a stop writes the ctl cancel word (one
 *           sequence) or the sequence's slot cancel word (several)
 *
 * Link accounting is the protocol's, whatever the backend: a command costs
 * its TSR_CMD_WORDS words and its payload host->device, its response and
 * the answer words the host reads device->host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcmd.h"
#include "kstatus.h"
#include "model.h"
#include "plan.h"
#include "profiles.h"

#define CMD_BYTES  (4u * TSR_CMD_WORDS)
#define RESP_BYTES (4u * TSR_RESP_WORDS)

/* Waits are slices of this many microseconds, so a lost wake-up costs at
 * most one slice. */
#define WAIT_SLICE_US 1000u

static int kfail(const tsr_kcmd *k, int status, const char *what, tsr_err *e)
{
    return tsr_kstatus_err(status, k->be->name, what, e);
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                   */

typedef struct kcmd_args {
    uint32_t op, slot;
    uint32_t a[6];
    uint32_t in_off;
    const void *in;       /* payload words, or NULL                       */
    uint32_t in_words;
    uint32_t out_words;   /* room for the answer at out[0]                */
} kcmd_args;

/* Wait until command seq has answered; its status and answer length. */
static int await(tsr_kcmd *k, uint32_t seq, int phase, int *status, uint32_t *out_n, tsr_err *e)
{
    uint32_t n = k->info.ring_n, r = TSR_CTL_RESP(n) + ((seq - 1u) % n) * TSR_RESP_WORDS;
    uint32_t v = 0, w[TSR_RESP_WORDS];
    int rc;
    if ((rc = k->be->read(k->b, TSR_BUF_CTL, r + TSR_RESP_SEQ, &v, 1, e))) return rc;
    while (v != seq) {
        /* seq numbers only grow: an older one means "not yet" */
        if ((rc = k->be->wait(k->b, TSR_BUF_CTL, r + TSR_RESP_SEQ, v, 100u * WAIT_SLICE_US, &v, e)))
            return rc;
    }
    if ((rc = k->be->read(k->b, TSR_BUF_CTL, r, w, TSR_RESP_WORDS, e))) return rc;
    k->link.d2h[phase] += RESP_BYTES;
    if (seq > k->done) k->done = seq;
    k->resp_cycles = w[TSR_RESP_CYCLES];
    if (status) *status = (int)w[TSR_RESP_STATUS];
    if (out_n) *out_n = w[TSR_RESP_OUT_WORDS];
    return TSR_OK;
}

/* Queue a command; returns its sequence number in *seq. */
static int submit(tsr_kcmd *k, int phase, const kcmd_args *a, uint32_t *seq, tsr_err *e)
{
    uint32_t n = k->info.ring_n, s = k->seq + 1u;
    int rc;
    if (a->in_words > k->info.words[TSR_BUF_IN] - a->in_off ||
        a->out_words > k->info.words[TSR_BUF_OUT])
        return tsr_seterr(e, TSR_ERR_RANGE, "%s: op %u moves %u/%u words, the buffers hold %u/%u",
                          k->be->name, a->op, a->in_words, a->out_words,
                          k->info.words[TSR_BUF_IN], k->info.words[TSR_BUF_OUT]);
    /* the ring slot must be free: its previous command answered */
    if (s > n && k->done < s - n && (rc = await(k, s - n, phase, NULL, NULL, e))) return rc;
    if (a->in_words && (rc = k->be->write(k->b, TSR_BUF_IN, a->in_off, a->in, a->in_words, e)))
        return rc;
    uint32_t w[TSR_CMD_WORDS] = { 0 };
    w[TSR_CMD_OP] = a->op;
    w[TSR_CMD_SLOT] = a->slot;
    w[TSR_CMD_IN_OFF] = a->in_off;
    w[TSR_CMD_IN_WORDS] = a->in_words;
    w[TSR_CMD_OUT_OFF] = 0;
    w[TSR_CMD_OUT_WORDS] = a->out_words;
    for (int i = 0; i < 6; i++) w[TSR_CMD_A0 + i] = a->a[i];
    uint32_t ent = TSR_CTL_CMD0 + ((s - 1u) % n) * TSR_CMD_WORDS;
    if ((rc = k->be->write(k->b, TSR_BUF_CTL, ent + 1u, w + 1, TSR_CMD_WORDS - 1u, e)) ||
        (rc = k->be->publish(k->b, TSR_BUF_CTL, ent + TSR_CMD_SEQ, s, e)))
        return rc;
    k->seq = s;
    k->link.h2d[phase] += CMD_BYTES + 4ull * a->in_words;
    k->link.invocations[phase]++;
    *seq = s;
    return TSR_OK;
}

/* One command, answered: its status in *status, out_n words of answer
 * read into out (room words at most). */
static int exec(tsr_kcmd *k, int phase, const kcmd_args *a, int *status, void *out,
                uint32_t room, uint32_t *out_n, tsr_err *e)
{
    uint32_t seq, got = 0;
    int rc = submit(k, phase, a, &seq, e);
    if (!rc) rc = await(k, seq, phase, status, &got, e);
    if (rc) return rc;
    if (got > room) got = room;
    if (got && out) {
        if ((rc = k->be->read(k->b, TSR_BUF_OUT, 0, out, got, e))) return rc;
        k->link.d2h[phase] += 4ull * got;
    }
    if (out_n) *out_n = got;
    return TSR_OK;
}

static int simple(tsr_kcmd *k, int phase, uint32_t op, uint32_t slot, uint32_t a0, uint32_t a1,
                  const char *what, tsr_err *e)
{
    kcmd_args a = { .op = op, .slot = slot, .a = { a0, a1 } };
    int status = 0, rc = exec(k, phase, &a, &status, NULL, 0, NULL, e);
    return rc ? rc : status ? kfail(k, status, what, e) : TSR_OK;
}

/* The kernel's stop rule: the configured model's BOS or EOS. */
static int stop_token(const tsr_kcmd *k, const tsr_kdec *q, int tok)
{
    return !q->smp.ignore_stop && ((uint32_t)tok == k->cfg.bos || (uint32_t)tok == k->cfg.eos);
}

/* ------------------------------------------------------------------------ */
/* Pipeline stages: a model split over devices (cards > 1)                    */

/* The stages' host-link counters summed into k->link (its hop counters
 * are its own). */
static void pipe_sum_links(tsr_kcmd *k)
{
    for (int p = 0; p < TSR_PHASE_COUNT; p++) {
        k->link.h2d[p] = k->link.d2h[p] = k->link.invocations[p] = 0;
        for (int s = 0; s < k->cards; s++) {
            k->link.h2d[p] += k->stage[s].link.h2d[p];
            k->link.d2h[p] += k->stage[s].link.d2h[p];
            k->link.invocations[p] += k->stage[s].link.invocations[p];
        }
    }
}

static void pipe_close(tsr_kcmd *k)
{
    for (int s = 0; s < k->cards && k->stage; s++) tsr_kcmd_close(&k->stage[s]);
    free(k->stage);
    free(k->hop_buf);
    free(k->seq_hop);
    k->stage = NULL;
    k->hop_buf = NULL;
    k->seq_hop = NULL;
    k->b = NULL;
    k->started = 0;
}

/* Open spec->cards devices of spec (each with cards = 1), one a stage. */
static int pipe_open(tsr_kcmd *k, const tsr_backend_iface *be, const tsr_devspec *spec, tsr_err *e)
{
    memset(k, 0, sizeof *k);
    k->be = be;
    k->cards = spec->cards;
    for (int s = 0; s < TSR_DEV_MAX_CARDS; s++) k->stage_end[s] = spec->stage_end[s];
    k->stage = calloc((size_t)k->cards, sizeof *k->stage);
    k->hop_buf = malloc(4u * TSR_LINK_WORDS);
    if (!k->stage || !k->hop_buf) {
        pipe_close(k);
        return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", be->name);
    }
    tsr_devspec one = *spec;
    one.cards = 1;
    memset(one.stage_end, 0, sizeof one.stage_end);
    int rc = TSR_OK, ranks = tsr_mpi_ranks();
    /* under mpirun (a build with MPI=1): stage k on rank k, the first here */
    if (ranks > 1 && ranks != k->cards)
        rc = tsr_seterr(e, TSR_ERR_ARG, "%s: cards=%d under mpirun with %d ranks (one stage a "
                        "rank: mpirun -np %d)", be->name, k->cards, ranks, k->cards);
    for (int s = 0; s < k->cards && !rc; s++) {
        const tsr_backend_iface *sbe = be;
#ifdef TSR_HAVE_MPI
        if (ranks > 1 && s > 0) sbe = &tsr_backend_mpi;
#endif
        one.index = ranks > 1 && s > 0 ? s : spec->index;
        if ((rc = tsr_kcmd_open(&k->stage[s], sbe, &one, e))) break;
        if (k->stage[s].info.words[TSR_BUF_LINK_IN] < TSR_LINK_WORDS ||
            k->stage[s].info.words[TSR_BUF_LINK_OUT] < TSR_LINK_WORDS)
            rc = tsr_seterr(e, TSR_ERR_UNSUPPORTED,
                            "%s: cards=%d: this backend has no link ports between its devices "
                            "(a split over devices runs on the emulator: emu:cards=N)",
                            be->name, k->cards);
    }
    if (rc) {
        pipe_close(k);
        return rc;
    }
    k->info = k->stage[0].info;
    k->mesh = k->stage[0].mesh;
    k->batch = spec->batch;
    k->b = k->stage[0].b;
    k->started = 1;
    for (int s = 0; s < TSR_MAX_SLOTS; s++) k->pending[s] = -1;
    return TSR_OK;
}

/* The split of m over the stages: the spec's, or plan's (by bytes). */
static int pipe_split(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    int K = k->cards, L = m->cfg.n_layers;
    if (K > L)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: %d stages for %d layers (at most one a layer)",
                          m->path, K, L);
    if (k->stage_end[0]) {
        if (k->stage_end[K - 1] != L)
            return tsr_seterr(e, TSR_ERR_ARG, "%s: stages end at layer %d, the model has %d "
                              "(layers 0..%d)", m->path, k->stage_end[K - 1] - 1, L, L - 1);
        k->bounds[0] = 0;
        for (int s = 0; s < K; s++) k->bounds[s + 1] = (uint32_t)k->stage_end[s];
        return TSR_OK;
    }
    tsr_kconfig kc;
    int rc = tsr_kcmd_config(k, m, o, &kc, e);
    /* the profile's SLR crossings, as plan counts them */
    const tsr_kprofile *pf = &k->info.prof;
    tsr_cy_slr slr = tsr_cy_slr_of(pf->pes, pf->mesh_cols, (uint32_t)tsr_profile_slrs(k->info.profile),
                                   pf->att_pes);
    if (!rc) tsr_plan_card_split(&kc, pf->sum_lanes, pf->pes, &slr, K, k->bounds);
    return rc;
}

/* Stage s's view of m, and its mesh set to its stage. */
static int pipe_stage(tsr_kcmd *k, int s, const tsr_checkpoint *m, tsr_checkpoint *view,
                      tsr_err *e)
{
    k->stage[s].mesh.stage = (int)tsr_lay_stage(s == 0, s == k->cards - 1);
    return tsr_checkpoint_stage_view(m, (int)k->bounds[s], (int)k->bounds[s + 1], view, e);
}

static int pipe_fit(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o,
                    uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e)
{
    uint64_t need = 0, have = 0;
    int rc = pipe_split(k, m, o, e);
    for (int s = 0; s < k->cards && !rc; s++) {
        tsr_checkpoint view;
        uint64_t n = 0, h = 0;
        if (!(rc = pipe_stage(k, s, m, &view, e))) rc = tsr_kcmd_fit(&k->stage[s], &view, o, &n, &h, e);
        need += n;
        have += h;
    }
    if (need_bytes) *need_bytes = need;
    if (have_bytes) *have_bytes = have;
    return rc;
}

static int pipe_load(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    int rc = pipe_split(k, m, o, e);
    k->loaded = 0;
    for (int s = 0; s < k->cards && !rc; s++) {
        tsr_checkpoint view;
        if (!(rc = pipe_stage(k, s, m, &view, e))) rc = tsr_kcmd_load(&k->stage[s], &view, o, e);
    }
    pipe_sum_links(k);
    if (rc) return rc;
    if ((rc = tsr_kcmd_config(k, m, o, &k->cfg, e))) return rc;   /* the whole model's */
    free(k->seq_hop);
    k->seq_hop = malloc(sizeof *k->seq_hop * TSR_KDEC_MAX * (size_t)k->cfg.dim);
    if (!k->seq_hop) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", k->be->name);
    for (int s = 0; s < TSR_MAX_SLOTS; s++) {
        k->pending[s] = -1;
        k->pos[s] = 0;
        k->clk_ready[s] = 0;
    }
    k->loaded = 1;
    return TSR_OK;
}

/* Stage s's FORWARD of n items of slot started: ids (stage 0's tokens) or
 * the vectors in hop (written to its link-in first); on the last stage
 * with smp, sampling after the single item. */
static int stage_submit(tsr_kcmd *k, int s, int phase, int slot, const int *ids, uint32_t n,
                        const tsr_sampler *smp, int reseed, const float *hop, uint32_t *seq,
                        tsr_err *e)
{
    tsr_kcmd *d = &k->stage[s];
    uint32_t pay[2 + TSR_MAX_BLOCK], words = TSR_LINK_HDR + n * k->cfg.dim;
    int last = s == k->cards - 1, rc;
    float t = smp ? smp->temperature : 0.0f, p = smp ? smp->top_p : 0.0f;
    memcpy(&pay[0], &t, 4);
    memcpy(&pay[1], &p, 4);
    for (uint32_t i = 0; s == 0 && i < n; i++) pay[2 + i] = (uint32_t)ids[i];
    uint32_t flags = last && smp ? TSR_FWDC_SAMPLE | (reseed ? TSR_FWDC_RESEED : 0u) : 0u;
    kcmd_args a = { .op = TSR_OP_FORWARD, .slot = (uint32_t)slot,
                    .a = { n, flags, smp ? (uint32_t)smp->seed : 0u,
                           smp ? (uint32_t)(smp->seed >> 32) : 0u },
                    .in = pay, .in_words = s == 0 ? 2u + n : 2u,
                    .out_words = last && smp ? 1u : 0u };
    /* the hop into this stage: the bytes the previous one sent */
    if (s > 0 && (rc = d->be->write(d->b, TSR_BUF_LINK_IN, 0, hop, words, e))) return rc;
    return submit(d, phase, &a, seq, e);
}

/* Stage s's pass seq of n items answered: on the last stage with a token
 * its id in *next, before it the vectors off its link-out into hop; *cy:
 * the cycles the kernel's accounting charged the pass (every region, its
 * link-in hop included: its response says). */
static int stage_finish(tsr_kcmd *k, int s, int phase, uint32_t seq, uint32_t n, int *next,
                        float *hop, uint64_t *cy, tsr_err *e)
{
    tsr_kcmd *d = &k->stage[s];
    uint32_t words = TSR_LINK_HDR + n * k->cfg.dim, got = 0, out = 0;
    int status = 0, rc = await(d, seq, phase, &status, &got, e);
    if (rc) return rc;
    if (status) return kfail(d, status, "forward", e);
    if (s < k->cards - 1) {
        if ((rc = d->be->read(d->b, TSR_BUF_LINK_OUT, 0, hop, words, e))) return rc;
        k->link.hop[phase] += 4ull * words;
        k->link.hops[phase]++;
    } else if (next) {
        if (got != 1) return tsr_seterr(e, TSR_ERR_DEVICE, "%s: forward: no token", d->be->name);
        if ((rc = d->be->read(d->b, TSR_BUF_OUT, 0, &out, 1, e))) return rc;
        d->link.d2h[phase] += 4u;
        *next = (int)out;
    }
    *cy = d->resp_cycles;
    return TSR_OK;
}

/* Device clocks: a host call begins with every card at the latest clock
 * (the cards idle until the host speaks); returns that time. */
static uint64_t clk_sync(tsr_kcmd *k)
{
    uint64_t t = 0;
    for (int s = 0; s < k->cards; s++) t = k->clk_free[s] > t ? k->clk_free[s] : t;
    for (int s = 0; s < k->cards; s++) k->clk_free[s] = t;
    return t;
}

/* A pass of cy cycles on card s whose input arrived at `ready`: it starts
 * when the card is free too; returns when it ends. */
static uint64_t clk_pass(tsr_kcmd *k, int s, uint64_t ready, uint64_t cy)
{
    uint64_t start = ready > k->clk_free[s] ? ready : k->clk_free[s];
    k->clk_free[s] = start + cy;
    k->clk_busy[s] += cy;
    k->clk_passes[s]++;
    return start + cy;
}

/* The device time of a call that began at t0: until the last card is
 * done. */
static void clk_account(tsr_kcmd *k, int phase, uint64_t t0, uint64_t tokens)
{
    k->dev_cycles[phase] += clk_sync(k) - t0;
    k->dev_tokens[phase] += tokens;
}

/* One FORWARD pass of n tokens ids (1..TSR_MAX_BLOCK) of slot through
 * every stage in turn, each stage's residual vectors moved to the next;
 * with smp, the last stage samples after the single item and *next gets
 * the id.  On the clocks: stage 0 starts once the slot's last token is
 * back (t0 or later), each stage once the one before has sent. */
static int pipe_pass(tsr_kcmd *k, int phase, int slot, const int *ids, uint32_t n,
                     const tsr_sampler *smp, int reseed, int *next, uint64_t t0, tsr_err *e)
{
    int rc = TSR_OK;
    uint64_t t = k->clk_ready[slot] > t0 ? k->clk_ready[slot] : t0, cy = 0;
    for (int s = 0; s < k->cards && !rc; s++) {
        uint32_t seq = 0;
        if (!(rc = stage_submit(k, s, phase, slot, ids, n, smp, reseed, k->hop_buf, &seq, e)))
            rc = stage_finish(k, s, phase, seq, n, smp ? next : NULL, k->hop_buf, &cy, e);
        if (!rc) t = clk_pass(k, s, t, cy);
    }
    if (!rc && smp) k->clk_ready[slot] = t + TSR_PLAN_RETURN_CYCLES;
    pipe_sum_links(k);
    return rc;
}

static int pipe_slot(const tsr_kcmd *k, int slot, tsr_err *e)
{
    if (slot < 0 || slot >= TSR_MAX_SLOTS)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: slot %d", k->be->name, slot);
    return TSR_OK;
}

static int pipe_each(tsr_kcmd *k, uint32_t op, int slot, uint32_t a0, const char *what, tsr_err *e)
{
    int rc = pipe_slot(k, slot, e);
    for (int s = 0; s < k->cards && !rc; s++)
        rc = simple(&k->stage[s], TSR_PHASE_PREFILL, op, (uint32_t)slot, a0, (uint32_t)-1, what, e);
    pipe_sum_links(k);
    return rc;
}

/* Feed the pending token and all of tokens but the last, in passes of the
 * stages' block; the last becomes pending.  On the clocks the blocks
 * pipeline: stage 0 takes the next block while stage 1 runs this one. */
static int pipe_prefill(tsr_kcmd *k, int slot, const int *tokens, int n, tsr_err *e)
{
    int rc = pipe_slot(k, slot, e);
    uint32_t B = TSR_MAX_BLOCK;
    for (int s = 0; s < k->cards; s++)
        if (k->stage[s].info.prof.block && k->stage[s].info.prof.block < B) B = k->stage[s].info.prof.block;
    int ids[TSR_MAX_BLOCK], nb = 0;
    uint64_t t0 = clk_sync(k), fed = 0;
    for (int i = -1; i < n - 1 && !rc; i++) {
        int t = i < 0 ? k->pending[slot] : tokens[i];
        if (t < 0) continue;
        ids[nb++] = t;
        if ((uint32_t)nb == B || i == n - 2) {
            rc = pipe_pass(k, TSR_PHASE_PREFILL, slot, ids, (uint32_t)nb, NULL, 0, NULL, t0, e);
            fed += (uint64_t)nb;
            nb = 0;
        }
    }
    clk_account(k, TSR_PHASE_PREFILL, t0, fed);
    k->pos[slot] += (uint32_t)fed;
    if (!rc) k->pending[slot] = tokens[n - 1];
    return rc;
}

/* The sequences one stage pass takes in a decode: the spec's batch=
 * (up to the stages' batch limit), 1 when it says none. */
static int pipe_batch(const tsr_kcmd *k)
{
    uint32_t m = TSR_KDEC_MAX;
    for (int s = 0; s < k->cards; s++) {
        uint32_t slots = k->stage[s].info.prof.slots, block = k->stage[s].info.prof.block;
        uint32_t b = slots < block ? slots : block;
        if (b < m) m = b;
    }
    if (m < 1u) m = 1u;
    return k->batch > 0 && (uint32_t)k->batch < m ? k->batch : k->batch > 0 ? (int)m : 1;
}

/* Stage s's FORWARD of the nb decoding sequences idx[] of q (TSR_FWDC_BATCH:
 * one item each, at its slot's next position) started: stage 0 feeds their
 * pending tokens, a later stage their vectors from k->seq_hop (assembled
 * on its link-in after item 0's header); the last stage samples each with
 * its sampler. */
static int dec_submit(tsr_kcmd *k, int s, const tsr_kdec *q, const int *idx, int nb,
                      uint32_t *seq, tsr_err *e)
{
    tsr_kcmd *d = &k->stage[s];
    uint32_t pay[TSR_KDEC_MAX * TSR_FWDB_WORDS], dim = k->cfg.dim;
    int last = s == k->cards - 1, rc;
    for (int b = 0; b < nb; b++) {
        const tsr_kdec *x = &q[idx[b]];
        uint32_t *r = pay + b * TSR_FWDB_WORDS;
        memset(r, 0, 4u * TSR_FWDB_WORDS);
        r[TSR_FWDB_SLOT] = (uint32_t)x->slot;
        r[TSR_FWDB_TOKEN] = (uint32_t)k->pending[x->slot];
        r[TSR_FWDB_FLAGS] = x->smp.reseed && x->got == 0 ? TSR_FWDC_RESEED : 0u;
        r[TSR_FWDB_SEED_LO] = (uint32_t)x->smp.seed;
        r[TSR_FWDB_SEED_HI] = (uint32_t)(x->smp.seed >> 32);
        memcpy(&r[TSR_FWDB_TEMP], &x->smp.temperature, 4);
        memcpy(&r[TSR_FWDB_TOP_P], &x->smp.top_p, 4);
    }
    kcmd_args a = { .op = TSR_OP_FORWARD, .slot = (uint32_t)q[idx[0]].slot,
                    .a = { (uint32_t)nb, TSR_FWDC_BATCH | (last ? TSR_FWDC_SAMPLE : 0u) },
                    .in = pay, .in_words = (uint32_t)nb * TSR_FWDB_WORDS,
                    .out_words = last ? (uint32_t)nb : 0u };
    if (s > 0) {
        /* the hop into this stage: item 0's header, each item's vector */
        float *h = k->hop_buf;
        int s0 = q[idx[0]].slot;
        h[0] = (float)nb;
        h[1] = (float)s0;
        h[2] = (float)k->pos[s0];
        h[3] = (float)dim;
        for (int b = 0; b < nb; b++)
            memcpy(h + TSR_LINK_HDR + (size_t)b * dim, k->seq_hop + (size_t)idx[b] * dim, 4u * dim);
        if ((rc = d->be->write(d->b, TSR_BUF_LINK_IN, 0, h, TSR_LINK_HDR + (uint32_t)nb * dim, e)))
            return rc;
    }
    return submit(d, TSR_PHASE_DECODE, &a, seq, e);
}

/* Stage s's decode pass seq over idx[] answered: the last stage's ids
 * into next[], an earlier one's vectors off its link-out into k->seq_hop;
 * *cy its cycles (stage_finish). */
static int dec_finish(tsr_kcmd *k, int s, uint32_t seq, const int *idx, int nb, int *next,
                      uint64_t *cy, tsr_err *e)
{
    tsr_kcmd *d = &k->stage[s];
    uint32_t dim = k->cfg.dim, words = TSR_LINK_HDR + (uint32_t)nb * dim, got = 0;
    uint32_t ids[TSR_KDEC_MAX];
    int status = 0, rc = await(d, seq, TSR_PHASE_DECODE, &status, &got, e);
    if (rc) return rc;
    if (status) return kfail(d, status, "forward", e);
    if (s < k->cards - 1) {
        if ((rc = d->be->read(d->b, TSR_BUF_LINK_OUT, 0, k->hop_buf, words, e))) return rc;
        k->link.hop[TSR_PHASE_DECODE] += 4ull * words;
        k->link.hops[TSR_PHASE_DECODE]++;
        for (int b = 0; b < nb; b++)
            memcpy(k->seq_hop + (size_t)idx[b] * dim, k->hop_buf + TSR_LINK_HDR + (size_t)b * dim,
                   4u * dim);
    } else {
        if (got != (uint32_t)nb)
            return tsr_seterr(e, TSR_ERR_DEVICE, "%s: forward: %u ids for %d sequences",
                              d->be->name, got, nb);
        if ((rc = d->be->read(d->b, TSR_BUF_OUT, 0, ids, (uint32_t)nb, e))) return rc;
        d->link.d2h[TSR_PHASE_DECODE] += 4u * (uint32_t)nb;
        for (int b = 0; b < nb; b++) next[b] = (int)ids[b];
    }
    *cy = d->resp_cycles;
    return TSR_OK;
}

/* Sequence i into a stage's picks p (np of them, at most G, the longest
 * waiting first: by ready, then index). */
static void pick_add(int *p, int *np, int G, const uint64_t *ready, int i)
{
    int j = *np < G ? (*np)++ : G;
    while (j > 0 && ready[i] < ready[p[j - 1]]) {
        if (j < G) p[j] = p[j - 1];
        j--;
    }
    if (j < G) p[j] = i;
}

/* A split's decode in flight (pipe_decode): each sequence's state. */
typedef struct pipe_dec {
    tsr_kdec *q;
    int       m, G;                  /* sequences; a stage pass's at most */
    int       live[TSR_KDEC_MAX];    /* still going                       */
    int       at[TSR_KDEC_MAX];      /* the stage it waits at             */
    uint64_t  ready[TSR_KDEC_MAX];   /* its input there arrived at (clock) */
    uint64_t  made;                  /* tokens generated                  */
} pipe_dec;

/* The decode's sequences checked (a slot each, distinct, with a pending
 * token), each ready at stage 0 when its last token came back. */
static int pipe_dec_start(tsr_kcmd *k, pipe_dec *p, uint64_t t0, tsr_err *e)
{
    for (int i = 0; i < p->m; i++) {
        const tsr_kdec *x = &p->q[i];
        int rc = pipe_slot(k, x->slot, e);
        if (rc) return rc;
        p->q[i].got = 0;
        p->live[i] = x->n > 0;
        p->at[i] = 0;
        p->ready[i] = k->clk_ready[x->slot] > t0 ? k->clk_ready[x->slot] : t0;
        if (p->live[i] && k->pending[x->slot] < 0)
            return tsr_seterr(e, TSR_ERR_STATE, "%s: decode: slot %d has no pending token",
                              k->be->name, x->slot);
        for (int j = 0; j < i; j++)
            if (p->q[j].slot == x->slot)
                return tsr_seterr(e, TSR_ERR_ARG, "%s: decode: slot %d twice", k->be->name,
                                  x->slot);
    }
    return TSR_OK;
}

/* This round's passes: per stage the sequences that have waited longest
 * at it, up to G; a sequence at stage 0 whose cancel flag is set stops
 * first.  Returns the sequences still going. */
static int pipe_dec_pick(const tsr_kcmd *k, pipe_dec *p, int pick[][TSR_KDEC_MAX], int *np)
{
    int going = 0;
    for (int s = 0; s < k->cards; s++) np[s] = 0;
    for (int i = 0; i < p->m; i++) {
        const int *cancel = p->q[i].cancel;
        if (p->live[i] && p->at[i] == 0 && cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE))
            p->live[i] = 0;
        if (!p->live[i]) continue;
        pick_add(pick[p->at[i]], &np[p->at[i]], p->G, p->ready, i);
        going++;
    }
    return going;
}

/* Stage s's pass over the nb sequences idx[] ended (on the clocks) after
 * cy cycles: they move on to stage s + 1, or, from the last stage, each
 * with its token next[b] back to stage 0 (on_token sees it; its n, BOS or
 * EOS stop it). */
static void pipe_dec_moved(tsr_kcmd *k, pipe_dec *p, int s, const int *idx, int nb,
                           const int *next, uint64_t cy, tsr_token_fn on_token, void *user)
{
    uint64_t in = 0;
    for (int b = 0; b < nb; b++) in = p->ready[idx[b]] > in ? p->ready[idx[b]] : in;
    uint64_t end = clk_pass(k, s, in, cy);
    for (int b = 0; b < nb; b++) {
        int i = idx[b];
        tsr_kdec *x = &p->q[i];
        p->ready[i] = end;
        if (s < k->cards - 1) {
            p->at[i] = s + 1;
            continue;
        }
        p->at[i] = 0;
        p->ready[i] += TSR_PLAN_RETURN_CYCLES;
        k->clk_ready[x->slot] = p->ready[i];
        k->pending[x->slot] = next[b];
        k->pos[x->slot]++;
        x->out[x->got++] = next[b];
        p->made++;
        if (on_token && on_token(i, next[b], user)) p->live[i] = 0;
        if (x->got >= x->n || stop_token(k, x, next[b])) p->live[i] = 0;
    }
}

/* Decode: the m sequences in flight through the stages, a token each per
 * trip.  Each round every stage takes the sequences that have waited
 * longest at its input, up to pipe_batch() of them in one pass (one: stage
 * k works on one sequence while stage k + 1 works on the one before; more:
 * those travel together, a pass over each stage's weights for all of
 * them): the round's passes are started on every card, then collected
 * (the cards run at once).  A sequence back at stage 0 with its token is
 * checked for cancel and its stops before its next trip. */
static int pipe_decode(tsr_kcmd *k, tsr_kdec *q, int m, tsr_token_fn on_token, void *user,
                       tsr_err *e)
{
    pipe_dec p = { .q = q, .m = m, .G = pipe_batch(k) };
    uint64_t t0 = clk_sync(k);
    int rc = pipe_dec_start(k, &p, t0, e);
    while (!rc) {
        int pick[TSR_DEV_MAX_CARDS][TSR_KDEC_MAX], np[TSR_DEV_MAX_CARDS];
        int sub[TSR_DEV_MAX_CARDS] = { 0 };   /* its pass was submitted */
        uint32_t seq[TSR_DEV_MAX_CARDS];
        if (!pipe_dec_pick(k, &p, pick, np)) break;
        for (int s = 0; s < k->cards && !rc; s++)
            if (np[s]) sub[s] = !(rc = dec_submit(k, s, q, pick[s], np[s], &seq[s], e));
        /* collect every pass submitted, even after a failure */
        for (int s = 0; s < k->cards; s++) {
            int next[TSR_KDEC_MAX], frc;
            uint64_t cy = 0;
            if (!sub[s]) continue;
            frc = dec_finish(k, s, seq[s], pick[s], np[s], next, &cy, rc ? NULL : e);
            if (!rc && !(rc = frc))
                pipe_dec_moved(k, &p, s, pick[s], np[s], next, cy, on_token, user);
        }
    }
    clk_account(k, TSR_PHASE_DECODE, t0, p.made);
    pipe_sum_links(k);
    return rc;
}

static int pipe_counters(tsr_kcmd *k, tsr_kcounters *kc, tsr_err *e)
{
    memset(kc, 0, sizeof *kc);
    int rc = TSR_OK;
    for (int s = 0; s < k->cards && !rc; s++) {
        tsr_kcounters c;
        if ((rc = tsr_kcmd_counters(&k->stage[s], &c, e))) break;
        /* a token's cycles: every stage's last pass (they run in turn) */
        for (int o = 0; o < TSR_OP_COUNT; o++) kc->runs[o] += c.runs[o];
        kc->tokens_fed = c.tokens_fed;
        kc->tokens_sampled += c.tokens_sampled;
        kc->macs += c.macs;
        kc->fabric_bcast_bytes += c.fabric_bcast_bytes;
        kc->fabric_reduce_bytes += c.fabric_reduce_bytes;
        kc->fabric_gather_bytes += c.fabric_gather_bytes;
        kc->attended += c.attended;
        kc->load_bytes += c.load_bytes;
        kc->n_pes = c.n_pes;
        kc->last_pos = c.last_pos;
        for (int r = 0; r < TSR_RG_COUNT; r++) {
            kc->cyc[r] += c.cyc[r];
            kc->cyc_mark[r] += c.cyc_mark[r];
        }
        for (int p = 0; p < TSR_MAX_PES; p++)
            if (c.pe_sram_bytes[p] > kc->pe_sram_bytes[p]) kc->pe_sram_bytes[p] = c.pe_sram_bytes[p];
    }
    pipe_sum_links(k);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Open / close                                                               */

int tsr_kcmd_open(tsr_kcmd *k, const tsr_backend_iface *be, const tsr_devspec *spec, tsr_err *e)
{
    if (spec->cards > 1) return pipe_open(k, be, spec, e);
    memset(k, 0, sizeof *k);
    k->be = be;
    int rc = be->open(spec, &k->b, &k->info, e);
    if (rc) {
        k->b = NULL;
        return rc;
    }
    k->mesh.pes = k->info.pes;
    k->mesh.cols = spec->cols;
    k->mesh.kv_split = spec->kv_split;
    k->batch = spec->batch;
    /* ctl's header, then the kernel */
    uint32_t hdr[TSR_CTL_CMD0] = { 0 };
    hdr[TSR_CTL_RING_N] = k->info.ring_n;
    if ((rc = be->write(k->b, TSR_BUF_CTL, 0, hdr, TSR_CTL_CMD0, e)) ||
        (rc = be->start(k->b, e))) {
        be->close(k->b);
        k->b = NULL;
        return rc;
    }
    /* a ring that never answers NOP is a kernel that does not run */
    uint32_t v = 0;
    for (int tries = 0; tries < 2000 && v != 1u; tries++) {
        if ((rc = be->wait(k->b, TSR_BUF_CTL, TSR_CTL_SERVING, v, WAIT_SLICE_US, &v, e))) break;
    }
    if (!rc && v != 1u)
        rc = tsr_seterr(e, TSR_ERR_DEVICE, "%s: the kernel did not start serving its command ring",
                        be->name);
    if (rc) {
        be->close(k->b);
        k->b = NULL;
        return rc;
    }
    k->started = 1;
    return TSR_OK;
}

void tsr_kcmd_close(tsr_kcmd *k)
{
    if (k && k->cards > 1) {
        pipe_close(k);
        return;
    }
    if (!k || !k->b) return;
    if (k->started) {
        tsr_err e;
        kcmd_args a = { .op = TSR_OP_EXIT };
        int status;
        (void)exec(k, TSR_PHASE_DEBUG, &a, &status, NULL, 0, NULL, &e);
    }
    k->be->close(k->b);
    k->b = NULL;
    k->started = 0;
}

void tsr_kcmd_interrupt(tsr_kcmd *k)
{
    if (k && k->cards > 1 && k->stage) {
        for (int s = 0; s < k->cards; s++) tsr_kcmd_interrupt(&k->stage[s]);
        return;
    }
    if (k && k->b && k->be->interrupt) k->be->interrupt(k->b);
}

/* ------------------------------------------------------------------------ */
/* Fit and load                                                               */

int tsr_kcmd_config(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o,
                    tsr_kconfig *kc, tsr_err *e)
{
    return tsr_wimage_config(m, o, &k->mesh, &k->info.prof, kc, e);
}

int tsr_kcmd_fit(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o,
                 uint64_t *need_bytes, uint64_t *have_bytes, tsr_err *e)
{
    if (k->cards > 1) return pipe_fit(k, m, o, need_bytes, have_bytes, e);
    const tsr_kprofile *pf = &k->info.prof;
    tsr_kconfig kc;
    tsr_wneed nd;
    int rc = tsr_kcmd_config(k, m, o, &kc, e);
    if (rc) return rc;
    tsr_wimage_need(&kc, &nd);
    uint64_t have = (uint64_t)k->info.pes * ((uint64_t)pf->w8_words * TSR_LANES +
                                             4ull * pf->f32_words + 4ull * pf->kv_words) +
                    4ull * (2u * pf->layers + 1u) * pf->dim;
    if (k->info.cap_bytes && k->info.cap_bytes < have) have = k->info.cap_bytes;
    if (need_bytes) *need_bytes = nd.total_bytes;
    if (have_bytes) *have_bytes = have;
    if (k->info.cap_bytes && nd.total_bytes > k->info.cap_bytes)
        return tsr_seterr(e, TSR_ERR_CAPACITY,
                          "%s: needs %llu bytes on-chip (weights %llu + KV cache %llu + "
                          "norms %llu), %s has %llu", m->path,
                          (unsigned long long)nd.total_bytes,
                          (unsigned long long)nd.weight_bytes, (unsigned long long)nd.kv_bytes,
                          (unsigned long long)(4u * nd.ctrl_words),
                          k->info.cap_name ? k->info.cap_name : "the device",
                          (unsigned long long)k->info.cap_bytes);
    rc = tsr_wimage_check_profile(&kc, pf, k->info.profile, e);
    if (rc) {
        /* prefix the file name to the profile's complaint */
        char msg[TSR_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", e ? e->msg : "");
        return tsr_seterr(e, rc, "%s: %s", m->path, msg);
    }
    return TSR_OK;
}

void tsr_kcmd_config_words(const tsr_kconfig *c, uint32_t w[TSR_KCONFIG_WORDS])
{
    const uint32_t ints[TSR_KCONFIG_INTS] = {
        c->magic, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
        c->seq_len, c->n_slots, c->dtype, c->group, c->mesh_rows, c->mesh_cols,
        c->shared_classifier, c->kv_split, c->att_pes, c->q4_kinds, c->kv_dtype, c->bos, c->eos,
        c->qkv_bias, c->stage
    };
    memcpy(w, ints, sizeof ints);
    memcpy(w + TSR_KCONFIG_INTS, &c->rope_theta, 4);
    memcpy(w + TSR_KCONFIG_INTS + 1, &c->norm_eps, 4);
}

/* Wait for the LOAD in flight in `in` half h (if any); *seq clears. */
static int await_load(tsr_kcmd *k, uint32_t *seq, tsr_err *e)
{
    if (!*seq) return TSR_OK;
    int status = 0, rc = await(k, *seq, TSR_PHASE_LOAD, &status, NULL, e);
    *seq = 0;
    return rc ? rc : status ? kfail(k, status, "load chunk", e) : TSR_OK;
}

int tsr_kcmd_load(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    if (k->cards > 1) return pipe_load(k, m, o, e);
    int rc = tsr_kcmd_fit(k, m, o, NULL, NULL, e);
    if (rc) return rc;
    tsr_kconfig kc;
    tsr_wstream ws;
    tsr_wchunk ch;
    int done = 0;
    if ((rc = tsr_kcmd_config(k, m, o, &kc, e))) return rc;
    if ((rc = tsr_wstream_open(m, &kc, &ws, e))) return rc;
    tsr_checkpoint_prefetch(m);   /* the stream reads the whole file */
    if (k->loaded) {
        /* an image is resident: hash this one first, a pass that sends
         * nothing; the same image stays, nothing crosses the link */
        while (!(rc = tsr_wstream_next(&ws, &ch, &done, e)) && !done) {}
        if (rc || ws.hash == k->image_hash) goto out;
        tsr_wstream_rewind(&ws);
    }
    k->loaded = 0;
    const int ph = TSR_PHASE_LOAD;
    uint32_t cfgw[TSR_KCONFIG_WORDS], fit[TSR_KFIT_WORDS] = { 0 };
    tsr_kcmd_config_words(&kc, cfgw);
    kcmd_args a = { .op = TSR_OP_CONFIGURE, .in = cfgw, .in_words = TSR_KCONFIG_WORDS,
                    .out_words = TSR_KFIT_WORDS };
    int status = 0;
    if ((rc = exec(k, ph, &a, &status, fit, TSR_KFIT_WORDS, NULL, e))) goto out;
    if (status) { rc = kfail(k, status, "configure", e); goto out; }
    if (k->be->prepare) k->be->prepare(k->b, &kc);
    uint64_t sent = 4u * TSR_KCONFIG_WORDS;
    if (o->progress) o->progress(0, ws.bytes, o->progress_user);   /* streaming starts */
    /* Each PE's arrays are built as its first chunk is asked for, while the
     * kernel copies the chunks before it; two payloads in flight: the host
     * fills one half of `in` while the kernel copies the other. */
    uint32_t seqs[2] = { 0, 0 };
    for (int i = 0;; i++) {
        if ((rc = tsr_wstream_next(&ws, &ch, &done, e)) || done) break;
        int h = i & 1;
        if ((rc = await_load(k, &seqs[h], e))) break;
        kcmd_args la = { .op = TSR_OP_LOAD, .a = { ch.pe, ch.region, ch.offset, ch.length },
                         .in_off = (uint32_t)h * TSR_LOAD_WORDS, .in = ch.data,
                         .in_words = ch.nbytes / 4u };
        if ((rc = submit(k, ph, &la, &seqs[h], e))) break;
        sent += ch.nbytes;
        if (o->progress) o->progress(sent, ws.bytes, o->progress_user);
    }
    for (int h = 0; h < 2 && !rc; h++) rc = await_load(k, &seqs[h], e);
    if (rc) goto out;
    k->loaded = 1;
    k->image_hash = ws.hash;
    k->cfg = kc;
out:
    tsr_wstream_close(&ws);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Sequences                                                                  */

int tsr_kcmd_reset(tsr_kcmd *k, int slot, tsr_err *e)
{
    if (k->cards > 1) {
        int rc = pipe_each(k, TSR_OP_RESET, slot, 0, "reset", e);
        if (!rc) {
            k->pending[slot] = -1;
            k->pos[slot] = 0;
        }
        return rc;
    }
    return simple(k, TSR_PHASE_PREFILL, TSR_OP_RESET, (uint32_t)slot, 0, 0, "reset", e);
}

int tsr_kcmd_truncate(tsr_kcmd *k, int slot, int pos, int pending, tsr_err *e)
{
    if (k->cards > 1) {
        /* the stages keep no pending token: the host does */
        int rc = pipe_each(k, TSR_OP_TRUNCATE, slot, (uint32_t)pos, "truncate", e);
        if (!rc) {
            k->pending[slot] = pending;
            k->pos[slot] = (uint32_t)pos;
        }
        return rc;
    }
    return simple(k, TSR_PHASE_PREFILL, TSR_OP_TRUNCATE, (uint32_t)slot, (uint32_t)pos,
                  (uint32_t)pending, "truncate", e);
}

int tsr_kcmd_prefill(tsr_kcmd *k, int slot, const int *tokens, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
    if (k->cards > 1) return pipe_prefill(k, slot, tokens, n, e);
    if ((uint32_t)n > k->info.words[TSR_BUF_IN])
        return tsr_seterr(e, TSR_ERR_RANGE, "%s: a prefill of %d tokens exceeds the input buffer "
                          "(%u words)", k->be->name, n, k->info.words[TSR_BUF_IN]);
    uint32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", k->be->name);
    for (int i = 0; i < n; i++) ids[i] = (uint32_t)tokens[i];
    kcmd_args a = { .op = TSR_OP_PREFILL, .slot = (uint32_t)slot, .a = { (uint32_t)n },
                    .in = ids, .in_words = (uint32_t)n };
    int status = 0, rc = exec(k, TSR_PHASE_PREFILL, &a, &status, NULL, 0, NULL, e);
    free(ids);
    return rc ? rc : status ? kfail(k, status, "prefill", e) : TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* Decode: one sequence, or several stepping together                         */

/* The command's cancel word (a DECODE of one sequence). */
static int cancel_word(tsr_kcmd *k, uint32_t v, tsr_err *e)
{
    k->link.h2d[TSR_PHASE_DECODE] += 4u;
    return k->be->publish(k->b, TSR_BUF_CTL, TSR_CTL_CANCEL, v, e);
}

/* Slot s's cancel word (a sequence of a DECODE_BATCH); k->slot_cancel
 * remembers the ones set, so none is left for a later command to see. */
static int slot_cancel_word(tsr_kcmd *k, int s, uint32_t v, tsr_err *e)
{
    k->link.h2d[TSR_PHASE_DECODE] += 4u;
    int rc = k->be->publish(k->b, TSR_BUF_CTL, TSR_CTL_CANCEL_SLOT(s), v, e);
    if (!rc && v) k->slot_cancel |= 1u << s;
    if (!rc && !v) k->slot_cancel &= ~(1u << s);
    return rc;
}

int tsr_kcmd_batch_max(const tsr_kcmd *k)
{
    if (k->cards > 1) return pipe_batch(k);   /* a stage pass's sequences */
    uint32_t slots = k->info.prof.slots, block = k->info.prof.block;
    uint32_t m = slots < block ? slots : block;
    if (m > TSR_KDEC_MAX) m = TSR_KDEC_MAX;
    if (k->batch > 0 && (uint32_t)k->batch < m) m = (uint32_t)k->batch;
    return m ? (int)m : 1;
}

/* A sequence of the command in flight. */
typedef struct dec_run {
    int      i;        /* its index in the caller's q                   */
    uint32_t n;        /* tokens asked of this command                  */
    uint32_t seen;     /* of them, read                                 */
    int      stop;     /* 0 going, 1 stop asked, 2 its cancel word sent */
} dec_run;

/* Sequence i's state between commands. */
enum { DEC_GOING = 0, DEC_DONE };


/* One command over the r sequences run[] of q: submit, stream their ids as
 * the kernel publishes each region's count, stop the ones asked to, and
 * wait for the answer.  *stopped gets a bit per run[] entry that was asked
 * to stop. */
/* One DECODE (or DECODE_BATCH) command in flight: its sequences, the
 * caller's callback, and each sequence's count word as last read. */
typedef struct dec_cmd {
    tsr_kcmd    *k;
    tsr_kdec    *q;
    dec_run     *run;
    int          r;                    /* sequences in the command       */
    uint32_t     stride;               /* words per sequence's answer    */
    tsr_token_fn on_token;
    void        *user;
    uint32_t     cnt[TSR_KDEC_MAX];    /* tokens published, per sequence */
} dec_cmd;

/* The sampling flags of a sequence's command words. */
static uint32_t dec_flags(const tsr_kdec *s)
{
    return (s->smp.reseed ? TSR_DEC_RESEED : 0u) | (s->smp.ignore_stop ? TSR_DEC_IGNORE_STOP : 0u);
}

/* The command's words into pay (1 + TSR_KDEC_MAX * TSR_BATCH_WORDS,)
 * and its arguments: one sequence, DECODE, which every kernel has (its
 * answer is a batch's first region); several, DECODE_BATCH. */
static kcmd_args dec_args(const dec_cmd *d, uint32_t *pay)
{
    if (d->r == 1) {
        const tsr_kdec *s = &d->q[d->run[0].i];
        memcpy(&pay[0], &s->smp.temperature, 4);
        memcpy(&pay[1], &s->smp.top_p, 4);
        return (kcmd_args){ .op = TSR_OP_DECODE, .slot = (uint32_t)s->slot,
                            .a = { d->run[0].n, (uint32_t)s->smp.seed,
                                   (uint32_t)(s->smp.seed >> 32), dec_flags(s) },
                            .in = pay, .in_words = 2, .out_words = d->run[0].n + 1u };
    }
    pay[0] = (uint32_t)d->r;
    for (int j = 0; j < d->r; j++) {
        const tsr_kdec *s = &d->q[d->run[j].i];
        uint32_t *w = pay + 1 + j * TSR_BATCH_WORDS;
        w[TSR_BATCH_SLOT] = (uint32_t)s->slot;
        w[TSR_BATCH_N] = d->run[j].n;
        w[TSR_BATCH_FLAGS] = dec_flags(s);
        w[TSR_BATCH_SEED_LO] = (uint32_t)s->smp.seed;
        w[TSR_BATCH_SEED_HI] = (uint32_t)(s->smp.seed >> 32);
        memcpy(&w[TSR_BATCH_TEMP], &s->smp.temperature, 4);
        memcpy(&w[TSR_BATCH_TOP_P], &s->smp.top_p, 4);
        w[TSR_BATCH_RESERVED] = 0;
    }
    return (kcmd_args){ .op = TSR_OP_DECODE_BATCH, .a = { d->stride }, .in = pay,
                        .in_words = 1u + (uint32_t)d->r * TSR_BATCH_WORDS,
                        .out_words = (uint32_t)d->r * d->stride };
}

/* A slot cancel word left set (a clear that failed) would stop its
 * sequence at once; a count word holds the previous answer until the
 * kernel publishes 0: clear both, so a count read early is 0. */
static int dec_clear(const dec_cmd *d, tsr_err *e)
{
    tsr_kcmd *k = d->k;
    int rc;
    for (int j = 0; j < d->r; j++) {
        int s = d->q[d->run[j].i].slot;
        if ((k->slot_cancel >> s & 1u) && (rc = slot_cancel_word(k, s, 0u, e))) return rc;
        uint32_t zero = 0;
        if ((rc = k->be->write(k->b, TSR_BUF_OUT, (uint32_t)j * d->stride, &zero, 1, e))) return rc;
        k->link.h2d[TSR_PHASE_DECODE] += 4u;
    }
    return TSR_OK;
}

/* Sequence j's new tokens, read and handed to the caller (the kernel
 * publishes each token before the count that covers it); a callback's
 * non-zero or the sequence's cancel flag asks its stop. */
static int dec_read(dec_cmd *d, int j, tsr_err *e)
{
    tsr_kcmd *k = d->k;
    dec_run *run = &d->run[j];
    tsr_kdec *s = &d->q[run->i];
    uint32_t at = (uint32_t)j * d->stride, buf[256];
    int rc;
    if ((rc = k->be->read(k->b, TSR_BUF_OUT, at, &d->cnt[j], 1, e))) return rc;
    k->link.d2h[TSR_PHASE_DECODE] += 4u;
    if (d->cnt[j] > run->n) d->cnt[j] = run->n;
    while (run->seen < d->cnt[j]) {
        uint32_t c = d->cnt[j] - run->seen < 256u ? d->cnt[j] - run->seen : 256u;
        if ((rc = k->be->read(k->b, TSR_BUF_OUT, at + 1u + run->seen, buf, c, e))) break;
        k->link.d2h[TSR_PHASE_DECODE] += 4ull * c;
        for (uint32_t t = 0; t < c; t++) {
            int tok = (int)buf[t];
            s->out[s->got++] = tok;
            run->seen++;
            /* 0 -> 1 only: a stop already sent stays sent */
            if (d->on_token && d->on_token(run->i, tok, d->user) && !run->stop) run->stop = 1;
        }
    }
    if (!run->stop && s->cancel && __atomic_load_n(s->cancel, __ATOMIC_ACQUIRE)) run->stop = 1;
    return rc;
}

/* The stops asked since the last look: a cancel word each (the command's
 * own for one sequence, *cmd_cancel set; else the slot's). */
static int dec_send_stops(dec_cmd *d, int *cmd_cancel, tsr_err *e)
{
    for (int j = 0; j < d->r; j++) {
        if (d->run[j].stop != 1) continue;
        int rc = d->r == 1 ? cancel_word(d->k, 1u, e)
                           : slot_cancel_word(d->k, d->q[d->run[j].i].slot, 1u, e);
        *cmd_cancel |= d->r == 1;
        d->run[j].stop = 2;
        if (rc) return rc;
    }
    return TSR_OK;
}

/* Sleep on a word the next step changes: the count of a sequence the
 * kernel still steps (full, at a stop token or cancelled: it may have
 * dropped it), else the response's sequence word at off (rs its value). */
static int dec_wait(const dec_cmd *d, uint32_t off, uint32_t rs, tsr_err *e)
{
    uint32_t buf_id = TSR_BUF_CTL, old = rs, now;
    for (int j = 0; j < d->r; j++) {
        const tsr_kdec *s = &d->q[d->run[j].i];
        if (d->run[j].stop || d->cnt[j] >= d->run[j].n ||
            (d->cnt[j] && stop_token(d->k, s, s->out[s->got - 1])))
            continue;
        buf_id = TSR_BUF_OUT;
        off = (uint32_t)j * d->stride;
        old = d->cnt[j];
        break;
    }
    return d->k->be->wait(d->k->b, (int)buf_id, off, old, WAIT_SLICE_US, &now, e);
}

/* The command has answered: its cancel words go back to 0, *stopped gets
 * the sequences asked to stop.  Returns rc, or the first error after it. */
static int dec_answered(const dec_cmd *d, int cmd_cancel, uint32_t *stopped, int rc, tsr_err *e)
{
    if (cmd_cancel) {
        int rc2 = cancel_word(d->k, 0u, e);
        if (!rc) rc = rc2;
    }
    for (int j = 0; j < d->r; j++) {
        int s = d->q[d->run[j].i].slot;
        if (d->run[j].stop) *stopped |= 1u << j;
        if (d->k->slot_cancel >> s & 1u) {
            int rc2 = slot_cancel_word(d->k, s, 0u, e);
            if (!rc) rc = rc2;
        }
    }
    return rc;
}

static int decode_command(tsr_kcmd *k, tsr_kdec *q, dec_run *run, int r, tsr_token_fn on_token,
                          void *user, uint32_t *stopped, tsr_err *e)
{
    const int ph = TSR_PHASE_DECODE;
    dec_cmd d = { .k = k, .q = q, .run = run, .r = r, .on_token = on_token, .user = user };
    uint32_t pay[1 + TSR_KDEC_MAX * TSR_BATCH_WORDS];
    int rc;
    *stopped = 0;
    for (int j = 0; j < r; j++)
        if (run[j].n + 1u > d.stride) d.stride = run[j].n + 1u;
    kcmd_args a = dec_args(&d, pay);
    if ((rc = dec_clear(&d, e))) return rc;
    uint32_t seq;
    if ((rc = submit(k, ph, &a, &seq, e))) return rc;
    uint32_t nr = k->info.ring_n, resp = TSR_CTL_RESP(nr) + ((seq - 1u) % nr) * TSR_RESP_WORDS;

    /* Watch the count words; hand new tokens to the caller as they appear. */
    uint32_t rs = 0;
    int cmd_cancel = 0, status = 0;
    for (;;) {
        if ((rc = k->be->read(k->b, TSR_BUF_CTL, resp + TSR_RESP_SEQ, &rs, 1, e))) break;
        int done = rs == seq;
        for (int j = 0; j < r && !rc; j++) rc = dec_read(&d, j, e);
        if (rc || done) break;
        if ((rc = dec_send_stops(&d, &cmd_cancel, e))) break;
        if ((rc = dec_wait(&d, resp + TSR_RESP_SEQ, rs, e))) break;
    }
    if (!rc) rc = await(k, seq, ph, &status, NULL, e);
    rc = dec_answered(&d, cmd_cancel, stopped, rc, e);
    if (!rc && status) rc = kfail(k, status, r == 1 ? "decode" : "decode batch", e);
    return rc;
}

/* The sequences of q (m) the next command steps, into run (in index
 * order: the first one's logits are the pass's): every one still going
 * (a cancel between commands ends it), when they fit lim; else lim of
 * them in cyclic order from *next, which moves past the last taken.
 * Returns how many, negated when others wait their turn; 0: none going. */
static int dec_pick(const tsr_kdec *q, int m, int *state, int lim, int *next, dec_run *run)
{
    int going = 0;
    for (int i = 0; i < m; i++) {
        if (state[i] != DEC_GOING) continue;
        if (q[i].cancel && __atomic_load_n(q[i].cancel, __ATOMIC_ACQUIRE)) {
            state[i] = DEC_DONE;   /* cancelled between commands */
            continue;
        }
        going++;
    }
    int turns = going > lim, r = 0, from = turns ? *next : 0;
    for (int t = 0; t < m && r < lim; t++) {
        int i = (from + t) % m;
        if (state[i] != DEC_GOING) continue;
        run[r++] = (dec_run){ .i = i };
        if (turns) *next = (i + 1) % m;
    }
    /* index order (a turn that wrapped round lists the low ones last) */
    for (int a = 1; a < r; a++)
        for (int b = a; b > 0 && run[b - 1].i > run[b].i; b--) {
            dec_run t = run[b];
            run[b] = run[b - 1];
            run[b - 1] = t;
        }
    return turns ? -r : r;
}

int tsr_kcmd_decode(tsr_kcmd *k, tsr_kdec *q, int m, tsr_token_fn on_token, void *user,
                    tsr_err *e)
{
    if (m < 1 || m > TSR_KDEC_MAX)
        return tsr_seterr(e, TSR_ERR_ARG, "%s: a decode of %d sequences (1..%d)", k->be->name, m,
                          TSR_KDEC_MAX);
    if (k->cards > 1) return pipe_decode(k, q, m, on_token, user, e);
    int state[TSR_KDEC_MAX], reseed[TSR_KDEC_MAX], lim = tsr_kcmd_batch_max(k), rc = TSR_OK;
    for (int i = 0; i < m; i++) {
        q[i].got = 0;
        state[i] = q[i].n > 0 ? DEC_GOING : DEC_DONE;
        reseed[i] = q[i].smp.reseed;
    }
    /* Commands until every sequence is done.  Each takes up to lim still
     * going, each of them as many tokens as it has left, up to its share
     * of the output buffer (a region: its count, then its ids); when more
     * are going than lim, they take turns, TSR_KDEC_TURN tokens each. */
    int next = 0;   /* where the next turn starts */
    for (;;) {
        dec_run run[TSR_KDEC_MAX];
        int r = dec_pick(q, m, state, lim, &next, run);
        if (r == 0) break;
        int turns = r < 0;
        if (turns) r = -r;
        uint32_t share = k->info.words[TSR_BUF_OUT] / (uint32_t)r;
        if (share < 2u)
            return tsr_seterr(e, TSR_ERR_RANGE, "%s: the output buffer (%u words) cannot hold %d "
                              "sequences' answers", k->be->name, k->info.words[TSR_BUF_OUT], r);
        for (int j = 0; j < r; j++) {
            tsr_kdec *s = &q[run[j].i];
            uint32_t left = (uint32_t)(s->n - s->got);
            run[j].n = left < share - 1u ? left : share - 1u;
            if (turns && run[j].n > TSR_KDEC_TURN) run[j].n = TSR_KDEC_TURN;
            s->smp.reseed = s->got == 0 && reseed[run[j].i];   /* the RNG restarts once */
        }
        uint32_t stopped = 0;
        rc = decode_command(k, q, run, r, on_token, user, &stopped, e);
        for (int j = 0; j < r; j++) {
            tsr_kdec *s = &q[run[j].i];
            /* done: asked to stop, stopped by the kernel (fewer than asked:
             * a stop token), at a stop token, or at its n */
            if (rc || (stopped >> j & 1u) || run[j].seen < run[j].n ||
                (s->got && stop_token(k, s, s->out[s->got - 1])) || s->got >= s->n)
                state[run[j].i] = DEC_DONE;
        }
        if (rc) break;
    }
    for (int i = 0; i < m; i++) q[i].smp.reseed = reseed[i];
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Debug reads and counters                                                   */

int tsr_kcmd_read_logits(tsr_kcmd *k, int slot, float *logits, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
    if (k->cards > 1) {   /* the classifier's stage */
        int rc = tsr_kcmd_read_logits(&k->stage[k->cards - 1], slot, logits, n, e);
        pipe_sum_links(k);
        return rc;
    }
    kcmd_args a = { .op = TSR_OP_READ_LOGITS, .slot = (uint32_t)slot, .out_words = (uint32_t)n };
    int status = 0;
    uint32_t got = 0;
    int rc = exec(k, TSR_PHASE_DEBUG, &a, &status, logits, (uint32_t)n, &got, e);
    if (rc) return rc;
    if (status == TSR_K_ESTATE)   /* the last full pass is not this slot's last */
        return kfail(k, status,
                     "read logits: none for this sequence's last token (generate a token "
                     "first; a prefill, a truncate or reset, or another sequence's pass "
                     "since clears them)", e);
    return status ? kfail(k, status, "read logits", e) : TSR_OK;
}

int tsr_kcmd_read_mem(tsr_kcmd *k, uint32_t pe, uint32_t region, uint32_t off, uint32_t len,
                      uint32_t *out, tsr_err *e)
{
    if (k->cards > 1)
        return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "%s: read memory: a model split over %d "
                          "devices (read each stage's)", k->be->name, k->cards);
    uint32_t words = region == TSR_REG_W8 ? (len + 3u) / 4u : len, got = 0;
    if (words == 0) return TSR_OK;
    kcmd_args a = { .op = TSR_OP_READ_MEM, .a = { pe, region, off, len }, .out_words = words };
    int status = 0;
    int rc = exec(k, TSR_PHASE_DEBUG, &a, &status, out, words, &got, e);
    if (rc) return rc;
    if (status) return kfail(k, status, "read memory", e);
    if (got != words)
        return tsr_seterr(e, TSR_ERR_DEVICE, "%s: read memory: %u words of %u", k->be->name, got,
                          words);
    return TSR_OK;
}

int tsr_kcmd_counters(tsr_kcmd *k, tsr_kcounters *kc, tsr_err *e)
{
    if (k->cards > 1) return pipe_counters(k, kc, e);
    /* the card's counters end with one pair per PE of its own profile */
    uint32_t pes = k->info.prof.pes < TSR_MAX_PES ? k->info.prof.pes : TSR_MAX_PES;
    uint32_t words = 2u * (TSR_KCOUNTERS_FIXED + pes), got = 0;
    uint32_t *w = calloc(words, sizeof *w);
    if (!w) return tsr_seterr(e, TSR_ERR_NOMEM, "%s: out of memory", k->be->name);
    kcmd_args a = { .op = TSR_OP_READ_COUNTERS, .out_words = words };
    int status = 0, rc = exec(k, TSR_PHASE_DEBUG, &a, &status, w, words, &got, e);
    if (!rc && status) rc = kfail(k, status, "read counters", e);
    if (!rc) tsr_kcounters_from_words(w, got, kc);
    free(w);
    return rc;
}

int tsr_kcmd_counters_text(tsr_kcmd *k, char *buf, size_t len, tsr_err *e)
{
    tsr_kcounters kc;
    int rc = tsr_kcmd_counters(k, &kc, e);
    if (rc) return rc;
    uint32_t pes = k->info.prof.pes < TSR_MAX_PES ? k->info.prof.pes : TSR_MAX_PES;
    tsr_kcounters_text(&kc, pes, k->info.profile, k->loaded ? &k->cfg : NULL,
                       k->info.clock_mhz > 0 ? k->info.clock_mhz : TSR_CLOCK_MHZ_DEFAULT, buf, len);
    return TSR_OK;
}
