/*
 * plan_report.c - a plan as text or as one JSON object (tsr_plan_format),
 * and the cycle split of a real run (tsr_plan_run_estimate): formatting
 * only, every figure computed by plan.c and plan_cycles.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "profiles.h"
#include "weight_image.h"

/* ------------------------------------------------------------------------ */
/* Formatting                                                                 */

typedef struct sbuf {
    char  *p;
    size_t len, at;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->at < b->len ? b->p + b->at : NULL, b->at < b->len ? b->len - b->at : 0,
                      fmt, ap);
    va_end(ap);
    if (n > 0) b->at += (size_t)n;
}

static const char *kv_name(int kv) { return kv == TSR_KV_F16 ? "f16" : kv == TSR_KV_INT8 ? "int8" : "f32"; }

static void fmt_have(sbuf *b, long have, int shell_known)
{
    if (have < 0) put(b, "%10s", "unknown");
    else put(b, "%10ld%s", have, shell_known ? "" : "*");
}

/* Text: the model, its weights and KV cache, the mesh and the profile. */
static void text_model(const tsr_plan *p, const char *name, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    const tsr_part *pt = p->part;
    put(b, "tessera plan: %s on %s (%s)\n", name, pt->name, pt->family);
    put(b, "model:   dim %u, hidden %u, %u layers, %u heads (%u KV), vocab %u\n", k->dim,
        k->hidden_dim, k->n_layers, k->n_heads, k->n_kv_heads, k->vocab_size);
    char wdesc[160];
    tsr_wimage_describe(k, wdesc, sizeof wdesc);
    put(b, "weights: %s\n", wdesc);
    put(b, "KV:      %s x %u positions, 1 sequence%s\n", kv_name(p->kv), k->seq_len,
        p->kv == TSR_KV_INT8 ? " (one fp32 scale per head vector per position)" : "");
    const char *chosen = p->pes_chosen == 1 ? ", chosen: fastest projected that fits"
                         : p->pes_chosen != 2 ? ""
                         : p->with_profile && !p->profile_ok
                             ? ", the default: the profile does not hold the model (below)"
                         : p->decidable ? ", the default: no power of two up to 256 fits"
                                        : ", the default: no count chosen, the fit cannot be decided";
    put(b, "mesh:    %d PEs per card (%u x %u)%s, %d card%s; %u with attention, each KV head "
           "over %u\n", p->pes, k->mesh_rows, k->mesh_cols, chosen, p->cards,
        p->cards > 1 ? "s (layers pipelined across cards)" : "", k->att_pes, k->kv_split);
    if (p->with_profile)
        put(b, "profile: %s (its datapath and arrays)%s%s\n", p->profile,
            p->profile_ok ? "" : ": DOES NOT HOLD THE MODEL: ", p->profile_ok ? "" : p->profile_why);
    else
        put(b, "profile: the %s datapath (%u-way sums), arrays sized for this model: a profile "
               "to write (kernels/profiles/)\n", p->profile, p->prof.sum_lanes);
}

/* Text: the on-chip bytes of the fullest card. */
static void text_bytes(const tsr_plan *p, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    int q8 = k->dtype == TSR_KDT_Q8;
    put(b, "\non-chip bytes%s:\n", p->cards > 1 ? " (fullest card)" : "");
    put(b, "  weights      %14llu  %s tiles, URAM\n", (unsigned long long)p->bytes.weights,
        !q8 ? "fp32" : k->q4_kinds ? "int4 (Q4_0) and int8" : "int8");
    put(b, "  scales       %14llu  fp32 per group, %s\n", (unsigned long long)p->bytes.scales,
        p->prof.f32_uram ? "URAM" : "BRAM");
    put(b, "  KV cache     %14llu  %s, %s\n", (unsigned long long)p->bytes.kv, kv_name(p->kv),
        p->res.kv_in_uram ? "URAM" : "BRAM");
    put(b, "  norms        %14llu  controller\n", (unsigned long long)p->bytes.norms);
    put(b, "  activations  %14llu  controller vectors\n", (unsigned long long)p->bytes.activations);
    put(b, "  scratch      %14llu  PE partial sums and inputs, sampler buffers\n",
        (unsigned long long)p->bytes.scratch);
    put(b, "  total        %14llu  (stationary: weights + scales + KV + norms = %llu)\n",
        (unsigned long long)p->bytes.total, (unsigned long long)p->bytes.stationary);
    put(b, "  fullest PE   %14llu  weights + scales + KV\n", (unsigned long long)p->bytes.pe_max);
}

/* Text: what a profile's own arrays and datapath take, against what its
 * header states. */
static void text_profile_res(const tsr_plan *p, sbuf *b)
{
    long su, sb, sd;
    tsr_profile_stated(p->profile, &su, &sb, &sd);
    put(b, "  profile %s's arrays and datapath, every PE at its profile size (a bitstream "
           "built from it):\n            URAM %ld, BRAM36 %ld, DSP %ld, LUT %ld, FF %ld",
        p->profile, p->prof_res.uram, p->prof_res.bram, p->prof_res.dsp, p->prof_res.lut,
        p->prof_res.ff);
    long sl, sf;
    tsr_profile_stated_fabric(p->profile, &sl, &sf);
    if (su >= 0) put(b, " (its header states %ld, %ld, %ld, %ld, %ld)", su, sb, sd, sl, sf);
    put(b, "\n  the model uses of them: URAM %ld, BRAM36 %ld\n", p->res.uram, p->res.bram);
}

/* Text: the resource table (per PE, card, ceiling, part less shell). */
static void text_resources(const tsr_plan *p, sbuf *b)
{
    const tsr_part *pt = p->part;
    put(b, "\nresources (int8 tiles: 256-bit words, 4 URAM wide; the KV cache: words of 8 lanes; "
           "other arrays one memory "
           "per partition bank, BRAM36, <= 64 words LUTRAM; LUT, FF: the datapath's operators, "
           "hw/ops.def):\n");
    const tsr_plan_res *use = p->with_profile ? &p->prof_res : &p->res;
    long have[TSR_FIT_R_COUNT] = { p->lut_have, p->ff_have, p->dsp_have, p->bram_have, p->uram_have };
    long need[TSR_FIT_R_COUNT] = { use->lut, use->ff, use->dsp, use->bram, use->uram };
    long pe[TSR_FIT_R_COUNT] = { use->lut_pe, use->ff_pe, use->dsp_pe, use->bram_pe, use->uram_pe };
    int shell[TSR_FIT_R_COUNT] = { pt->shell_lut >= 0, pt->shell_ff >= 0, pt->shell_dsp >= 0,
                                   pt->shell_bram36 >= 0, pt->shell_uram >= 0 };
    put(b, "            per PE      card   ceiling  part less shell  (ceiling: %g%%)\n", p->max_util);
    for (int r = 0; r < TSR_FIT_R_COUNT; r++) {
        put(b, "  %-6s  %8ld  %8ld  ", tsr_fit_resource_name(r), pe[r], need[r]);
        long cap = tsr_fit_ceiling(have[r], p->max_util);
        if (cap < 0) put(b, "%8s", "unknown");
        else put(b, "%8ld", cap);
        fmt_have(b, have[r], shell[r]);
        if (cap >= 0 && need[r] > cap) put(b, "  OVER by %ld", need[r] - cap);
        put(b, "\n");
    }
    if (!shell[0] || !shell[1] || !shell[2] || !shell[3] || !shell[4])
        put(b, "  * whole device: the shell's reservation of it is not known to hw/parts.def\n");
    put(b, "  LUT by group:");
    for (int g = 0; g < TSR_FIT_GROUPS; g++)
        put(b, " %s %ld%s", tsr_fit_group_name(g), use->fab.g_lut[g], g + 1 < TSR_FIT_GROUPS ? "," : "\n");
    put(b, "  (an attention PE's own datapath %ld LUT; estimates from operator counts, not csynth)\n",
        use->fab.lut_att_pe);
    if (p->with_profile) text_profile_res(p, b);
    else put(b, "  these are what the model needs; a bitstream's are set by its profile "
                "(tessera plan --profile NAME, docs/hls-flow.md)\n");
}

/* Text: the smallest changes that fit, for a plan that does not. */
static void text_fixes(const tsr_plan *p, sbuf *b)
{
    put(b, "\nfit: DOES NOT FIT: %s\n", p->why);
    put(b, "smallest changes that fit:\n");
    if (p->fix_seq > 0) put(b, "  --ctx %d (a shorter context)\n", p->fix_seq);
    else put(b, "  a shorter context: none fits\n");
    if (p->kv != TSR_KV_INT8 && p->fix_kv_int8 >= 0)
        put(b, "  --kv int8: %s\n", p->fix_kv_int8 ? "fits" : "does not fit");
    if (p->fix_cards > 0 && p->clock_mhz > 0)
        put(b, "  --cards %d: split the layers over %d cards, %d PEs each (projected %.0f tok/s)\n",
            p->fix_cards, p->fix_cards, p->fix_cards_pes, p->fix_cards_tok_s);
    else if (p->fix_cards > 0)
        put(b, "  --cards %d: split the layers over %d cards, %d PEs each\n", p->fix_cards,
            p->fix_cards, p->fix_cards_pes);
    else if (p->emb_bytes > p->chip_bytes && p->chip_bytes)
        put(b, "  split over cards: none up to one layer per card fits: the embedding "
               "(%d x %d) alone takes %.1f MB on chip, a card holds %.1f MB, and a layer "
               "split keeps it whole on the first card%s\n", (int)p->kc.vocab_size,
            (int)p->kc.dim, p->emb_bytes / 1e6, p->chip_bytes / 1e6,
            p->kc.shared_classifier ? " (and, tied, as the classifier on the last)" : "");
    else put(b, "  split over cards: none up to one layer per card fits\n");
    if (!p->fix_cards && p->cards_floor > 0 && p->cards_floor < UINT64_MAX)
        put(b, "  the weight tiles alone need %llu card%s on-chip memory, however they are "
               "split\n", (unsigned long long)p->cards_floor, p->cards_floor == 1 ? "'s" : "s'");
}

/* Text: the longest contexts, the verdict, and what would fit. */
static void text_fit(const tsr_plan *p, sbuf *b)
{
    if (p->max_seq[0] || p->max_seq[1] || p->max_seq[2])
        put(b, "longest context that fits (%d PEs, the chip's limit, not the model's): "
               "f32 KV %d, f16 KV %d, int8 KV %d positions (0: none at that precision, "
               "by memory or DSPs, or the profile lacks it)\n", p->pes, p->max_seq[TSR_KV_F32],
            p->max_seq[TSR_KV_F16], p->max_seq[TSR_KV_INT8]);
    if (!p->decidable) put(b, "\nfit: CANNOT DECIDE: %s\n", p->why);
    else if (p->fits)
        put(b, "\nfit: FITS%s (LUT, FF, DSP, BRAM36, URAM under the %g%% ceiling; estimates "
               "until a csynth)\n", p->cards > 1 ? " each card" : "", p->max_util);
    else text_fixes(p, b);
}

/* Text: the projected decode step, its regions, and tokens/s at the clock. */
static void text_decode(const tsr_plan *p, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    const tsr_part *pt = p->part;
    put(b, "\nprojected decode (the kernel's cycle accounting, not measured on hardware):\n");
    put(b, "  cycles/token at position %d: %llu (controller %llu = %.1f%%, mesh %llu%s)\n", p->pos,
        (unsigned long long)p->cyc.total, (unsigned long long)p->cyc.controller,
        100.0 * p->controller_share, (unsigned long long)p->cyc.mesh,
        p->cyc.links ? ", card links" : "");
    put(b, "   ");
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, " %s %llu%s", tsr_plan_region_name(r), (unsigned long long)p->cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    if (p->cyc.links) put(b, ", card links %llu", (unsigned long long)p->cyc.links);
    put(b, "\n  mean cycles/token over positions 0..%u: %.0f\n", k->seq_len - 1, p->cycles_mean);
    if (p->clock_mhz > 0) {
        put(b, "  projected tokens/s at %d MHz (%s): %.0f at position %d, %.0f over a whole "
               "context\n", p->clock_mhz,
            p->clock_from == 0 ? "--clock" : p->clock_from == 1 ? "the profile's target clock, "
            "TSR_CLOCK_MHZ" : "the part's default kernel clock", p->tok_s, p->pos, p->tok_s_mean);
        put(b, "  streaming the weights instead (%llu bytes/token) would need %.1f GB/s off-chip",
            (unsigned long long)p->weight_bytes_all, p->stream_gbps);
        if (pt->offchip_gbps > 0) put(b, " (%s: %d GB/s)\n", pt->offchip_kind, pt->offchip_gbps);
        else put(b, " (%s: bandwidth unknown)\n", pt->offchip_kind);
    } else {
        put(b, "  projected tokens/s: unknown (no default clock for %s: give --clock MHZ)\n", pt->name);
    }
}

/* Text: the split as a pipeline: one sequence walks the stages in turn;
 * several in flight keep every stage busy. */
static void text_pipeline(const tsr_plan *p, sbuf *b)
{
    const tsr_plan_pipe *q = &p->pipe;
    put(b, "  pipeline at position %d, layers", p->pos);
    for (int c = 0; c < q->cards; c++)
        put(b, "%s%u-%u", c ? " | " : " ", p->bounds[c], p->bounds[c + 1] - 1u);
    put(b, ":\n    stage cycles");
    for (int c = 0; c < q->cards; c++)
        put(b, "%s%llu", c ? " | " : " ", (unsigned long long)q->stage[c]);
    put(b, " (card links included), the id back to card 0 %llu\n", (unsigned long long)q->ret);
    put(b, "    one sequence: %llu cycles/token (the stages in turn); %u in flight: %.0f "
           "cycles/token (%s), %.2fx\n", (unsigned long long)q->round, q->seqs,
        q->cycles_per_token, q->cycles_per_token > (double)q->slowest ? "the round trip" : "the slowest stage",
        (double)q->round / q->cycles_per_token);
    if (p->clock_mhz > 0)
        put(b, "    projected tokens/s at %d MHz: %.0f one sequence, %.0f aggregate of %u\n",
            p->clock_mhz, p->clock_mhz * 1e6 / (double)q->round, p->pipe_tok_s, q->seqs);
}

/* Text: passes of several items (prefill, a batched decode step): the
 * same accounting, each tile read once a pass. */
static void text_passes(const tsr_plan *p, sbuf *b)
{
    put(b, "\nprojected prefill (passes of up to %d positions, each weight tile read once a pass):\n",
        p->block);
    put(b, "  a %d-token prompt: %llu cycles in %u pass%s (one position a pass: %llu, %.2fx "
           "as many)\n", p->prefill_tokens, (unsigned long long)p->prefill_cycles,
        p->prefill_passes, p->prefill_passes == 1 ? "" : "es",
        (unsigned long long)p->prefill_cycles_1,
        p->prefill_cycles ? (double)p->prefill_cycles_1 / (double)p->prefill_cycles : 0.0);
    if (p->clock_mhz > 0)
        put(b, "  projected prefill tokens/s at %d MHz: %.0f\n", p->clock_mhz, p->prefill_tok_s);
    put(b, "projected batched decode (%d sequence%s a step, one pass over the weights for all, "
           "each at position %d; %s):\n", p->batch, p->batch == 1 ? "" : "s", p->pos,
        p->batch > 1 ? "their KV caches need that many sequence slots" : "the profile's limit");
    put(b, "  cycles/step: %llu (controller %llu, mesh %llu%s)\n",
        (unsigned long long)p->batch_cyc.total, (unsigned long long)p->batch_cyc.controller,
        (unsigned long long)p->batch_cyc.mesh, p->batch_cyc.links ? ", card links" : "");
    if (p->clock_mhz > 0)
        put(b, "  projected tokens/s at %d MHz: %.0f aggregate, %.0f per sequence (%.2fx one "
               "sequence's at that position)\n", p->clock_mhz, p->batch_tok_s,
            p->batch_tok_s / p->batch, p->tok_s > 0 ? p->batch_tok_s / p->tok_s : 0.0);
    put(b, "assumptions: %s\n", tsr_plan_assumptions());
    put(b, "part figures: %s\n", p->part->source);
}

static void fmt_text(const tsr_plan *p, const char *name, sbuf *b)
{
    text_model(p, name, b);
    text_bytes(p, b);
    text_resources(p, b);
    text_fit(p, b);
    text_decode(p, b);
    if (p->pipe.cards > 1) text_pipeline(p, b);
    text_passes(p, b);
}

/* "key":value, or "key":null when the value is unknown (known 0); prec
 * digits after the point (0: an integer). */
static void json_num(sbuf *b, const char *key, double v, int known, int prec)
{
    if (!known) put(b, "\"%s\":null,", key);
    else put(b, "\"%s\":%.*f,", key, prec, v);
}

/* JSON: the model, the mesh and the card count. */
static void json_model(const tsr_plan *p, const char *name, sbuf *b)
{
    const tsr_kconfig *k = &p->kc;
    const tsr_part *pt = p->part;
    put(b, "{\"model\":\"");
    for (const char *s = name; *s; s++) {   /* JSON string escape of the name */
        if (*s == '"' || *s == '\\') put(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) put(b, "\\u%04x", (unsigned char)*s);
        else put(b, "%c", *s);
    }
    put(b, "\",\"part\":\"%s\",\"profile\":\"%s\",\"profile_given\":%s,\"profile_holds\":%s,"
           "\"dim\":%u,\"hidden_dim\":%u,\"n_layers\":%u,\"n_heads\":%u,"
           "\"n_kv_heads\":%u,\"vocab_size\":%u,\"weights\":\"%s\",\"group_size\":%u,"
           "\"q4_kinds\":%u,\"kv\":\"%s\",\"seq_len\":%u,\"pes\":%d,\"pes_chosen\":%s,"
           "\"mesh_rows\":%u,\"mesh_cols\":%u,\"kv_split\":%u,\"att_pes\":%u,\"cards\":%d,",
        pt->name, p->profile, p->with_profile ? "true" : "false",
        !p->with_profile ? "null" : p->profile_ok ? "true" : "false", k->dim, k->hidden_dim,
        k->n_layers, k->n_heads, k->n_kv_heads, k->vocab_size,
        k->dtype != TSR_KDT_Q8 ? "f32" : k->q4_kinds ? "q4" : "q8", k->group, k->q4_kinds,
        kv_name(p->kv), k->seq_len, p->pes,
        p->pes_chosen ? "true" : "false", k->mesh_rows, k->mesh_cols, k->kv_split, k->att_pes,
        p->cards);
}

/* JSON: bytes, blocks, DSPs and fabric, and the ceiling's verdict. */
static void json_resources(const tsr_plan *p, sbuf *b)
{
    const tsr_part *pt = p->part;
    put(b, "\"bytes\":{\"weights\":%llu,\"scales\":%llu,\"kv\":%llu,\"norms\":%llu,"
           "\"activations\":%llu,\"scratch\":%llu,\"stationary\":%llu,\"total\":%llu,"
           "\"pe_max\":%llu},",
        (unsigned long long)p->bytes.weights, (unsigned long long)p->bytes.scales,
        (unsigned long long)p->bytes.kv, (unsigned long long)p->bytes.norms,
        (unsigned long long)p->bytes.activations, (unsigned long long)p->bytes.scratch,
        (unsigned long long)p->bytes.stationary, (unsigned long long)p->bytes.total,
        (unsigned long long)p->bytes.pe_max);
    put(b, "\"blocks\":{\"uram_pe\":%ld,\"uram\":%ld,", p->res.uram_pe, p->res.uram);
    json_num(b, "uram_have", (double)p->uram_have, p->uram_have >= 0, 0);
    put(b, "\"bram36_pe\":%ld,\"bram36\":%ld,", p->res.bram_pe, p->res.bram);
    json_num(b, "bram36_have", (double)p->bram_have, p->bram_have >= 0, 0);
    put(b, "\"kv_in_uram\":%s,\"dsp_pe\":%ld,\"dsp\":%ld,", p->res.kv_in_uram ? "true" : "false",
        p->res.dsp_pe, p->res.dsp);
    json_num(b, "dsp_have", (double)p->dsp_have, p->dsp_have >= 0, 0);
    put(b, "\"lut_pe\":%ld,\"lut\":%ld,", p->res.lut_pe, p->res.lut);
    json_num(b, "lut_have", (double)p->lut_have, p->lut_have >= 0, 0);
    put(b, "\"ff_pe\":%ld,\"ff\":%ld,", p->res.ff_pe, p->res.ff);
    json_num(b, "ff_have", (double)p->ff_have, p->ff_have >= 0, 0);
    put(b, "\"fabric\":{");
    for (int g = 0; g < TSR_FIT_GROUPS; g++)
        put(b, "\"%s\":[%ld,%ld]%s", tsr_fit_group_name(g), p->res.fab.g_lut[g], p->res.fab.g_ff[g],
            g + 1 < TSR_FIT_GROUPS ? "," : "");
    put(b, "},");
    if (p->with_profile)
        put(b, "\"profile\":{\"uram\":%ld,\"bram36\":%ld,\"dsp\":%ld,\"lut\":%ld,\"ff\":%ld},",
            p->prof_res.uram, p->prof_res.bram, p->prof_res.dsp, p->prof_res.lut, p->prof_res.ff);
    put(b, "\"max_util\":%g,", p->max_util);
    put(b, "\"over\":");
    if (p->over >= 0) put(b, "{\"resource\":\"%s\",\"by\":%ld},", tsr_fit_resource_name(p->over), p->over_by);
    else put(b, "null,");
    put(b, "\"shell_known\":%s},", pt->shell_uram >= 0 && pt->shell_bram36 >= 0 ? "true" : "false");
}

/* JSON: fits (null when the part table cannot decide it), the longest
 * contexts, and the fixes. */
static void json_fit(const tsr_plan *p, sbuf *b)
{
    put(b, "\"decidable\":%s,\"fits\":%s,", p->decidable ? "true" : "false",
        !p->decidable ? "null" : p->fits ? "true" : "false");
    put(b, "\"max_seq\":{");   /* the longest context per KV precision; null: none found */
    for (int kv = 0; kv < TSR_KV_COUNT; kv++) {
        if (p->max_seq[kv]) put(b, "\"%s\":%d%s", kv_name(kv), p->max_seq[kv], kv + 1 < TSR_KV_COUNT ? "," : "");
        else put(b, "\"%s\":null%s", kv_name(kv), kv + 1 < TSR_KV_COUNT ? "," : "");
    }
    put(b, "},");
    if (p->decidable && !p->fits) {   /* a fix not found is null */
        put(b, "\"fix\":{");
        json_num(b, "seq_len", p->fix_seq, p->fix_seq > 0, 0);
        put(b, "\"kv_int8_fits\":%s,", p->kv == TSR_KV_INT8 || p->fix_kv_int8 < 0 ? "null" : p->fix_kv_int8 ? "true" : "false");
        json_num(b, "cards", p->fix_cards, p->fix_cards > 0, 0);
        json_num(b, "cards_pes", p->fix_cards_pes, p->fix_cards > 0, 0);
        json_num(b, "cards_projected_tok_s", p->fix_cards_tok_s, p->fix_cards > 0 && p->clock_mhz > 0, 1);
        b->at--;   /* the last comma */
        put(b, "},");
    }
}

/* JSON: the projected decode step, its regions, clock and tokens/s. */
static void json_decode(const tsr_plan *p, sbuf *b)
{
    const tsr_part *pt = p->part;
    put(b, "\"projected\":{\"position\":%d,\"cycles\":%llu,\"cycles_controller\":%llu,"
           "\"cycles_mesh\":%llu,\"controller_share\":%.4f,\"cycles_links\":%llu,",
        p->pos, (unsigned long long)p->cyc.total, (unsigned long long)p->cyc.controller,
        (unsigned long long)p->cyc.mesh, p->controller_share, (unsigned long long)p->cyc.links);
    put(b, "\"regions\":{");
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, "\"%s\":%llu%s", tsr_plan_region_name(r), (unsigned long long)p->cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    put(b, "},\"cycles_mean\":%.1f,", p->cycles_mean);
    /* no clock: no tokens/s, and no streaming bandwidth */
    int clk = p->clock_mhz > 0;
    json_num(b, "clock_mhz", p->clock_mhz, clk, 0);
    if (clk)
        put(b, "\"clock_from\":\"%s\",", p->clock_from == 0 ? "option"
                                         : p->clock_from == 1 ? "profile" : "part");
    json_num(b, "tok_s", p->tok_s, clk, 1);
    json_num(b, "tok_s_mean", p->tok_s_mean, clk, 1);
    put(b, "\"weight_bytes_per_token\":%llu,", (unsigned long long)p->weight_bytes_all);
    json_num(b, "stream_gbps", p->stream_gbps, clk, 2);
    json_num(b, "offchip_gbps", pt->offchip_gbps, pt->offchip_gbps > 0, 0);
    put(b, "\"offchip_kind\":\"%s\"},", pt->offchip_kind);
}

/* JSON: the split's pipeline (clk: a clock is known). */
static void json_pipeline(const tsr_plan *p, int clk, sbuf *b)
{
    const tsr_plan_pipe *q = &p->pipe;
    put(b, "\"pipeline\":{\"cards\":%d,\"sequences\":%u,\"bounds\":[", q->cards, q->seqs);
    for (int c = 0; c <= q->cards; c++) put(b, "%u%s", p->bounds[c], c < q->cards ? "," : "");
    put(b, "],\"stage_cycles\":[");
    for (int c = 0; c < q->cards; c++)
        put(b, "%llu%s", (unsigned long long)q->stage[c], c + 1 < q->cards ? "," : "");
    put(b, "],\"return_cycles\":%llu,\"round_cycles\":%llu,\"cycles_per_token\":%.1f,",
        (unsigned long long)q->ret, (unsigned long long)q->round, q->cycles_per_token);
    json_num(b, "tok_s", p->pipe_tok_s, clk, 1);
    b->at--;
    put(b, "},");
}

/* JSON: the prefill and batched decode passes (clk: a clock is known). */
static void json_passes(const tsr_plan *p, int clk, sbuf *b)
{
    put(b, "\"prefill\":{\"tokens\":%d,\"block\":%d,\"passes\":%u,\"cycles\":%llu,"
           "\"cycles_one_a_pass\":%llu,", p->prefill_tokens, p->block, p->prefill_passes,
        (unsigned long long)p->prefill_cycles, (unsigned long long)p->prefill_cycles_1);
    json_num(b, "tok_s", p->prefill_tok_s, clk, 1);
    b->at--;   /* the last comma */
    put(b, "},\"batch\":{\"sequences\":%d,\"position\":%d,\"cycles\":%llu,"
           "\"cycles_controller\":%llu,\"cycles_mesh\":%llu,\"regions\":{", p->batch, p->pos,
        (unsigned long long)p->batch_cyc.total, (unsigned long long)p->batch_cyc.controller,
        (unsigned long long)p->batch_cyc.mesh);
    for (int r = 0; r < TSR_RG_COUNT; r++)
        put(b, "\"%s\":%llu%s", tsr_plan_region_name(r), (unsigned long long)p->batch_cyc.rg[r],
            r + 1 < TSR_RG_COUNT ? "," : "");
    put(b, "},");
    json_num(b, "tok_s", p->batch_tok_s, clk, 1);
    json_num(b, "seq_tok_s", p->batch > 0 ? p->batch_tok_s / p->batch : 0.0, clk, 1);
    b->at--;
    put(b, "},");
}

static void fmt_json(const tsr_plan *p, const char *name, sbuf *b)
{
    int clk = p->clock_mhz > 0;   /* no clock: no tokens/s, and no streaming bandwidth */
    json_model(p, name, b);
    json_resources(p, b);
    json_fit(p, b);
    json_decode(p, b);
    if (p->pipe.cards > 1) json_pipeline(p, clk, b);
    json_passes(p, clk, b);
    put(b, "\"assumptions\":\"%s\",\"part_source\":\"%s\"}\n", tsr_plan_assumptions(),
        p->part->source);
}

size_t tsr_plan_format(const tsr_plan *p, const char *name, int json, char *buf, size_t len)
{
    sbuf b = { buf, len, 0 };
    if (json) fmt_json(p, name ? name : "", &b);
    else fmt_text(p, name ? name : "", &b);
    if (len > 0 && b.at >= len) buf[len - 1] = '\0';
    return b.at;
}

/* ------------------------------------------------------------------------ */
/* The split of a real run (the kernel's counters)                           */

size_t tsr_plan_run_estimate(const uint64_t cyc[TSR_RG_COUNT], const uint64_t mark[TSR_RG_COUNT],
                             uint64_t pos, int clock_mhz, char *buf, size_t len)
{
    sbuf b = { buf, len, 0 };
    if (len > 0) buf[0] = '\0';
    uint64_t ctrl = 0, mesh = 0;
    put(&b, "cycles.position %llu\n", (unsigned long long)pos);
    for (int r = 0; r < TSR_RG_COUNT; r++) {
        uint64_t d = cyc[r] - mark[r];
        put(&b, "cycles.%s %llu\n", tsr_plan_region_name(r), (unsigned long long)d);
        if (r < TSR_RG_FIRST_MESH) ctrl += d;
        else mesh += d;
    }
    uint64_t total = ctrl + mesh;
    put(&b, "cycles.controller %llu\n", (unsigned long long)ctrl);
    put(&b, "cycles.mesh %llu\n", (unsigned long long)mesh);
    put(&b, "cycles.total %llu\n", (unsigned long long)total);
    put(&b, "cycles.controller_share %.4f\n", total ? (double)ctrl / (double)total : 0.0);
    if (clock_mhz > 0 && total)
        put(&b, "projected.tok_s %.1f at %d MHz (the kernel's cycle accounting, not measured)\n",
            clock_mhz * 1e6 / (double)total, clock_mhz);
    if (len > 0 && b.at >= len) buf[len - 1] = '\0';
    return b.at;
}
