/* steering.c - steer a generation: cancel it, append an instruction, go on.
 *
 *   usage: steering MODEL TOKENIZER [PROMPT [INSTRUCTION]]
 *
 * Phase 1 asks for up to 50 greedy tokens and cancels from the token
 * callback after 10 (tsr_seq_cancel).  Phase 2 appends the instruction: only its token ids
 * cross the host link, since the KV cache of everything before stays on the
 * device.  Phase 3 generates 20 more tokens from there. */
#include <stdio.h>
#include <stdlib.h>
#include <tessera.h>

/* ------------------------------------------------------------- streaming --- */

typedef struct stream {
    int seen;        /* tokens received in this generate call              */
    int cancel_at;   /* cancel after this many tokens; 0: never            */
} stream;

/* Each token arrives with its text (the model's BOS and EOS: none). */
static int on_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)token;
    stream *st = user;
    fwrite(text, 1, len, stdout);
    if (++st->seen == st->cancel_at) {
        /* what another thread or a signal handler would call; from here,
         * the callback, this token is the last (as returning 1 would do),
         * and the generate reports itself cancelled */
        tsr_seq_cancel(s);
    }
    return 0;
}

/* Generate up to max_tokens, printing "[label] text\n". */
static int phase(tsr_seq *s, stream *st, const char *label, int max_tokens, int cancel_at)
{
    tsr_gen_opts go = { .max_tokens = max_tokens }; /* greedy */
    int got = 0;
    st->seen = 0;
    st->cancel_at = cancel_at;
    printf("[%s] ", label);
    int rc = tsr_seq_generate(s, &go, on_token, st, &got);
    printf("\n  (%d token%s%s)\n", got, got == 1 ? "" : "s",
           tsr_seq_was_cancelled(s) ? ", cancelled" : "");
    return rc;
}

/* ------------------------------------------------------------------ main --- */

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL TOKENIZER [PROMPT [INSTRUCTION]]\n", argv[0]);
        return 2;
    }
    const char *prompt = argc > 3 ? argv[3] : "Once upon a time";
    const char *instruction = argc > 4 ? argv[4] : " The dog said";
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    tsr_seq *seq = NULL;
    tsr_model_opts mo = { .tokenizer = argv[2] };
    stream st = { 0 };
    tsr_seq_stats before = { 0 }, after = { 0 };
    tsr_traffic t0 = { 0 }, t1 = { 0 };
    tsr_model_info mi = { 0 };
    int rc;
    if ((rc = tsr_device_open("emu", &dev)) != TSR_OK ||
        (rc = tsr_model_load(dev, argv[1], &mo, &model)) != TSR_OK ||
        (rc = tsr_seq_open(model, &seq)) != TSR_OK ||
        (rc = tsr_seq_append_text(seq, prompt)) != TSR_OK ||
        (rc = tsr_model_get_info(model, &mi)) != TSR_OK)
        goto out;

    /* Phase 1: ask for 50, cancel after 10. */
    printf("[prompt] %s\n", prompt);
    if ((rc = phase(seq, &st, "generate 50, cancel after 10", 50, 10)) != TSR_OK) goto out;

    /* Phase 2: append the instruction; measure what it sends. */
    int len0 = tsr_seq_length(seq);
    if ((rc = tsr_seq_get_stats(seq, &before)) != TSR_OK ||
        (rc = tsr_device_traffic(dev, &t0)) != TSR_OK ||
        (rc = tsr_seq_append_text(seq, instruction)) != TSR_OK ||
        (rc = tsr_seq_get_stats(seq, &after)) != TSR_OK ||
        (rc = tsr_device_traffic(dev, &t1)) != TSR_OK)
        goto out;
    printf("[append] %s\n  (%d tokens; host->device %llu bytes for this sequence, "
           "%llu bytes on the device link; the earlier %d tokens were not resent)\n",
           instruction, tsr_seq_length(seq) - len0,
           (unsigned long long)(after.prefill_h2d - before.prefill_h2d),
           (unsigned long long)(t1.prefill_h2d - t0.prefill_h2d), len0);

    /* Phase 3: continue from the device's KV cache. */
    if ((rc = phase(seq, &st, "generate 20", 20, 0)) != TSR_OK) goto out;

    /* The whole history, decoded once more. */
    const int *hist;
    int n;
    if ((rc = tsr_seq_tokens(seq, &hist, &n)) != TSR_OK) goto out;
    printf("[history, %d tokens] ", n);
    for (int i = 1; i < n; i++) {
        size_t len = 0;
        const char *text = tsr_model_token_text(model, hist[i - 1], hist[i], &len);
        if (text && hist[i] != mi.bos && hist[i] != mi.eos) fwrite(text, 1, len, stdout);
    }
    printf("\n");
out:
    if (rc != TSR_OK)
        fprintf(stderr, "steering: %s: %s\n", tsr_strerror(rc), dev ? tsr_device_errmsg(dev) : "");
    tsr_seq_close(seq);
    tsr_model_close(model);
    tsr_device_close(dev);
    return rc == TSR_OK ? 0 : 1;
}
