/* cmd_plan.c - tessera plan: will a model fit an FPGA part's on-chip memory,
 * which blocks and DSPs it takes, and how fast it would decode, prefill and
 * decode a batch (projected by the cycle model; nothing here is measured on
 * hardware).
 *
 * Its exit status is the verdict, so a script can test it (as grep's says
 * match / no match / trouble): 0 fits, 1 does not fit, 2 error (bad usage,
 * unreadable model), 3 cannot decide (hw/parts.def lacks a figure). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_command plan_cmd = {
    "plan", CLI_PLAN,
    "usage: tessera plan (-m MODEL | --shape SHAPE) --part PART [options]\n"
    "\n"
    "Before a bitstream build: on-chip bytes (weights, scales, KV cache, norms,\n"
    "activations, scratch), BRAM36/URAM blocks after packing, DSPs, and the LUTs\n"
    "and flip-flops of the datapath's operators (hw/ops.def), per PE and per card,\n"
    "against a ceiling of what the part's shell leaves; fits or not (and which\n"
    "resource is over, by how much), and if not the smallest change that\n"
    "fits (a shorter context, an int8 KV cache, a split over K cards); projected\n"
    "cycles per decoded token and tokens/s, with the assumptions they rest on;\n"
    "from the same accounting, prefill tokens/s of a 128-token prompt (the\n"
    "context, if shorter) in passes of the profile's block of positions against\n"
    "one position a pass, and the aggregate and per-sequence tokens/s of a\n"
    "batched decode step of the profile's batch limit (min(slots, block)) of\n"
    "sequences at the reported position (the fit is for one sequence; a batch\n"
    "needs that many sequences' KV caches).\n"
    "Without --profile the arrays are sized for the model (the blocks a profile\n"
    "written for it would take); with --profile NAME they are that synthesis\n"
    "profile's (kernels/profiles/), as a bitstream built from it has them, and\n"
    "the model must fit its limits (docs/hls-flow.md).\n", NULL,
    "\n"
    "exit status: 0 fits, 1 does not fit, 2 error (usage, unreadable model),\n"
    "3 cannot decide (hw/parts.def lacks the part's block or DSP counts)\n"
};

/* --cols and --kv-split: a power of two (the table checks the range). */
static int pow2_opt(const char *o, int v)
{
    if (v & (v - 1)) {
        cli_error("option %s: %d is not a power of two", o, v);
        return -1;
    }
    return 0;
}

/* s in lowercase into buf (cap bytes, cut short if longer). */
static const char *lower(const char *s, char *buf, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++) buf[i] = (char)tolower((unsigned char)s[i]);
    buf[i] = '\0';
    return buf;
}

/* The plan options of a parsed command line into *o; 0, or -1 after an
 * error. */
static int plan_opts(const cli_args *a, tsr_plan_opts *o, char *profile, size_t cap)
{
    if ((a->cols && pow2_opt("--cols", a->cols)) || (a->kv_split && pow2_opt("--kv-split", a->kv_split)))
        return -1;
    memset(o, 0, sizeof *o);
    o->shape = a->shape;
    o->part = a->part;
    o->weights_f32 = a->weights_f32;
    o->weights = a->weights;
    o->group_size = a->group_size;
    o->seq_len = a->seq_len;
    o->pes = a->pes;
    o->cols = a->cols;
    o->kv_split = a->kv_split;
    o->profile = a->profile ? lower(a->profile, profile, cap) : NULL;
    o->clock_mhz = a->clock_mhz;
    o->cards = a->cards;
    o->max_util = a->max_util;
    o->kv = a->kv;
    o->step = a->pos + 1;
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    cli_args a = { .pos = -1 };
    int prc = cli_parse(&plan_cmd, argc, argv, &a);
    if (prc) return prc > 0 ? 0 : 2;
    tsr_plan_opts o;
    char profile[64];   /* --profile's value lowercased: the names are (stories15m) */
    if (plan_opts(&a, &o, profile, sizeof profile)) return 2;
    const char *model = a.model;
    int json = a.json;
    if (!model == !o.shape) {
        cli_error("plan: give one of -m MODEL or --shape SHAPE (see tessera plan --help)");
        return 2;
    }
    if (!o.part) {   /* the library's message lists the valid parts */
        char err[512] = "";
        tsr_plan_report(model, &o, 0, NULL, 0, NULL, err, sizeof err);
        cli_error("%s", err);
        return 2;
    }

    size_t cap = 1 << 16;
    char *buf = malloc(cap), err[512] = "";
    if (!buf) {
        cli_error("out of memory");
        return 2;
    }
    int fits = 0;
    int rc = tsr_plan_report(model, &o, json, buf, cap, &fits, err, sizeof err);
    if (rc != TSR_OK) {
        cli_error("%s", err);
        free(buf);
        return 2;
    }
    fputs(buf, stdout);
    free(buf);
    if (cli_flush_stdout()) return 2;
    return fits == 1 ? 0 : fits == 0 ? 1 : 3;
}
