/* cmd_synth.c - tessera synth: write a synthetic llama2.c checkpoint, or a
 * GGUF file of the llama / qwen2 architecture with a real vocabulary. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char usage[] =
    "usage: tessera synth --shape SHAPE -o FILE [--q8 | --legacy] [--group-size N] [--seed S]\n"
    "       tessera synth --arch llama3|qwen2 --vocab VOCAB.gguf -o FILE [--shape SHAPE]\n"
    "                     [--q8 | --q4] [--seed S]\n"
    "\n"
    "Write a llama2.c checkpoint with deterministic pseudo-random weights\n"
    "(normal, std 0.02), for benchmarks on shapes whose real weights are not at hand;\n"
    "with --arch, a GGUF file of that architecture (llama3: GGUF llama with Llama 3\n"
    "RoPE scaling; qwen2: q, k, v biases) with the vocabulary of a vocab-only GGUF\n"
    "(tokenizer.* metadata copied), as llama.cpp's converter writes them.\n"
    "\n"
    "  --shape SHAPE     stories260K | stories15M | stories42M | stories110M | DIMxLAYERS\n"
    "                    (DIMxLAYERS may add :hidden=H,heads=N,kv=K,vocab=V,seq=S,\n"
    "                    shared=0|1, the classifier shared with the embedding);\n"
    "                    with --arch llama3: llama3-tiny (default) | smollm2-135m |\n"
    "                    llama3.2-1b | DIMxLAYERS; qwen2: qwen2-tiny (default) |\n"
    "                    qwen2.5-0.5b | DIMxLAYERS\n"
    "  --arch ARCH       llama3 or qwen2: write GGUF (needs --vocab)\n"
    "  --vocab FILE      a vocab-only GGUF (../shared/vocab/ggml-vocab-*.gguf)\n"
    "  --q4              (--arch) Q4_0 matrices\n"
    "  -o FILE           output path\n"
    "  --q8              write version 2 (Q8_0) instead of version 1 (fp32); with\n"
    "                    --arch, Q8_0 matrices instead of F32\n"
    "  --legacy          write llama2.c's legacy (version 0) fp32 layout, which\n"
    "                    run.c and llama.cpp's llama-convert-llama2c-to-ggml read\n"
    "                    (the same weights as version 1 for the same seed)\n"
    "  --group-size N    Q8_0 group size (default 32; implies --q8)\n"
    "  --seed S          RNG seed (default 42)\n";

int cmd_synth(int argc, char **argv)
{
    const char *shape = NULL, *out = NULL, *arch = NULL, *vocab = NULL;
    int q8 = 0, q4 = 0, group = 0, legacy = 0;
    uint64_t seed = 42;
    for (int i = 0; i < argc; i++) {
        const char *a = cli_opt(&argc, argv, i), *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--shape")) {
            if (!(shape = cli_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-o")) {
            if (!(out = cli_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--q8")) {
            q8 = 1;
        } else if (!strcmp(a, "--q4")) {
            q4 = 1;
        } else if (!strcmp(a, "--arch")) {
            if (!(arch = cli_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--vocab")) {
            if (!(vocab = cli_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--legacy")) {
            legacy = 1;
        } else if (!strcmp(a, "--group-size")) {
            if (!(v = cli_value(argc, argv, &i)) || cli_int(a, v, 1, 1 << 16, &group)) return 2;
            q8 = 1;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = cli_value(argc, argv, &i)) || cli_u64(a, v, &seed)) return 2;
        } else {
            cli_unknown("synth", a);
            return 2;
        }
    }
    char err[512];
    if (arch || vocab || q4) {
        if (!arch || !vocab || !out) {
            cli_error("synth: --arch, --vocab and -o go together (see tessera synth --help)");
            return 2;
        }
        if (legacy || group || (q8 && q4)) {
            cli_error("synth: --arch takes --q8 or --q4, not --legacy or --group-size");
            return 2;
        }
        int rc = tsr_synth_gguf_file(arch, shape, vocab, out,
                                     q8 ? TSR_SYNTH_Q8_0 : q4 ? TSR_SYNTH_Q4_0 : TSR_SYNTH_F32,
                                     seed, err, sizeof err);
        if (rc != TSR_OK) {
            cli_error("%s", err);
            return rc == TSR_ERR_ARG ? 2 : 1;
        }
        struct stat sb;
        if (stat(out, &sb) == 0)
            fprintf(stderr, "tessera: wrote %s: GGUF %s, %s, %llu bytes\n", out, arch,
                    q8 ? "Q8_0" : q4 ? "Q4_0" : "F32", (unsigned long long)sb.st_size);
        return 0;
    }
    if (!shape || !out) {
        cli_error("synth: --shape and -o are required (see tessera synth --help)");
        return 2;
    }
    if (legacy && q8) {
        cli_error("synth: --legacy is fp32; it cannot be combined with --q8 or --group-size");
        return 2;
    }
    if (q8 && !group) group = 32;
    if (legacy) group = TSR_SYNTH_LEGACY;
    int rc = tsr_synth_file(shape, out, group, seed, err, sizeof err);
    if (rc != TSR_OK) {
        cli_error("%s", err);
        return rc == TSR_ERR_ARG ? 2 : 1;   /* a bad shape or group size is a usage error */
    }
    /* a pipe or a device (-o /dev/stdout) cannot be read back */
    struct stat sb;
    if (stat(out, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "tessera: wrote %s (not a regular file: not read back)\n", out);
        return 0;
    }
    tsr_file_info fi = { 0 };
    if (tsr_file_inspect(out, &fi, err, sizeof err) != TSR_OK) {
        cli_error("%s", err);
        return 1;
    }
    fprintf(stderr, "tessera: wrote %s: %s, %.2fM parameters, %llu bytes\n", out, fi.format,
            fi.n_params / 1e6, (unsigned long long)fi.file_bytes);
    return 0;
}
