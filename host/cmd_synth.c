/* cmd_synth.c - tessera synth: write a synthetic llama2.c checkpoint, or a
 * GGUF file of the llama / qwen2 architecture with a real vocabulary. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const cli_command synth_cmd = {
    "synth", CLI_SYNTH,
    "usage: tessera synth --shape SHAPE -o FILE [--q8 | --legacy] [--group-size N] [--seed S]\n"
    "       tessera synth --arch llama3|qwen2 --vocab VOCAB.gguf -o FILE [--shape SHAPE]\n"
    "                     [--q8 | --q4] [--seed S]\n"
    "\n"
    "Write a llama2.c checkpoint with deterministic pseudo-random weights\n"
    "(normal, std 0.02), for benchmarks on shapes whose real weights are not at hand;\n"
    "with --arch, a GGUF file of that architecture (llama3: GGUF llama with Llama 3\n"
    "RoPE scaling; qwen2: q, k, v biases) with the vocabulary of a vocab-only GGUF\n"
    "(tokenizer.* metadata copied), as llama.cpp's converter writes them.\n", NULL, NULL
};

/* --arch: a GGUF file.  Returns the exit status. */
static int synth_gguf(const cli_args *a)
{
    int q8 = a->q8 || a->group_size;
    if (!a->arch || !a->vocab || !a->out) {
        cli_error("synth: --arch, --vocab and -o go together (see tessera synth --help)");
        return 2;
    }
    if (a->legacy || a->group_size || (q8 && a->q4)) {
        cli_error("synth: --arch takes --q8 or --q4, not --legacy or --group-size");
        return 2;
    }
    char err[512];
    const char *type = q8 ? "Q8_0" : a->q4 ? "Q4_0" : "F32";
    int rc = tsr_synth_gguf_file(a->arch, a->shape, a->vocab, a->out,
                                 q8 ? TSR_SYNTH_Q8_0 : a->q4 ? TSR_SYNTH_Q4_0 : TSR_SYNTH_F32,
                                 a->seed, err, sizeof err);
    if (rc != TSR_OK) {
        cli_error("%s", err);
        return rc == TSR_ERR_ARG ? 2 : 1;
    }
    struct stat sb;
    if (stat(a->out, &sb) == 0)
        fprintf(stderr, "tessera: wrote %s: GGUF %s, %s, %llu bytes\n", a->out, a->arch, type,
                (unsigned long long)sb.st_size);
    return 0;
}

/* A llama2.c checkpoint, read back to say what it holds.  Returns the
 * exit status. */
static int synth_llama2c(const cli_args *a)
{
    int q8 = a->q8 || a->group_size, group = a->group_size;
    if (!a->shape || !a->out) {
        cli_error("synth: --shape and -o are required (see tessera synth --help)");
        return 2;
    }
    if (a->legacy && q8) {
        cli_error("synth: --legacy is fp32; it cannot be combined with --q8 or --group-size");
        return 2;
    }
    if (q8 && !group) group = 32;
    if (a->legacy) group = TSR_SYNTH_LEGACY;
    char err[512];
    int rc = tsr_synth_file(a->shape, a->out, group, a->seed, err, sizeof err);
    if (rc != TSR_OK) {
        cli_error("%s", err);
        return rc == TSR_ERR_ARG ? 2 : 1;   /* a bad shape or group size is a usage error */
    }
    /* a pipe or a device (-o /dev/stdout) cannot be read back */
    struct stat sb;
    if (stat(a->out, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "tessera: wrote %s (not a regular file: not read back)\n", a->out);
        return 0;
    }
    tsr_file_info fi = { 0 };
    if (tsr_file_inspect(a->out, &fi, err, sizeof err) != TSR_OK) {
        cli_error("%s", err);
        return 1;
    }
    fprintf(stderr, "tessera: wrote %s: %s, %.2fM parameters, %llu bytes\n", a->out, fi.format,
            fi.n_params / 1e6, (unsigned long long)fi.file_bytes);
    return 0;
}

int cmd_synth(int argc, char **argv)
{
    cli_args a = { .seed = 42 };
    int prc = cli_parse(&synth_cmd, argc, argv, &a);
    if (prc) return prc > 0 ? 0 : 2;
    return a.arch || a.vocab || a.q4 ? synth_gguf(&a) : synth_llama2c(&a);
}
