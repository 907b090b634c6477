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

static const char usage[] =
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
    "the model must fit its limits (docs/hls-flow.md).\n"
    "\n"
    "  -m, --model FILE      llama2.c checkpoint or GGUF file (only the header is read)\n"
    "      --shape SHAPE     plan a shape instead of a file: stories15M, stories42M,\n"
    "                        stories110M, DIMxLAYERS[:hidden=H,...] (as tessera synth)\n"
    "      --part PART       one of the parts table's (hw/parts.def): %s\n"
    "      --weights W       file (default: the file's own Q8_0 / Q4_0; a --shape or\n"
    "                        an fp32 file as Q8_0), q8, q4 (Q4_0, group 32), f32\n"
    "      --group-size N    quantization group (default: the file's; 32)\n"
    "      --kv f32|f16|int8 KV cache precision (default f32; int8 adds one fp32 scale\n"
    "                        per head vector per position)\n"
    "      --ctx N           context length (default: the model's; --seq-len N is the\n"
    "                        same, as in run)\n"
    "      --pes N           PEs per card, 1..4096 (default: the power of two up to 256\n"
    "                        with the fastest projection that fits; 16 if none fits)\n"
    "      --cols C          mesh columns: each matrix row is split over C PEs\n"
    "                        (a power of two; default: 1 with a profile whose sums\n"
    "                        keep run.c's order, else the profile's most that divide\n"
    "                        the PEs)\n"
    "      --kv-split N      PEs per KV head: its positions spread over N PEs\n"
    "                        (a power of two; default: 1 with a profile whose sums\n"
    "                        keep run.c's order, else as many as the PEs allow)\n"
    "      --profile NAME    plan for a shipped synthesis profile: stories260k,\n"
    "                        stories15m, generic (its PEs, arrays and limits; names\n"
    "                        and shapes in any case)\n"
    "      --clock MHZ       kernel clock (default: the part's)\n"
    "      --pos P           report the decode step (and the batched one) at position P\n"
    "                        (default: the last)\n"
    "      --cards K         split the layers over K cards (default 1)\n"
    "      --max-util PCT    utilisation ceiling: a design fits when its LUTs, FFs,\n"
    "                        DSPs, BRAM36 and URAM are each at most PCT %% of what\n"
    "                        the platform shell leaves (default 75)\n"
    "      --json            the same as one JSON object\n"
    "  -h, --help            this text\n"
    "\n"
    "exit status: 0 fits, 1 does not fit, 2 error (usage, unreadable model),\n"
    "3 cannot decide (hw/parts.def lacks the part's block or DSP counts)\n";

/* --cols and --kv-split: 1..hi, a power of two. */
static int pow2_opt(const char *o, const char *v, int hi, int *dst)
{
    if (cli_int(o, v, 1, hi, dst)) return -1;
    if (*dst & (*dst - 1)) {
        cli_error("option %s: %d is not a power of two", o, *dst);
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

int cmd_plan(int argc, char **argv)
{
    const char *model = NULL;
    tsr_plan_opts o;
    memset(&o, 0, sizeof o);
    int json = 0, pos = -1, util = 0;
    char profile[64];   /* --profile's value lowercased: the names are (stories15m) */
    for (int i = 0; i < argc; i++) {
        const char *a = cli_opt(&argc, argv, i), *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf(usage, tsr_part_list());
            return 0;
        }
#define VAL() if (!(v = cli_value(argc, argv, &i))) return 2
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) { VAL(); model = v; }
        else if (!strcmp(a, "--shape"))      { VAL(); o.shape = v; }
        else if (!strcmp(a, "--part"))       { VAL(); o.part = v; }
        else if (!strcmp(a, "--weights"))    { VAL(); if (cli_weights(a, v, &o.weights_f32, &o.weights)) return 2; }
        else if (!strcmp(a, "--group-size")) { VAL(); if (cli_int(a, v, 1, 1 << 16, &o.group_size)) return 2; }
        else if (!strcmp(a, "--ctx") || !strcmp(a, "--seq-len") || !strcmp(a, "--seq"))
                                             { VAL(); if (cli_int(a, v, 1, 1 << 24, &o.seq_len)) return 2; }
        else if (!strcmp(a, "--pes"))        { VAL(); if (cli_int(a, v, 1, 4096, &o.pes)) return 2; }
        else if (!strcmp(a, "--cols"))       { VAL(); if (pow2_opt(a, v, 64, &o.cols)) return 2; }
        else if (!strcmp(a, "--kv-split"))   { VAL(); if (pow2_opt(a, v, 4096, &o.kv_split)) return 2; }
        else if (!strcmp(a, "--profile"))    { VAL(); o.profile = lower(v, profile, sizeof profile); }
        else if (!strcmp(a, "--clock"))      { VAL(); if (cli_int(a, v, 1, 10000, &o.clock_mhz)) return 2; }
        else if (!strcmp(a, "--pos"))        { VAL(); if (cli_int(a, v, 0, 1 << 24, &pos)) return 2; }
        else if (!strcmp(a, "--cards"))      { VAL(); if (cli_int(a, v, 1, 1024, &o.cards)) return 2; }
        else if (!strcmp(a, "--max-util"))   { VAL(); if (cli_int(a, v, 1, 100, &util)) return 2;
                                               o.max_util = util; }
        else if (!strcmp(a, "--json"))       { json = 1; }
        else if (!strcmp(a, "--kv")) {
            VAL();
            if (strcmp(v, "f32") && strcmp(v, "f16") && strcmp(v, "int8")) {
                cli_error("option --kv: '%s' is not f32, f16 or int8", v);
                return 2;
            }
            o.kv = v;
        } else {
            cli_unknown("plan", a);
            return 2;
        }
#undef VAL
    }
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
    o.step = pos + 1;

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
