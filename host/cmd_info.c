/* cmd_info.c - tessera info: a model file's header, parameters and bytes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const cli_command info_cmd = {
    "info", CLI_INFO,
    "usage: tessera info -m MODEL [-z TOKENIZER]\n"
    "\n"
    "Print a model file's header, its parameter count, the bytes each\n"
    "tensor group takes in the file, and the bytes the device holds on chip\n"
    "(weights and KV cache, with the default PEs and context).  With -z, also\n"
    "the tokenizer's vocabulary size, checked against the model's.\n", NULL, NULL
};

/* Count the records of a llama2.c tokenizer.bin (int32 max_token_length,
 * then per token a float score, an int32 length and the bytes).  Returns
 * the count, or -1 with why in err (cap bytes). */
static long tokenizer_count(const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int32_t max_len, len;
    float score;
    long n = 0;
    if (fread(&max_len, 4, 1, f) != 1 || max_len <= 0 || max_len > 1 << 16) {
        snprintf(err, cap, "%s: not a llama2.c tokenizer.bin (no max_token_length header)", path);
        n = -1;
    }
    while (n >= 0 && fread(&score, 4, 1, f) == 1) {
        if (fread(&len, 4, 1, f) != 1 || len < 0 || len > max_len || fseek(f, len, SEEK_CUR)) {
            snprintf(err, cap, "%s: token %ld is cut short or longer than max_token_length %d "
                     "(not a llama2.c tokenizer.bin?)", path, n, (int)max_len);
            n = -1;
        } else {
            n++;
        }
    }
    /* fseek past the end does not fail: the last record must end at the end */
    long at = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_END) == 0 && ftell(f) < at) {
        snprintf(err, cap, "%s: token %ld runs past the end (truncated?)", path, n - 1);
        n = -1;
    }
    fclose(f);
    return n;
}

/* -z: a llama2.c model's tokenizer checked against its vocabulary (a
 * GGUF file's is its own).  Returns the tokens, 0 for a GGUF file, or -1
 * after an error. */
static long check_tokenizer(const char *path, const tsr_file_info *fi)
{
    if (fi->architecture[0]) return 0;
    char err[600];
    long n = tokenizer_count(path, err, sizeof err);
    if (n < 0) {
        cli_error("info: %s", err);
    } else if (n != fi->vocab_size) {
        cli_error("info: %s holds %ld tokens, the model's vocab_size is %d (run would refuse "
                  "it)", path, n, fi->vocab_size);
        n = -1;
    }
    return n;
}

static void row(const char *name, uint64_t params, uint64_t bytes)
{
    printf("  %-12s %12llu params %12llu bytes\n", name, (unsigned long long)params,
           (unsigned long long)bytes);
}

int cmd_info(int argc, char **argv)
{
    cli_args a = { 0 };
    int prc = cli_parse(&info_cmd, argc, argv, &a);
    if (prc) return prc > 0 ? 0 : 2;
    const char *model = a.model;
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
    long n_tok = a.tokenizer ? check_tokenizer(a.tokenizer, &fi) : 0;
    if (n_tok < 0) return 1;
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
    if (a.tokenizer && n_tok > 0)
        printf("tokenizer:   %s, %ld tokens: the model's vocab\n", a.tokenizer, n_tok);
    else if (a.tokenizer)
        printf("tokenizer:   %s not used: a GGUF file carries its own\n", a.tokenizer);
    return cli_flush_stdout() ? 1 : 0;
}
