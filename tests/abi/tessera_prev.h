/*
 * tessera_prev.h - "the previous header": tessera.h's growing structs as a
 * shorter, earlier version would declare them, for tests/test_abi_prev.c,
 * a client built against it and linked with today's library.
 *
 * Each struct starts with `size` and holds the fields every version has
 * (tessera.h, "Growing structs"): 0.2.0's fields, and all named fields of
 * the structs that never grew; none has a reserved tail.  So each is as
 * short as a struct the library must still serve: its size is the
 * library's minimum.  The calls are declared as tessera.h declares them
 * (the token callback as 0.3.0's; test_abi_prev passes none).  Frozen: do
 * not follow later changes of tessera.h here.
 */
#ifndef TESSERA_PREV_H
#define TESSERA_PREV_H

#include <stddef.h>
#include <stdint.h>

enum { TSR_OK = 0, TSR_ERR_ARG = 1, TSR_ERR_UNSUPPORTED = 5 };

typedef struct tsr_device tsr_device;
typedef struct tsr_model  tsr_model;
typedef struct tsr_seq    tsr_seq;

typedef struct tsr_traffic {
    size_t   size;
    uint64_t load_h2d, load_d2h, prefill_h2d, prefill_d2h, decode_h2d, decode_d2h;
    uint64_t debug_h2d, debug_d2h, invocations, loads;
} tsr_traffic;                                          /* 88 bytes */

#define TSR_MAX_CARDS 16
typedef struct tsr_pipeline {
    size_t   size;
    int      cards, clock_mhz;
    uint32_t first_layer[TSR_MAX_CARDS], n_layers[TSR_MAX_CARDS];
    uint64_t busy_cycles[TSR_MAX_CARDS], passes[TSR_MAX_CARDS];
    uint64_t prefill_cycles, prefill_tokens, decode_cycles, decode_tokens;
} tsr_pipeline;                                         /* 432 bytes */

typedef struct tsr_model_opts {
    size_t      size;
    const char *tokenizer;
    int         weights_f32, group_size, seq_len, n_seqs;
    void      (*progress)(uint64_t sent, uint64_t total, void *user);
    void       *progress_user;
} tsr_model_opts;                                       /* 48 bytes */

typedef struct tsr_model_info {
    size_t   size;
    int      dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
    int      seq_len, n_seqs;
    uint64_t n_params, image_bytes;
} tsr_model_info;                                       /* 56 bytes */

typedef struct tsr_gen_opts {
    size_t   size;
    int      max_tokens;
    float    temperature, top_p;
    uint64_t seed;
    int      ignore_stop;
} tsr_gen_opts;                                         /* 40 bytes */

typedef struct tsr_seq_stats {
    size_t   size;
    double   ttft_ms, decode_tok_s, prefill_tok_s;
    uint64_t prefill_tokens, decode_tokens;
    uint64_t prefill_h2d, prefill_d2h, decode_h2d, decode_d2h, invocations;
} tsr_seq_stats;                                        /* 88 bytes */

typedef struct tsr_chat_msg {
    size_t      size;
    const char *role, *content;
} tsr_chat_msg;                                         /* 24 bytes */

typedef struct tsr_file_info {
    size_t   size;
    char     format[48];
    int      dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
    int      seq_len, shared_classifier, group_size;
    uint64_t file_bytes, n_params;
    uint64_t params_embedding, bytes_embedding, params_attention, bytes_attention;
    uint64_t params_ffn, bytes_ffn, params_norms, bytes_norms;
    uint64_t params_classifier, bytes_classifier;
    char     architecture[16];
    int      tensors_f32, tensors_f16, tensors_q8_0, tensors_q4_0;
    uint64_t onchip_q8_bytes, onchip_f32_bytes;
} tsr_file_info;                                        /* 240 bytes */

typedef struct tsr_plan_opts {
    size_t      size;
    const char *part, *shape;
    int         weights_f32, group_size;
    const char *kv;
    int         seq_len, pes, clock_mhz, step, cards;
    const char *profile;
    int         cols, kv_split;
} tsr_plan_opts;                                        /* 80 bytes */

typedef int (*tsr_token_cb)(tsr_seq *s, int token, const char *text, size_t len, void *user);

const char *tsr_strerror(int status);
int  tsr_device_open(const char *spec, tsr_device **out);
void tsr_device_close(tsr_device *dev);
const char *tsr_device_errmsg(const tsr_device *dev);
int  tsr_device_traffic(const tsr_device *dev, tsr_traffic *t);
int  tsr_device_pipeline(const tsr_device *dev, tsr_pipeline *p);
int  tsr_model_load(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                    tsr_model **out);
void tsr_model_close(tsr_model *m);
int  tsr_model_get_info(const tsr_model *m, tsr_model_info *info);
int  tsr_seq_open(tsr_model *m, tsr_seq **out);
void tsr_seq_close(tsr_seq *s);
int  tsr_seq_append_text(tsr_seq *s, const char *text);
int  tsr_seq_generate(tsr_seq *s, const tsr_gen_opts *opts, tsr_token_cb cb, void *user,
                      int *n_generated);
int  tsr_seq_generate_batch(tsr_seq *const *seqs, int n, const tsr_gen_opts *opts,
                            tsr_token_cb cb, void *user, int *n_generated);
int  tsr_seq_tokens(const tsr_seq *s, const int **tokens, int *n);
int  tsr_seq_get_stats(const tsr_seq *s, tsr_seq_stats *st);
int  tsr_file_inspect(const char *path, tsr_file_info *info, char *err, size_t errlen);
int  tsr_plan_report(const char *path, const tsr_plan_opts *o, int json, char *buf,
                     size_t len, int *fits, char *err, size_t errlen);
int  tsr_chat_format(const char *family, const char *tmpl, const tsr_chat_msg *msgs,
                     int n_msgs, int add_generation_prompt, char *buf, size_t cap,
                     size_t *len);

#endif
