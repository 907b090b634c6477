/* minimal.c - the smallest libtessera program: greedy decoding in the emulator.
 *
 *   usage: minimal MODEL TOKENIZER PROMPT [N]
 *
 * Prints the prompt, then up to N (default 64) generated tokens as they
 * stream from the device.  Build: cc minimal.c $(pkg-config --cflags --libs tessera) */
#include <stdio.h>
#include <stdlib.h>
#include <tessera.h>

/* Each token arrives with its text (the model's BOS and EOS, which end
 * the text, have none). */
static int on_token(tsr_seq *s, int token, const char *text, size_t len, void *user)
{
    (void)s;
    (void)token;
    (void)user;
    fwrite(text, 1, len, stdout);
    return fflush(stdout) != 0; /* stop if stdout fails */
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: %s MODEL TOKENIZER PROMPT [N]\n", argv[0]); return 2; }
    tsr_device *dev = NULL;
    tsr_model *model = NULL;
    tsr_seq *seq = NULL;
    tsr_model_opts mo = { .tokenizer = argv[2] };
    tsr_gen_opts go = { .max_tokens = argc > 4 ? atoi(argv[4]) : 64 }; /* greedy */
    int rc;
    if ((rc = tsr_device_open("emu", &dev)) == TSR_OK &&
        (rc = tsr_model_load(dev, argv[1], &mo, &model)) == TSR_OK &&
        (rc = tsr_seq_open(model, &seq)) == TSR_OK &&
        (rc = tsr_seq_append_text(seq, argv[3])) == TSR_OK) {
        fputs(argv[3], stdout);
        rc = tsr_seq_generate(seq, &go, on_token, NULL, NULL);
        putchar('\n');
    }
    if (rc != TSR_OK)
        fprintf(stderr, "minimal: %s: %s\n", tsr_strerror(rc), dev ? tsr_device_errmsg(dev) : "");
    tsr_seq_close(seq);
    tsr_model_close(model);
    tsr_device_close(dev);
    return rc == TSR_OK ? 0 : 1;
}
