/* cmd_info.c - tessera info: a model file's header, parameters and bytes. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: tessera info -m MODEL\n"
    "\n"
    "Print a model file's header, its parameter count, the bytes each\n"
    "tensor group takes in the file, and the bytes the device holds on chip\n"
    "(weights and KV cache, with the default PEs and context).\n";

static void row(const char *name, uint64_t params, uint64_t bytes)
{
    printf("  %-12s %12llu params %12llu bytes\n", name, (unsigned long long)params,
           (unsigned long long)bytes);
}

int cmd_info(int argc, char **argv)
{
    const char *model = NULL;
    for (int i = 0; i < argc; i++) {
        cli_opt(&argc, argv, i);
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "-m") || !strcmp(argv[i], "--model")) {
            if (!(model = cli_value(argc, argv, &i))) return 2;
        } else {
            cli_unknown("info", argv[i]);
            return 2;
        }
    }
    if (!model) {
        cli_error("info: -m MODEL is required");
        return 2;
    }
    tsr_file_info fi = { 0 };
    char err[512];
    if (tsr_file_inspect(model, &fi, err, sizeof err) != TSR_OK) {
        cli_error("%s", err);
        return 1;
    }
    printf("file:        %s (%llu bytes)\n", model, (unsigned long long)fi.file_bytes);
    if (fi.architecture[0]) printf("architecture: %s\n", fi.architecture);
    printf("format:      %s", fi.format);
    if (fi.group_size) printf(", group size %d", fi.group_size);
    printf("\n");
    printf("dim:         %d\n", fi.dim);
    printf("hidden_dim:  %d\n", fi.hidden_dim);
    printf("n_layers:    %d\n", fi.n_layers);
    printf("n_heads:     %d\n", fi.n_heads);
    printf("n_kv_heads:  %d%s\n", fi.n_kv_heads, fi.n_kv_heads < fi.n_heads ? " (GQA)" : "");
    printf("vocab_size:  %d\n", fi.vocab_size);
    printf("seq_len:     %d\n", fi.seq_len);
    printf("classifier:  %s\n", fi.shared_classifier ? "shared with the embedding" : "separate");
    printf("parameters:  %llu (%.2fM)\n", (unsigned long long)fi.n_params, fi.n_params / 1e6);
    printf("tensor groups:\n");
    row("embedding", fi.params_embedding, fi.bytes_embedding);
    row("attention", fi.params_attention, fi.bytes_attention);
    row("ffn", fi.params_ffn, fi.bytes_ffn);
    row("norms", fi.params_norms, fi.bytes_norms);
    if (!fi.shared_classifier) row("classifier", fi.params_classifier, fi.bytes_classifier);
    if (fi.architecture[0])
        printf("tensors by stored type: F32 %d, F16 %d, Q8_0 %d, Q4_0 %d "
               "(as held: each in its stored type, the byte figures above as stored)\n",
               fi.tensors_f32, fi.tensors_f16, fi.tensors_q8_0, fi.tensors_q4_0);
    if (fi.onchip_weights[0])
        printf("on chip:     %s by default: %llu bytes with 16 PEs and a %d-token fp32 KV "
               "cache\n",
               fi.onchip_weights, (unsigned long long)fi.onchip_bytes, fi.seq_len);
    printf("on-chip bytes (16 PEs, %d-token KV cache): %llu with Q8_0 weights (group 32), "
           "%llu with F32 weights\n", fi.seq_len, (unsigned long long)fi.onchip_q8_bytes,
           (unsigned long long)fi.onchip_f32_bytes);
    return cli_flush_stdout() ? 1 : 0;
}
