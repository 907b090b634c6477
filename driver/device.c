/*
 * device.c - the public API's dispatch layer (after ggml-backend.c).
 *
 * Every public call lands here: the device's lock is taken, handles and
 * arguments are checked, state rules are enforced, and only then is a
 * backend hook called, so a backend never repeats those checks and never
 * sees two calls at once.  Host-side bookkeeping (each sequence's token
 * history, which token is pending on the device, timing, who references
 * whom) lives here too.
 *
 * Device-side state per sequence slot: `pos` tokens in the KV cache and one
 * pending token (the newest, not yet fed through the model).  The host
 * mirrors it: n_kv == pos and, when n_hist > 0, hist[n_kv] is pending, so
 * n_kv == n_hist - 1 after every prefill and decode.
 *
 * Lifetimes and threads: see device.h and tessera.h.  Every call is
 * bracketed by tsr_call_enter() and tsr_call_leave() (call.h): the
 * device's lock, calls from callbacks, per-thread error records.
 */
#include <assert.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi.h"
#include "backend.h"
#include "call.h"
#include "device.h"
#include "model.h"
#include "tokenizer.h"

/* A decode run takes every sequence a device can have. */
_Static_assert(TSR_MAX_SEQ_SLOTS <= TSR_KDEC_MAX, "a device's sequences in one decode run");

/* ------------------------------------------------------------ helpers --- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tsr_log(tsr_device *dev, int level, const char *fmt, ...)
{
    if (!dev || !dev->log) return;
    char line[TSR_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    dev->log(level, line, dev->log_user);
}

static const tsr_backend_iface *find_backend(const char *name)
{
    static const tsr_backend_iface *const all[] = {
        &tsr_backend_emu,
#ifdef TSR_WITH_XRT
        &tsr_backend_xrt,
#endif
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

/* Zero words of a struct's reserved tail (tessera.h, "Growing structs"). */
static int reserved_zero(const uint64_t *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r[i]) return 0;
    return 1;
}

#define RESERVED_OK(s) reserved_zero((s)->reserved, sizeof (s)->reserved / sizeof (s)->reserved[0])

/* ------------------------------------------------------- references --- */

/* Free the host side of m (its file and tokenizer) and take it off the
 * device: its sequences lose their slots. */
static void model_release(tsr_model *m)
{
    tsr_device *dev = m->dev;
    if (m->released) return;
    for (int i = 0; i < TSR_MAX_SEQ_SLOTS; i++)
        if (dev->slots[i] && dev->slots[i]->model == m) {
            dev->slots[i]->slot = -1;
            dev->slots[i] = NULL;
        }
    for (tsr_model **p = &dev->models; *p; p = &(*p)->next)
        if (*p == m) { *p = m->next; break; }
    if (dev->resident == m) dev->resident = NULL;
    tsr_tokenizer_free(m->tok);
    tsr_checkpoint_close(m->ck);
    m->tok = NULL;
    m->ck = NULL;
    m->released = 1;
}

static void model_unref(tsr_model *m)
{
    if (--m->refs > 0) return;
    assert(m->released);
    m->dev->refs--;
    free(m);
}

/* A model handle is usable while its device is open and it is the one
 * resident there. */
static int check_model(const tsr_model *m)
{
    tsr_device *dev = m->dev;
    if (dev->closed)
        return tsr_seterr(&dev->err, TSR_ERR_STATE, "the model's device was closed");
    if (m->released)
        return tsr_seterr(&dev->err, TSR_ERR_STATE, "the model was closed");
    if (dev->resident != m)
        return tsr_seterr(&dev->err, TSR_ERR_STATE,
                          "model %s is no longer resident on the device", m->ck->path);
    return TSR_OK;
}

static int check_seq(const tsr_seq *s)
{
    int rc = check_model(s->model);
    if (rc) return rc;
    if (s->slot < 0)   /* unreachable while the model is resident; defensive */
        return tsr_seterr(&s->model->dev->err, TSR_ERR_STATE, "the sequence lost its slot");
    return TSR_OK;
}

/* The KV precision named s ("f32", "f16", "int8"; NULL: f32), or -1. */
static int kv_from_name(const char *s)
{
    if (!s || !strcmp(s, "f32")) return TSR_KV_F32;
    if (!strcmp(s, "f16")) return TSR_KV_F16;
    if (!strcmp(s, "int8")) return TSR_KV_INT8;
    return -1;
}

/* ------------------------------------------------------------- device --- */

int tsr_device_open(const char *spec, tsr_device **out)
{
    if (!out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_device *dev = calloc(1, sizeof *dev);
    if (!dev) return TSR_ERR_NOMEM;
    if (pthread_mutex_init(&dev->mu, NULL) != 0) {
        free(dev);
        return TSR_ERR_NOMEM;
    }
    dev->id = tsr_call_new_id();
    dev->refs = 1;
    *out = dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = tsr_devspec_parse(spec, &dev->spec, &dev->err);
    if (rc == TSR_OK) {
        dev->be = find_backend(dev->spec.backend);
        if (!dev->be)
            rc = tsr_seterr(&dev->err, TSR_ERR_UNSUPPORTED,
                            "backend '%s' is not built into this libtessera", dev->spec.backend);
    }
    /* under mpirun every rank is a stage: one device would leave them idle */
    if (rc == TSR_OK && tsr_mpi_ranks() > 1 && dev->spec.cards <= 1)
        rc = tsr_seterr(&dev->err, TSR_ERR_ARG, "under mpirun with %d ranks the model is split "
                        "one stage a rank: cards=%d (--cards %d), or run without mpirun",
                        tsr_mpi_ranks(), tsr_mpi_ranks(), tsr_mpi_ranks());
    if (rc == TSR_OK) rc = tsr_kcmd_open(&dev->k, dev->be, &dev->spec, &dev->err);
    if (rc == TSR_OK) __atomic_store_n(&dev->live, dev->k.b, __ATOMIC_SEQ_CST);
    return tsr_call_leave(&c, rc);
}

void tsr_device_close(tsr_device *dev)
{
    if (!dev) return;
    tsr_call c;
    tsr_call_enter_close(&c, dev);
    dev->closed = 1;
    while (dev->models) model_release(dev->models);   /* slots go with them */
    if (dev->k.b) {
        /* No interrupt hook may run on the backend once it is freed: the
         * hook is entered only after counting itself in, and sees `live`
         * NULL after this store (both sequentially consistent). */
        __atomic_store_n(&dev->live, NULL, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&dev->cancels, __ATOMIC_SEQ_CST)) sched_yield();
        tsr_kcmd_close(&dev->k);   /* EXIT, then the backend; k.b becomes NULL */
    }
    dev->refs--;   /* the caller's */
    tsr_call_leave(&c, TSR_OK);
}

void tsr_device_set_log(tsr_device *dev, tsr_log_fn fn, void *user)
{
    if (!dev) return;
    tsr_call c;
    tsr_call_enter(&c, dev);
    dev->log = fn;
    dev->log_user = user;
    tsr_call_leave(&c, TSR_OK);
}

int tsr_device_traffic(const tsr_device *cdev, tsr_traffic *out)
{
    if (!cdev || !out) return TSR_ERR_ARG;
    tsr_device *dev = (tsr_device *)cdev;   /* the lock and error record change */
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = tsr_abi_check_out(&tsr_abi_traffic, out, &dev->err);
    if (rc) return tsr_call_leave(&c, rc);
    tsr_traffic full = { 0 }, *t = &full;   /* written up to out->size */
    if (!dev->k.b) {
        tsr_abi_write(&tsr_abi_traffic, out, &full);
        return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_STATE, "the device is not open"));
    }
    tsr_link_counters lc = dev->k.link;
    t->load_h2d = lc.h2d[TSR_PHASE_LOAD];       t->load_d2h = lc.d2h[TSR_PHASE_LOAD];
    t->prefill_h2d = lc.h2d[TSR_PHASE_PREFILL]; t->prefill_d2h = lc.d2h[TSR_PHASE_PREFILL];
    t->decode_h2d = lc.h2d[TSR_PHASE_DECODE];   t->decode_d2h = lc.d2h[TSR_PHASE_DECODE];
    t->debug_h2d = lc.h2d[TSR_PHASE_DEBUG];     t->debug_d2h = lc.d2h[TSR_PHASE_DEBUG];
    for (int p = 0; p < TSR_PHASE_COUNT; p++) t->invocations += lc.invocations[p];
    t->loads = dev->loads;
    t->link_prefill = lc.hop[TSR_PHASE_PREFILL];
    t->link_decode = lc.hop[TSR_PHASE_DECODE];
    for (int p = 0; p < TSR_PHASE_COUNT; p++) t->link_passes += lc.hops[p];
    tsr_abi_write(&tsr_abi_traffic, out, &full);
    return tsr_call_leave(&c, TSR_OK);
}

int tsr_device_pipeline(const tsr_device *cdev, tsr_pipeline *out)
{
    if (!cdev || !out) return TSR_ERR_ARG;
    tsr_device *dev = (tsr_device *)cdev;   /* the lock and error record change */
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = tsr_abi_check_out(&tsr_abi_pipeline, out, &dev->err);
    if (rc) return tsr_call_leave(&c, rc);
    tsr_pipeline full = { 0 }, *p = &full;   /* written up to out->size */
    if (!dev->k.b) {
        tsr_abi_write(&tsr_abi_pipeline, out, &full);
        return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_STATE, "the device is not open"));
    }
    const tsr_kcmd *k = &dev->k;
    if (k->cards > 1) {
        p->cards = k->cards;
        p->clock_mhz = k->info.clock_mhz > 0 ? k->info.clock_mhz : TSR_CLOCK_MHZ_DEFAULT;
        for (int s = 0; s < k->cards && s < TSR_MAX_CARDS; s++) {
            p->first_layer[s] = k->loaded ? k->bounds[s] : 0u;
            p->n_layers[s] = k->loaded ? k->bounds[s + 1] - k->bounds[s] : 0u;
            p->busy_cycles[s] = k->clk_busy[s];
            p->passes[s] = k->clk_passes[s];
        }
        p->prefill_cycles = k->dev_cycles[TSR_PHASE_PREFILL];
        p->prefill_tokens = k->dev_tokens[TSR_PHASE_PREFILL];
        p->decode_cycles = k->dev_cycles[TSR_PHASE_DECODE];
        p->decode_tokens = k->dev_tokens[TSR_PHASE_DECODE];
    }
    tsr_abi_write(&tsr_abi_pipeline, out, &full);
    return tsr_call_leave(&c, TSR_OK);
}

int tsr_device_kernel_counters(tsr_device *dev, char *buf, size_t len)
{
    if (!dev || !buf || len == 0) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, dev);
    buf[0] = '\0';
    int rc = tsr_call_drive(&c, "kernel counters");
    if (rc == TSR_OK && !dev->resident)
        rc = tsr_seterr(&dev->err, TSR_ERR_STATE, "no model loaded on the device");
    if (rc == TSR_OK) rc = tsr_kcmd_counters_text(&dev->k, buf, len, &dev->err);
    return tsr_call_leave(&c, rc);
}

/* -------------------------------------------------------------- model --- */

/* The options a caller passed, checked; zero options when opts is NULL. */
static int model_opts(tsr_device *dev, const tsr_model_opts *opts, tsr_model_opts *o)
{
    memset(o, 0, sizeof *o);
    if (opts) {
        int rc = tsr_abi_read(&tsr_abi_model_opts, opts, o, &dev->err);
        if (rc) return rc;
    }
    if (!RESERVED_OK(o))
        return tsr_seterr(&dev->err, TSR_ERR_UNSUPPORTED,
                          "model options: reserved fields are not zero (built against a newer "
                          "tessera.h?)");
    if (o->group_size < 0 || o->seq_len < 0 || o->n_seqs < 0 || o->n_seqs > TSR_MAX_SEQ_SLOTS)
        return tsr_seterr(&dev->err, TSR_ERR_ARG,
                          "model options: group_size, seq_len must be >= 0, n_seqs in 0..%d",
                          TSR_MAX_SEQ_SLOTS);
    if (kv_from_name(o->kv) < 0)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "KV precision '%s' (valid: f32, f16, int8)",
                          o->kv);
    if (o->weights < TSR_WEIGHTS_FILE || o->weights > TSR_WEIGHTS_Q4)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "weights format %d (valid: TSR_WEIGHTS_FILE, "
                          "TSR_WEIGHTS_Q8, TSR_WEIGHTS_Q4)", o->weights);
    return TSR_OK;
}

/* Place ck on dev with options o: fill *lo and pick the sequence slots, as
 * many as asked, or (n_seqs 0) as many as the on-chip budget allows, up to
 * TSR_MAX_SEQ_SLOTS.  tsr_model_fit and tsr_model_load share it, so both
 * report the same placement. */
static int place(tsr_device *dev, const tsr_checkpoint *ck, const tsr_model_opts *o,
                 tsr_load_opts *lo, uint64_t *need, uint64_t *have)
{
    memset(lo, 0, sizeof *lo);
    lo->weights_f32 = o->weights_f32;
    lo->weights = o->weights;
    lo->group_size = o->group_size;   /* 0: the file's */
    lo->kv = kv_from_name(o->kv);
    lo->seq_len = o->seq_len ? o->seq_len : ck->cfg.seq_len;
    /* the file's own context (Llama 3.2's 131072) beyond what the device's
     * profile holds: the profile's, said once; an asked-for seq_len is
     * checked as it is */
    uint32_t max_seq = dev->k.info.prof.seq;
    if (!o->seq_len && max_seq && (uint32_t)lo->seq_len > max_seq) {
        tsr_log(dev, TSR_LOG_INFO, "%s: context %u tokens, the most the device's profile holds "
                "(the file says %d; seq_len / --ctx sets it)", ck->path, max_seq, lo->seq_len);
        lo->seq_len = (int)max_seq;
    }
    int slots0 = o->n_seqs ? o->n_seqs : TSR_MAX_SEQ_SLOTS, seq0 = lo->seq_len, rc;
    for (;;) {
        int slots = slots0;
        for (;;) {
            lo->n_slots = slots;
            rc = tsr_kcmd_fit(&dev->k, ck, lo, need, have, &dev->err);
            if (rc != TSR_ERR_CAPACITY || o->n_seqs || slots == 1) break;
            slots--;
        }
        /* the file's context when its KV cache does not fit: halve it down
         * to 512 tokens (a real model's 8192 or 131072 on the emulator's
         * PEs); one that was asked for is not changed */
        if (rc != TSR_ERR_CAPACITY || o->seq_len || lo->seq_len <= 512) break;
        lo->seq_len /= 2;
    }
    if (rc == TSR_ERR_CAPACITY && lo->seq_len != seq0) {   // no context fits: say so for the file's
        lo->seq_len = seq0;
        lo->n_slots = o->n_seqs ? o->n_seqs : 1;
        rc = tsr_kcmd_fit(&dev->k, ck, lo, need, have, &dev->err);
    } else if (rc == TSR_OK && lo->seq_len != seq0) {
        tsr_log(dev, TSR_LOG_INFO, "%s: context %d tokens: the KV cache of the file's %d does "
                "not fit the device (seq_len / --ctx sets it)", ck->path, lo->seq_len, seq0);
    }
    return rc;
}

/* Captures the image size from the backend's progress calls on the way to
 * the caller's callback. */
typedef struct progress_tap {
    void   (*fn)(uint64_t sent, uint64_t total, void *user);
    void    *user;
    uint64_t total;
    int      called;
} progress_tap;

static void tap_progress(uint64_t sent, uint64_t total, void *user)
{
    progress_tap *t = user;
    t->total = total;
    t->called = 1;
    if (t->fn) t->fn(sent, total, t->user);
}

/* Place an opened checkpoint (path or memory) on dev; takes ck. */
static int load_checkpoint(tsr_device *dev, tsr_checkpoint *ck, const char *path,
                           const tsr_model_opts *o, tsr_model **out)
{
    int rc;
    tsr_model *m = calloc(1, sizeof *m);
    if (!m) {
        tsr_checkpoint_close(ck);
        return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    }
    m->ck = ck;
    m->dev = dev;
    m->refs = 1;
    const tsr_config *c = &m->ck->cfg;
    /* A NaN or Inf weight is undefined behaviour in the quantizer and
     * garbage in F32 mode: refused in every format, before anything else. */
    tsr_checkpoint_prefetch(ck);   /* from a cold cache: the whole file read ahead, in order */
    if ((rc = tsr_checkpoint_check_finite(ck, &dev->err))) goto fail;
    tsr_checkpoint_evict(ck);   /* the scan mapped pages the stream reads again later */
    if (!o->tokenizer && ck->tok) {
        m->tok = ck->tok;   // the file's own tokenizer (GGUF); the model takes it
        ck->tok = NULL;
    } else if (!o->tokenizer) {
        rc = tsr_seterr(&dev->err, TSR_ERR_ARG,
                        "%s: a tokenizer file is needed for llama2.c checkpoints "
                        "(tsr_model_opts.tokenizer; the tessera program's -z)", path);
        goto fail;
    } else {
        rc = tsr_tokenizer_load(o->tokenizer, c->vocab_size, &m->tok, &dev->err);
        if (rc) goto fail;
    }

    /* BOS starts a prompt and ends a text: the model's ids, whatever the
     * tokenizer file */
    tsr_tokenizer_set_special(m->tok, tsr_config_bos(c), tsr_config_eos(c));
    uint64_t need = 0, have = 0;
    if ((rc = place(dev, m->ck, o, &m->lo, &need, &have))) goto fail;
    m->seq_len = m->lo.seq_len;
    m->n_slots = m->lo.n_slots;
    /* the weights as they go on chip, and a notice when that is not the
     * file's own quantization */
    {
        tsr_kconfig kc;
        char line[TSR_ERRMSG_MAX];
        if (tsr_kcmd_config(&dev->k, m->ck, &m->lo, &kc, &dev->err) == TSR_OK) {
            if (tsr_wimage_notice(m->ck, &kc, line, sizeof line))
                tsr_log(dev, TSR_LOG_WARN, "%s", line);
            else if (kc.dtype == TSR_KDT_Q8 && !(c->kinds_q8 | c->kinds_q4))
                tsr_log(dev, TSR_LOG_INFO, "%s: fp32 weights quantized to Q8_0 group %u on chip "
                        "(--weights f32 keeps them)", path, kc.group);
        }
    }
    if (ck->chat_template && !tsr_chat_template_detect(ck->chat_template))
        tsr_log(dev, TSR_LOG_WARN, "%s: chat template not recognised (none of %s): chats are "
                "formatted with plain", path, tsr_chat_template_list());
    if (m->seq_len > c->seq_len && c->format == TSR_FMT_GGUF)
        tsr_log(dev, TSR_LOG_WARN, "%s: context %d exceeds the file's llama.context_length %d "
                "(fine if the model was trained longer; converters may write less)",
                path, m->seq_len, c->seq_len);

    /* Another model's sequences lose their slots. */
    for (int i = 0; i < TSR_MAX_SEQ_SLOTS; i++)
        if (dev->slots[i]) { dev->slots[i]->slot = -1; dev->slots[i] = NULL; }
    dev->resident = NULL;

    /* The backend streams nothing when the same image (content hash) is
     * already resident; count only images that crossed the link. */
    progress_tap tap = { .fn = o->progress, .user = o->progress_user };
    m->lo.progress = tap_progress;
    m->lo.progress_user = &tap;
    uint64_t before = dev->k.link.h2d[TSR_PHASE_LOAD];
    rc = tsr_kcmd_load(&dev->k, m->ck, &m->lo, &dev->err);
    m->lo.progress = NULL;          /* tap lives on this stack only */
    m->lo.progress_user = NULL;
    if (rc) goto fail;
    /* the device's memory is the weights' one home now: let the file go */
    tsr_checkpoint_drop_weights(m->ck);
    if (dev->k.link.h2d[TSR_PHASE_LOAD] != before) dev->loads++;
    if (tap.called) dev->image_bytes = tap.total;   /* else: the resident image */
    m->image_bytes = dev->image_bytes;
    m->next = dev->models;
    dev->models = m;
    dev->resident = m;
    dev->refs++;   /* the model's reference */
    tsr_log(dev, TSR_LOG_INFO, "%s: resident on %s, %d sequence slot%s of %d tokens, "
            "%llu of %llu on-chip bytes", path, dev->be->name, m->n_slots,
            m->n_slots == 1 ? "" : "s", m->seq_len, (unsigned long long)need,
            (unsigned long long)have);
    *out = m;
    return TSR_OK;
fail:
    tsr_tokenizer_free(m->tok);
    tsr_checkpoint_close(m->ck);
    free(m);
    return rc;
}

/* The checks every load and fit starts with. */
static int load_ready(const tsr_call *c, tsr_device *dev)
{
    int rc = tsr_call_drive(c, "model load");
    if (rc == TSR_OK && dev->closed)
        rc = tsr_seterr(&dev->err, TSR_ERR_STATE, "the device was closed");
    if (rc == TSR_OK && !dev->k.b)
        rc = tsr_seterr(&dev->err, TSR_ERR_STATE, "device is not open");
    return rc;
}

int tsr_model_load(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                   tsr_model **out)
{
    if (!dev || !path || !out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_call c;
    tsr_call_enter(&c, dev);
    tsr_model_opts o;
    tsr_checkpoint *ck = NULL;
    int rc = load_ready(&c, dev);
    if (rc == TSR_OK) rc = model_opts(dev, opts, &o);
    if (rc == TSR_OK) rc = tsr_checkpoint_open(path, &ck, &dev->err);
    if (rc == TSR_OK) rc = load_checkpoint(dev, ck, path, &o, out);
    return tsr_call_leave(&c, rc);
}

int tsr_model_load_memory(tsr_device *dev, const void *data, size_t len,
                          const tsr_model_opts *opts, tsr_model **out)
{
    if (!dev || !data || !out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_call c;
    tsr_call_enter(&c, dev);
    tsr_model_opts o;
    tsr_checkpoint *ck = NULL;
    int rc = load_ready(&c, dev);
    if (rc == TSR_OK) rc = model_opts(dev, opts, &o);
    if (rc == TSR_OK) rc = tsr_checkpoint_open_memory(data, len, "(memory)", &ck, &dev->err);
    if (rc == TSR_OK) rc = load_checkpoint(dev, ck, "(memory)", &o, out);
    return tsr_call_leave(&c, rc);
}

int tsr_model_fit(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                  uint64_t *need_bytes, uint64_t *have_bytes)
{
    if (!dev || !path) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, dev);
    tsr_model_opts o;
    tsr_checkpoint *ck = NULL;
    tsr_load_opts lo;
    uint64_t need = 0, have = 0;
    int rc = load_ready(&c, dev);
    if (rc == TSR_OK) rc = model_opts(dev, opts, &o);
    if (rc == TSR_OK) rc = tsr_checkpoint_open(path, &ck, &dev->err);
    if (rc == TSR_OK) rc = place(dev, ck, &o, &lo, &need, &have);
    tsr_checkpoint_close(ck);
    if (need_bytes) *need_bytes = need;
    if (have_bytes) *have_bytes = have;
    return tsr_call_leave(&c, rc);
}

void tsr_model_close(tsr_model *m)
{
    if (!m) return;
    tsr_call c;
    tsr_call_enter_close(&c, m->dev);
    model_release(m);   /* a no-op when the device close did it */
    model_unref(m);     /* the caller's reference */
    tsr_call_leave(&c, TSR_OK);
}

int tsr_model_get_info(const tsr_model *m, tsr_model_info *out)
{
    if (!m || !out) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, m->dev);
    int rc = tsr_abi_check_out(&tsr_abi_model_info, out, &m->dev->err);
    if (rc) return tsr_call_leave(&c, rc);
    tsr_model_info full = { 0 }, *info = &full;   /* written up to out->size */
    if (m->released) {
        tsr_abi_write(&tsr_abi_model_info, out, &full);
        return tsr_call_leave(&c, tsr_seterr(&m->dev->err, TSR_ERR_STATE, "the model was closed"));
    }
    const tsr_config *cf = &m->ck->cfg;
    info->dim = cf->dim;
    info->hidden_dim = cf->hidden_dim;
    info->n_layers = cf->n_layers;
    info->n_heads = cf->n_heads;
    info->n_kv_heads = cf->n_kv_heads;
    info->vocab_size = cf->vocab_size;
    info->seq_len = m->seq_len;
    info->n_seqs = m->n_slots;
    info->n_params = tsr_checkpoint_param_count(m->ck);
    info->image_bytes = m->image_bytes;
    info->bos = tsr_config_bos(cf);
    info->eos = tsr_config_eos(cf);
    /* what is on chip, as the placement put it */
    tsr_kconfig kc;
    if (m->dev && tsr_kcmd_config(&m->dev->k, m->ck, &m->lo, &kc, NULL) == TSR_OK) {
        info->group_size = kc.dtype == TSR_KDT_Q8 ? (int)kc.group : 0;
        tsr_wimage_describe(&kc, info->weights, sizeof info->weights);
        snprintf(info->kv, sizeof info->kv, "%s", tsr_wimage_kv_name(kc.kv_dtype));
    }
    tsr_abi_write(&tsr_abi_model_info, out, &full);
    return tsr_call_leave(&c, TSR_OK);
}

int tsr_model_tokenize(tsr_model *m, const char *text, int bos, int *tokens,
                       int max_tokens, int *n_tokens)
{
    if (!m || !text || !tokens || !n_tokens || max_tokens < 0) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, m->dev);
    int rc = m->released ? tsr_seterr(&m->dev->err, TSR_ERR_STATE, "the model was closed")
                         : tsr_tokenizer_encode(m->tok, text,
                                                bos && tsr_tokenizer_add_bos(m->tok), 0, tokens,
                                                max_tokens, n_tokens, &m->dev->err);
    return tsr_call_leave(&c, rc);
}

/* Lock-free: the tokenizer is read-only while the model's host side lives,
 * and only a close (never concurrent with a use) releases it. */
const char *tsr_model_token_text(const tsr_model *m, int prev, int token, size_t *len)
{
    if (len) *len = 0;
    if (!m || !len || m->released || token < 0 || token >= m->ck->cfg.vocab_size) return NULL;
    return tsr_tokenizer_piece(m->tok, prev, token, len);
}

/* Lock-free as tsr_model_token_text: the checkpoint's template is read-only
 * while the model's host side lives. */
const char *tsr_model_chat_template(const tsr_model *m, const char **text)
{
    if (text) *text = NULL;
    if (!m || m->released) return NULL;
    const char *t = m->ck->chat_template, *f = tsr_chat_template_detect(t);
    if (text) *text = t;
    return f ? f : tsr_chat_template_find("plain");
}

/* ----------------------------------------------------------- sequence --- */

int tsr_seq_open(tsr_model *m, tsr_seq **out)
{
    if (!m || !out) return TSR_ERR_ARG;
    *out = NULL;
    tsr_device *dev = m->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = tsr_call_drive(&c, "sequence open");
    if (rc == TSR_OK) rc = check_model(m);
    if (rc) return tsr_call_leave(&c, rc);
    int slot = -1;
    for (int i = 0; i < m->n_slots; i++)
        if (!dev->slots[i]) { slot = i; break; }
    if (slot < 0)
        return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_NOSLOT,
                                    "all %d sequence slot%s in use (the KV budget holds %d)",
                                    m->n_slots, m->n_slots == 1 ? " is" : "s are", m->n_slots));
    tsr_seq *s = calloc(1, sizeof *s);
    if (!s) return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory"));
    s->cap = m->seq_len + 1;
    s->hist = malloc((size_t)s->cap * sizeof *s->hist);
    if (!s->hist) {
        free(s);
        return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory"));
    }
    s->model = m;
    s->slot = slot;
    rc = tsr_kcmd_reset(&dev->k, slot, &dev->err);
    if (rc) {
        free(s->hist);
        free(s);
        return tsr_call_leave(&c, rc);
    }
    dev->slots[slot] = s;
    m->refs++;   /* the sequence's reference */
    *out = s;
    return tsr_call_leave(&c, TSR_OK);
}

void tsr_seq_close(tsr_seq *s)
{
    if (!s) return;
    tsr_model *m = s->model;
    tsr_device *dev = m->dev;
    tsr_call c;
    tsr_call_enter_close(&c, dev);
    if (s->slot >= 0 && dev->slots[s->slot] == s) dev->slots[s->slot] = NULL;
    free(s->hist);
    free(s);
    model_unref(m);   /* may free m, and with it the last reference to dev */
    tsr_call_leave(&c, TSR_OK);
}

/* Snapshot the device's link counters, to charge a call's traffic to s. */
static void link_snapshot(const tsr_seq *s, tsr_link_counters *lc)
{
    *lc = s->model->dev->k.link;
}

/* Share v among m sequences: sequence j's part (the first takes the
 * remainder), so that the parts add up to v. */
static uint64_t share(uint64_t v, int m, int j)
{
    return v / (uint64_t)m + (j == 0 ? v % (uint64_t)m : 0u);
}

/* Charge the traffic since `before` to the m sequences ss (of one device)
 * that a call ran, shared evenly: the commands of a batch serve them all. */
static void charge(tsr_seq *const *ss, int m, const tsr_link_counters *before)
{
    tsr_link_counters now;
    link_snapshot(ss[0], &now);
    for (int j = 0; j < m; j++) {
        seq_counters *c = &ss[j]->st;
        c->prefill_h2d += share(now.h2d[TSR_PHASE_PREFILL] - before->h2d[TSR_PHASE_PREFILL], m, j);
        c->prefill_d2h += share(now.d2h[TSR_PHASE_PREFILL] - before->d2h[TSR_PHASE_PREFILL], m, j);
        c->decode_h2d += share(now.h2d[TSR_PHASE_DECODE] - before->h2d[TSR_PHASE_DECODE], m, j);
        c->decode_d2h += share(now.d2h[TSR_PHASE_DECODE] - before->d2h[TSR_PHASE_DECODE], m, j);
        for (int p = 0; p < TSR_PHASE_COUNT; p++)
            c->invocations += share(now.invocations[p] - before->invocations[p], m, j);
    }
}

/* Prefill n tokens (lock held, s checked). */
static int append_tokens(tsr_seq *s, const int *tokens, int n)
{
    tsr_device *dev = s->model->dev;
    if (!tokens || n < 0)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "append: NULL tokens or negative count");
    if (n == 0) return TSR_OK;
    /* Every token but the newest gets a KV entry and seq_len bounds the KV:
     * n_hist + n - 1 <= seq_len, written so that no int can overflow
     * (0 <= n_hist <= seq_len + 1).  Checked first, so that a count larger
     * than the array is refused before any token is read. */
    if (n > s->model->seq_len + 1 - s->n_hist)
        return tsr_seterr(&dev->err, TSR_ERR_RANGE,
                          "append: %d token%s after %d would pass the %d-token context",
                          n, n == 1 ? "" : "s", s->n_hist, s->model->seq_len);
    int vocab = s->model->ck->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return tsr_seterr(&dev->err, TSR_ERR_ARG,
                              "append: token %d at index %d is outside the vocab (0..%d)",
                              tokens[i], i, vocab - 1);
    tsr_link_counters before;
    link_snapshot(s, &before);
    double t0 = now_s();
    int rc = tsr_kcmd_prefill(&dev->k, s->slot, tokens, n, &dev->err);
    s->st.prefill_seconds += now_s() - t0;
    charge(&s, 1, &before);
    if (rc) return rc;
    memcpy(s->hist + s->n_hist, tokens, (size_t)n * sizeof *tokens);
    s->n_hist += n;
    s->n_kv = s->n_hist - 1;
    s->st.prefill_tokens += (uint64_t)n;
    return TSR_OK;
}

/* The checks every call on a sequence that drives the device starts with. */
static int seq_ready(const tsr_call *c, const tsr_seq *s, const char *what)
{
    int rc = tsr_call_drive(c, what);
    return rc ? rc : check_seq(s);
}

int tsr_seq_append_tokens(tsr_seq *s, const int *tokens, int n)
{
    if (!s) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, s->model->dev);
    int rc = seq_ready(&c, s, "append");
    if (rc == TSR_OK) rc = append_tokens(s, tokens, n);
    return tsr_call_leave(&c, rc);
}

int tsr_seq_append_text(tsr_seq *s, const char *text)
{
    if (!s) return TSR_ERR_ARG;
    tsr_device *dev = s->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = seq_ready(&c, s, "append");
    if (rc) return tsr_call_leave(&c, rc);
    if (!text) return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_ARG, "append: NULL text"));
    /* Upper bound: BOS, the dummy space, one token per byte (byte fallback);
     * the encoder counts in int. */
    size_t len = strlen(text);
    if (len > (size_t)INT_MAX - 3)
        return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_RANGE,
                                    "append: %zu bytes of text is more than the tokenizer takes",
                                    len));
    size_t max = len + 3;
    int *toks = malloc(max * sizeof *toks);
    if (!toks) return tsr_call_leave(&c, tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory"));
    int n = 0;
    rc = tsr_tokenizer_encode(s->model->tok, text,
                              s->n_hist == 0 && tsr_tokenizer_add_bos(s->model->tok), 0, toks,
                              (int)max, &n, &dev->err);
    if (!rc) rc = append_tokens(s, toks, n);
    free(toks);
    return tsr_call_leave(&c, rc);
}

/* One sequence of a generate call. */
typedef struct gen_seq {
    tsr_seq *s;
    int      n_hist0;  /* its history's length before the call           */
    int      seen;     /* tokens its callback has seen                   */
    int      prev;     /* the token before the next one: its text's spacing */
    int      stopped;  /* its callback asked to stop after token `seen`  */
    int      eog_stop; /* stop after an end-of-generation token that the
                          kernel's BOS/EOS rule does not know (<|im_end|>) */
    double   t_first;  /* when its first token reached the host          */
} gen_seq;

/* Bridges the command layer's token callback to the public one, with
 * timing: sequence k of the decode run is g[k]. */
typedef struct gen_ctx {
    gen_seq     *g;
    tsr_token_cb cb;
    void        *user;
} gen_ctx;

static int on_token(int k, int token, void *user)
{
    gen_ctx *c = user;
    gen_seq *g = &c->g[k];
    if (g->stopped) return 1;   /* already asked; later tokens are dropped */
    /* A cancel stops the stream here, however far the device sampled ahead
     * while the callback ran (a slow callback sees tokens arrive in one
     * burst): the rest are dropped and the device rewound, as for a
     * callback's stop. */
    if (__atomic_load_n(&g->s->cancel, __ATOMIC_ACQUIRE)) return g->stopped = 1;
    if (g->seen == 0) g->t_first = now_s();
    g->seen++;
    if (c->cb) {
        /* its text as tsr_model_token_text gives it; none for BOS and EOS,
         * which end the text */
        const tsr_config *cf = &g->s->model->ck->cfg;
        size_t len = 0;
        const char *text = token == tsr_config_bos(cf) || token == tsr_config_eos(cf)
                               ? NULL : tsr_tokenizer_piece(g->s->model->tok, g->prev, token, &len);
        if (!text) len = 0;
        g->stopped = c->cb(g->s, token, text ? text : "", len, c->user) != 0;
    }
    g->prev = token;
    /* the vocabulary's other end-of-generation tokens stop as EOS does:
     * after they are written */
    if (g->eog_stop && tsr_tokenizer_is_eog(g->s->model->tok, token)) g->stopped = 1;
    return g->stopped;
}

static int gen_opts_ok(tsr_device *dev, const tsr_gen_opts *o, const char *who)
{
    if (!o) return tsr_seterr(&dev->err, TSR_ERR_ARG, "%s: NULL options", who);
    if (!RESERVED_OK(o))
        return tsr_seterr(&dev->err, TSR_ERR_UNSUPPORTED,
                          "%s: reserved option fields are not zero (built against a "
                          "newer tessera.h?)", who);
    /* !(x >= 0) also refuses NaN, which every comparison fails */
    if (o->max_tokens < 0 || !(o->temperature >= 0.0f) || !isfinite(o->temperature) ||
        !(o->top_p >= 0.0f) || !isfinite(o->top_p))
        return tsr_seterr(&dev->err, TSR_ERR_ARG,
                          "%s: max_tokens, temperature and top_p must be finite and >= 0 "
                          "(temperature %g, top_p %g)", who, (double)o->temperature,
                          (double)o->top_p);
    return TSR_OK;
}

/* The caller's options opts (n,), an array of the caller's struct (its
 * elements its first one's size apart, tessera.h "Growing structs"), read
 * into o (n,). */
static int gen_opts_in(tsr_device *dev, const tsr_gen_opts *opts, int n, tsr_gen_opts *o)
{
    size_t size = tsr_abi_size(&tsr_abi_gen_opts, opts);
    const char *p = (const char *)opts;
    for (int k = 0; k < n; k++, p += size) {
        if (tsr_abi_size(&tsr_abi_gen_opts, p) != size)
            return tsr_seterr(&dev->err, TSR_ERR_ARG, "generate batch: options %d state size "
                              "%zu, options 0 %zu (an array has one size)", k,
                              tsr_abi_size(&tsr_abi_gen_opts, p), size);
        int rc = tsr_abi_read(&tsr_abi_gen_opts, p, &o[k], &dev->err);
        if (rc) return rc;
    }
    return TSR_OK;
}

/* The checks of a generate on seqs (n of them, n >= 1, seqs[0] on the
 * call's device), all before anything runs: each on the same device,
 * distinct, open, of the resident model (so all of one model), with
 * sound options (read into o, (n,)) and a prompt. */
static int gen_ready(const tsr_call *c, tsr_seq *const *seqs, int n, const tsr_gen_opts *opts,
                     tsr_gen_opts *o)
{
    tsr_device *dev = c->dev;
    int rc = tsr_call_drive(c, n == 1 ? "generate" : "generate batch");
    if (rc == TSR_OK && !opts)
        return tsr_seterr(&dev->err, TSR_ERR_ARG, "%s: NULL options",
                          n == 1 ? "generate" : "generate batch");
    if (rc == TSR_OK) rc = gen_opts_in(dev, opts, n, o);
    for (int k = 0; k < n && rc == TSR_OK; k++) {
        const tsr_seq *s = seqs[k];
        char who[48];
        if (n == 1) snprintf(who, sizeof who, "generate");
        else snprintf(who, sizeof who, "generate batch: sequence %d", k);
        if (!s) return tsr_seterr(&dev->err, TSR_ERR_ARG, "%s is NULL", who);
        if (s->model->dev != dev)
            return tsr_seterr(&dev->err, TSR_ERR_ARG,
                              "%s belongs to another device than sequence 0", who);
        for (int j = 0; j < k; j++)
            if (seqs[j] == s)
                return tsr_seterr(&dev->err, TSR_ERR_ARG, "%s is sequence %d again", who, j);
        if ((rc = check_seq(s))) break;
        if ((rc = gen_opts_ok(dev, &o[k], who))) break;
        if (s->n_hist == 0)
            rc = tsr_seterr(&dev->err, TSR_ERR_STATE,
                            "%s: the sequence is empty; append a prompt first", who);
    }
    return rc;
}

/* Generate on seqs (n, checked; lock held): each sequence's decode run on
 * the device, together, then each history, cancel and stats. */
static int generate(tsr_device *dev, tsr_seq *const *seqs, int n, const tsr_gen_opts *opts,
                    tsr_token_cb cb, void *user, int *n_generated)
{
    gen_seq g[TSR_MAX_SEQ_SLOTS];
    tsr_kdec q[TSR_MAX_SEQ_SLOTS];   /* q[j] is g[j].s's run             */
    int which[TSR_MAX_SEQ_SLOTS];    /* g[j].s is seqs[which[j]]         */
    int m = 0, total = 0;
    for (int k = 0; k < n; k++) {
        tsr_seq *s = seqs[k];
        const tsr_gen_opts *o = &opts[k];
        /* A cancel that came before this call is kept: it stops this one. */
        if (__atomic_exchange_n(&s->cancel, 0, __ATOMIC_SEQ_CST)) {
            __atomic_store_n(&s->cancelled, 1, __ATOMIC_RELEASE);
            continue;
        }
        __atomic_store_n(&s->cancelled, 0, __ATOMIC_RELEASE);
        int room = s->model->seq_len - s->n_kv;
        int want = o->max_tokens < room ? o->max_tokens : room;
        if (want <= 0) continue;
        q[m] = (tsr_kdec){
            .slot = s->slot, .n = want, .cancel = &s->cancel,
            .smp = { .temperature = o->temperature, .top_p = o->top_p > 0.0f ? o->top_p : 1.0f,
                     .seed = o->seed ? o->seed : TSR_DEFAULT_SEED,
                     .reseed = !s->seeded || o->seed != s->seed, .ignore_stop = o->ignore_stop },
        };
        s->seeded = 1;
        s->seed = o->seed;
        g[m] = (gen_seq){ .s = s, .n_hist0 = s->n_hist, .prev = s->hist[s->n_hist - 1],
                          .eog_stop = !o->ignore_stop };
        which[m++] = k;
        total += want;
    }
    if (m == 0) return TSR_OK;

    int *out = malloc((size_t)total * sizeof *out);   /* each run's (n,) ids in turn */
    if (!out) return tsr_seterr(&dev->err, TSR_ERR_NOMEM, "out of memory");
    for (int j = 0, at = 0; j < m; at += q[j].n, j++) q[j].out = out + at;
    gen_ctx c = { .g = g, .cb = cb, .user = user };
    tsr_link_counters before = dev->k.link;
    double t_start = now_s();
    int rc = tsr_kcmd_decode(&dev->k, q, m, on_token, &c, &dev->err);
    for (int j = 0; j < m; j++) {
        tsr_seq *s = g[j].s;
        int got = q[j].got;
        /* The device may have sampled past the token whose callback asked
         * to stop, or past a cancel: rewind it, so the history is exactly
         * what the caller saw (no token at all: back to the prompt's end). */
        if (rc == TSR_OK && g[j].stopped && got > g[j].seen) {
            got = g[j].seen;
            int pending = got > 0 ? q[j].out[got - 1] : s->hist[g[j].n_hist0 - 1];
            rc = tsr_kcmd_truncate(&dev->k, s->slot, g[j].n_hist0 + got - 1, pending, &dev->err);
        }
        if (got > 0) memcpy(s->hist + g[j].n_hist0, q[j].out, (size_t)got * sizeof *out);
        s->n_hist = g[j].n_hist0 + got;
        s->n_kv = s->n_hist - 1;
        /* This generate takes the cancel that stopped it (or came as it ended). */
        int cancelled = __atomic_exchange_n(&s->cancel, 0, __ATOMIC_SEQ_CST) != 0;
        __atomic_store_n(&s->cancelled, cancelled, __ATOMIC_RELEASE);
        s->st.decode_tokens += (uint64_t)got;
        if (g[j].seen > 0) {
            s->st.ttft_ms = 1e3 * (g[j].t_first - t_start);
            /* Tokens reach the host in bursts (it polls the output buffer),
             * so the rate is taken over the whole call, not between
             * callbacks. */
            double wall = now_s() - t_start;
            s->st.decode_tok_s = wall > 0 ? g[j].seen / wall : 0.0;
        }
        if (n_generated) n_generated[which[j]] = got;
    }
    tsr_seq *ran[TSR_MAX_SEQ_SLOTS];
    for (int j = 0; j < m; j++) ran[j] = g[j].s;
    charge(ran, m, &before);
    free(out);
    return rc;
}

int tsr_seq_generate(tsr_seq *s, const tsr_gen_opts *opts, tsr_token_cb cb, void *user,
                     int *n_generated)
{
    if (n_generated) *n_generated = 0;
    if (!s) return TSR_ERR_ARG;
    tsr_device *dev = s->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    tsr_gen_opts o[1];
    int rc = gen_ready(&c, &s, 1, opts, o);
    if (rc == TSR_OK) rc = generate(dev, &s, 1, o, cb, user, n_generated);
    return tsr_call_leave(&c, rc);
}

int tsr_seq_generate_batch(tsr_seq *const *seqs, int n, const tsr_gen_opts *opts,
                           tsr_token_cb cb, void *user, int *n_generated)
{
    if (n_generated && seqs && n > 0 && n <= TSR_MAX_SEQ_SLOTS)
        memset(n_generated, 0, (size_t)n * sizeof *n_generated);
    if (!seqs || n < 1 || !seqs[0]) return TSR_ERR_ARG;
    tsr_device *dev = seqs[0]->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = TSR_OK;
    if (n > TSR_MAX_SEQ_SLOTS)
        rc = tsr_seterr(&dev->err, TSR_ERR_ARG,
                        "generate batch: %d sequences; a device has at most %d", n,
                        TSR_MAX_SEQ_SLOTS);
    tsr_gen_opts o[TSR_MAX_SEQ_SLOTS];
    if (rc == TSR_OK) rc = gen_ready(&c, seqs, n, opts, o);
    if (rc == TSR_OK) rc = generate(dev, seqs, n, o, cb, user, n_generated);
    return tsr_call_leave(&c, rc);
}

/* Async-signal-safe: atomics and the backend's interrupt hook, no lock.
 * The device's backend cannot be freed under the hook (tsr_device_close
 * waits for `cancels` to drain after clearing `live`). */
void tsr_seq_cancel(tsr_seq *s)
{
    if (!s) return;
    __atomic_store_n(&s->cancel, 1, __ATOMIC_SEQ_CST);
    tsr_device *dev = s->model->dev;
    __atomic_add_fetch(&dev->cancels, 1, __ATOMIC_SEQ_CST);
    tsr_backend *b = __atomic_load_n(&dev->live, __ATOMIC_SEQ_CST);
    if (b && dev->be->interrupt) dev->be->interrupt(b);
    __atomic_sub_fetch(&dev->cancels, 1, __ATOMIC_SEQ_CST);
}

int tsr_seq_was_cancelled(const tsr_seq *s)
{
    return s ? __atomic_load_n(&s->cancelled, __ATOMIC_ACQUIRE) : 0;
}

/* Calls that only read a sequence: its model and device need not be open,
 * only its own history must still be there. */
static int seq_readable(const tsr_seq *s)
{
    tsr_device *dev = s->model->dev;
    if (dev->closed) return tsr_seterr(&dev->err, TSR_ERR_STATE, "the sequence's device was closed");
    if (s->model->released)
        return tsr_seterr(&dev->err, TSR_ERR_STATE, "the sequence's model was closed");
    return TSR_OK;
}

int tsr_seq_length(const tsr_seq *s)
{
    if (!s) return 0;
    tsr_call c;
    tsr_call_enter(&c, s->model->dev);
    int rc = seq_readable(s), n = rc ? 0 : s->n_hist;
    tsr_call_leave(&c, rc);
    return n;
}

int tsr_seq_tokens(const tsr_seq *s, const int **tokens, int *n)
{
    if (!s || !tokens || !n) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, s->model->dev);
    int rc = seq_readable(s);
    *tokens = rc ? NULL : s->hist;
    *n = rc ? 0 : s->n_hist;
    return tsr_call_leave(&c, rc);
}

int tsr_seq_truncate(tsr_seq *s, int n)
{
    if (!s) return TSR_ERR_ARG;
    tsr_device *dev = s->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = seq_ready(&c, s, "truncate");
    if (rc == TSR_OK && (n < 1 || n > s->n_hist))
        rc = tsr_seterr(&dev->err, TSR_ERR_RANGE, "truncate: length %d outside 1..%d", n,
                        s->n_hist);
    if (rc == TSR_OK) rc = tsr_kcmd_truncate(&dev->k, s->slot, n - 1, s->hist[n - 1], &dev->err);
    if (rc == TSR_OK) {
        s->n_hist = n;
        s->n_kv = n - 1;
    }
    return tsr_call_leave(&c, rc);
}

int tsr_seq_reset(tsr_seq *s)
{
    if (!s) return TSR_ERR_ARG;
    tsr_device *dev = s->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = seq_ready(&c, s, "reset");
    if (rc == TSR_OK) rc = tsr_kcmd_reset(&dev->k, s->slot, &dev->err);
    if (rc == TSR_OK) {
        s->n_hist = 0;
        s->n_kv = 0;
    }
    return tsr_call_leave(&c, rc);
}

int tsr_seq_get_stats(const tsr_seq *s, tsr_seq_stats *out)
{
    if (!s || !out) return TSR_ERR_ARG;
    tsr_call c;
    tsr_call_enter(&c, s->model->dev);
    int rc = tsr_abi_check_out(&tsr_abi_seq_stats, out, &s->model->dev->err);
    if (rc) return tsr_call_leave(&c, rc);
    tsr_seq_stats full = { 0 }, *st = &full;   /* written up to out->size */
    rc = seq_readable(s);
    if (rc == TSR_OK) {
        st->prefill_tokens = s->st.prefill_tokens;
        st->decode_tokens = s->st.decode_tokens;
        st->prefill_h2d = s->st.prefill_h2d;
        st->prefill_d2h = s->st.prefill_d2h;
        st->decode_h2d = s->st.decode_h2d;
        st->decode_d2h = s->st.decode_d2h;
        st->invocations = s->st.invocations;
        st->ttft_ms = s->st.ttft_ms;
        st->decode_tok_s = s->st.decode_tok_s;
        st->prefill_tok_s = s->st.prefill_seconds > 0
                                ? (double)s->st.prefill_tokens / s->st.prefill_seconds : 0.0;
    }
    tsr_abi_write(&tsr_abi_seq_stats, out, &full);
    return tsr_call_leave(&c, rc);
}

int tsr_seq_read_logits(tsr_seq *s, float *logits, int n)
{
    if (!s) return TSR_ERR_ARG;
    tsr_device *dev = s->model->dev;
    tsr_call c;
    tsr_call_enter(&c, dev);
    int rc = seq_ready(&c, s, "read logits");
    if (rc) return tsr_call_leave(&c, rc);
    int vocab = s->model->ck->cfg.vocab_size;
    if (!logits || n < vocab)
        rc = tsr_seterr(&dev->err, TSR_ERR_ARG, "read_logits: need room for %d floats", vocab);
    else
        rc = tsr_kcmd_read_logits(&dev->k, s->slot, logits, vocab, &dev->err);
    return tsr_call_leave(&c, rc);
}
