/*
 * kcmd.c - the command layer (see kcmd.h): what a command's words are,
 * where its payload goes, how its answer comes back.
 *
 *   submit: payload -> in[off]; entry words 1..15 -> ctl ring slot; then
 *           the entry's seq word (publish: after everything else landed)
 *   await:  wait for the response's seq word, read status and words
 *   decode: submit, then watch out[0] (the kernel publishes the count of
 *           tokens written) and stream the new ids; cancel writes the
 *           ctl cancel word
 *
 * Link accounting is the protocol's, whatever the backend: a command costs
 * its TSR_CMD_WORDS words and its payload host->device, its response and
 * the answer words the host reads device->host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcmd.h"
#include "plan.h"

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

/* ------------------------------------------------------------------------ */
/* Open / close                                                               */

int tsr_kcmd_open(tsr_kcmd *k, const tsr_backend_iface *be, const tsr_devspec *spec, tsr_err *e)
{
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

/* The CONFIGURE payload: the integer words, then the two fp32 words. */
static void config_words(const tsr_kconfig *c, uint32_t w[TSR_KCONFIG_WORDS])
{
    const uint32_t ints[TSR_KCONFIG_INTS] = {
        c->magic, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab_size,
        c->seq_len, c->n_slots, c->dtype, c->group, c->mesh_rows, c->mesh_cols,
        c->shared_classifier, c->kv_split, c->att_pes, c->q4_kinds, c->kv_dtype, c->bos, c->eos
    };
    memcpy(w, ints, sizeof ints);
    memcpy(w + TSR_KCONFIG_INTS, &c->rope_theta, 4);
    memcpy(w + TSR_KCONFIG_INTS + 1, &c->norm_eps, 4);
}

int tsr_kcmd_load(tsr_kcmd *k, const tsr_checkpoint *m, const tsr_load_opts *o, tsr_err *e)
{
    int rc = tsr_kcmd_fit(k, m, o, NULL, NULL, e);
    if (rc) return rc;
    tsr_kconfig kc;
    tsr_wimage img;
    if ((rc = tsr_kcmd_config(k, m, o, &kc, e))) return rc;
    if ((rc = tsr_wimage_build(m, &kc, &img, e))) return rc;
    if (k->loaded && k->image_hash == img.hash) {
        /* the same image is resident: nothing crosses the link */
        tsr_wimage_free(&img);
        return TSR_OK;
    }
    k->loaded = 0;
    const int ph = TSR_PHASE_LOAD;
    uint32_t cfgw[TSR_KCONFIG_WORDS], fit[TSR_KFIT_WORDS] = { 0 };
    config_words(&kc, cfgw);
    kcmd_args a = { .op = TSR_OP_CONFIGURE, .in = cfgw, .in_words = TSR_KCONFIG_WORDS,
                    .out_words = TSR_KFIT_WORDS };
    int status = 0;
    if ((rc = exec(k, ph, &a, &status, fit, TSR_KFIT_WORDS, NULL, e))) goto out;
    if (status) { rc = kfail(k, status, "configure", e); goto out; }
    if (k->be->prepare) k->be->prepare(k->b, &kc);
    uint64_t sent = 4u * TSR_KCONFIG_WORDS;
    if (o->progress) o->progress(0, img.bytes, o->progress_user);   /* streaming starts */
    /* two payloads in flight: the host fills one half of `in` while the
     * kernel copies the other */
    uint32_t seqs[2] = { 0, 0 };
    for (int i = 0; i < img.n_chunks; i++) {
        const tsr_wchunk *ch = &img.chunks[i];
        int h = i & 1;
        if (seqs[h]) {
            if ((rc = await(k, seqs[h], ph, &status, NULL, e))) goto out;
            if (status) { rc = kfail(k, status, "load chunk", e); goto out; }
        }
        kcmd_args la = { .op = TSR_OP_LOAD, .a = { ch->pe, ch->region, ch->offset, ch->length },
                         .in_off = (uint32_t)h * TSR_LOAD_WORDS, .in = ch->data,
                         .in_words = ch->nbytes / 4u };
        if ((rc = submit(k, ph, &la, &seqs[h], e))) goto out;
        sent += ch->nbytes;
        if (o->progress) o->progress(sent, img.bytes, o->progress_user);
    }
    for (int h = 0; h < 2; h++)
        if (seqs[h]) {
            if ((rc = await(k, seqs[h], ph, &status, NULL, e))) goto out;
            if (status) { rc = kfail(k, status, "load chunk", e); goto out; }
        }
    k->loaded = 1;
    k->image_hash = img.hash;
    k->cfg = kc;
out:
    tsr_wimage_free(&img);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Sequences                                                                  */

int tsr_kcmd_reset(tsr_kcmd *k, int slot, tsr_err *e)
{
    return simple(k, TSR_PHASE_PREFILL, TSR_OP_RESET, (uint32_t)slot, 0, 0, "reset", e);
}

int tsr_kcmd_truncate(tsr_kcmd *k, int slot, int pos, int pending, tsr_err *e)
{
    return simple(k, TSR_PHASE_PREFILL, TSR_OP_TRUNCATE, (uint32_t)slot, (uint32_t)pos,
                  (uint32_t)pending, "truncate", e);
}

int tsr_kcmd_prefill(tsr_kcmd *k, int slot, const int *tokens, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
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

static int cancel_word(tsr_kcmd *k, uint32_t v, tsr_err *e)
{
    k->link.h2d[TSR_PHASE_DECODE] += 4u;
    return k->be->publish(k->b, TSR_BUF_CTL, TSR_CTL_CANCEL, v, e);
}

int tsr_kcmd_decode(tsr_kcmd *k, int slot, int n, const tsr_sampler *s, int *out, int *n_out,
                    tsr_token_fn on_token, void *user, int *cancel, tsr_err *e)
{
    *n_out = 0;
    if (n <= 0) return TSR_OK;
    if ((uint32_t)n + 1u > k->info.words[TSR_BUF_OUT])
        return tsr_seterr(e, TSR_ERR_RANGE, "%s: a decode of %d tokens exceeds the output buffer",
                          k->be->name, n);
    const int ph = TSR_PHASE_DECODE;
    uint32_t pay[2];
    memcpy(&pay[0], &s->temperature, 4);
    memcpy(&pay[1], &s->top_p, 4);
    kcmd_args a = { .op = TSR_OP_DECODE, .slot = (uint32_t)slot,
                    .a = { (uint32_t)n, (uint32_t)s->seed, (uint32_t)(s->seed >> 32),
                           (s->reseed ? TSR_DEC_RESEED : 0u) | (s->ignore_stop ? TSR_DEC_IGNORE_STOP : 0u) },
                    .in = pay, .in_words = 2, .out_words = (uint32_t)n + 1u };
    /* out[0] is the previous answer's first word until the kernel starts
     * this run and publishes 0: clear it, so a count read before that is 0 */
    uint32_t zero = 0, seq;
    int rc = k->be->write(k->b, TSR_BUF_OUT, 0, &zero, 1, e);
    if (rc) return rc;
    k->link.h2d[ph] += 4u;
    if ((rc = submit(k, ph, &a, &seq, e))) return rc;
    uint32_t nr = k->info.ring_n, r = TSR_CTL_RESP(nr) + ((seq - 1u) % nr) * TSR_RESP_WORDS;
    /* Watch the count word; hand new tokens to the caller as they appear
     * (the kernel publishes each token before the count that covers it). */
    uint32_t seen = 0, cnt = 0, rs = 0, buf[256];
    int cancelled = 0, done = 0, status = 0;
    for (;;) {
        if ((rc = k->be->read(k->b, TSR_BUF_CTL, r + TSR_RESP_SEQ, &rs, 1, e))) break;
        done = rs == seq;
        if ((rc = k->be->read(k->b, TSR_BUF_OUT, 0, &cnt, 1, e))) break;
        k->link.d2h[ph] += 4u;
        if (cnt > (uint32_t)n) cnt = (uint32_t)n;
        while (seen < cnt) {
            uint32_t m = cnt - seen < 256u ? cnt - seen : 256u;
            if ((rc = k->be->read(k->b, TSR_BUF_OUT, 1u + seen, buf, m, e))) break;
            k->link.d2h[ph] += 4ull * m;
            for (uint32_t i = 0; i < m; i++) {
                int tok = (int)buf[i];
                out[seen++] = tok;
                /* 0 -> 1 only: a cancel already sent (2) stays sent, so its
                 * word is cleared below */
                if (on_token && on_token(tok, user) && !cancelled) cancelled = 1;
            }
        }
        if (rc) break;
        if (!cancelled && cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE)) cancelled = 1;
        if (done) break;
        if (cancelled == 1) {
            if ((rc = cancel_word(k, 1u, e))) break;
            cancelled = 2;
        }
        uint32_t now;
        if ((rc = k->be->wait(k->b, TSR_BUF_OUT, 0, cnt, WAIT_SLICE_US, &now, e))) break;
    }
    if (!rc) rc = await(k, seq, ph, &status, NULL, e);
    if (cancelled == 2) {
        int rc2 = cancel_word(k, 0u, e);
        if (!rc) rc = rc2;
    }
    *n_out = (int)seen;
    if (!rc && status) rc = kfail(k, status, "decode", e);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Debug reads and counters                                                   */

int tsr_kcmd_read_logits(tsr_kcmd *k, float *logits, int n, tsr_err *e)
{
    if (n <= 0) return TSR_OK;
    kcmd_args a = { .op = TSR_OP_READ_LOGITS, .out_words = (uint32_t)n };
    int status = 0;
    uint32_t got = 0;
    int rc = exec(k, TSR_PHASE_DEBUG, &a, &status, logits, (uint32_t)n, &got, e);
    if (rc) return rc;
    return status ? kfail(k, status, "read logits", e) : TSR_OK;
}

int tsr_kcmd_read_mem(tsr_kcmd *k, uint32_t pe, uint32_t region, uint32_t off, uint32_t len,
                      uint32_t *out, tsr_err *e)
{
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
                       k->info.clock_mhz > 0 ? k->info.clock_mhz : 300, buf, len);
    return TSR_OK;
}
