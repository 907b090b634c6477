/* greedy.c - see greedy.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "greedy.h"

int greedy_history(tsr_model *m, const char *prompt, int steps, int ignore_stop, int *ids,
                   int cap, float *logits, int n_logits)
{
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    assert_int_equal(tsr_seq_append_text(s, prompt), TSR_OK);
    tsr_gen_opts go = { .max_tokens = steps - tsr_seq_length(s) + 1, .ignore_stop = ignore_stop };
    assert_int_equal(tsr_seq_generate(s, &go, NULL, NULL, NULL), TSR_OK);
    if (logits) assert_int_equal(tsr_seq_read_logits(s, logits, n_logits), TSR_OK);
    int n = seq_history(s, ids, cap);
    tsr_seq_close(s);
    return n;
}

int seq_history(tsr_seq *s, int *out, int cap)
{
    const int *t;
    int n;
    assert_int_equal(tsr_seq_tokens(s, &t, &n), TSR_OK);
    assert_true(n <= cap);
    memcpy(out, t, (size_t)n * sizeof *out);
    return n;
}

void logits_after_bos(tsr_model *m, float *out, int n)
{
    tsr_seq *s = NULL;
    assert_int_equal(tsr_seq_open(m, &s), TSR_OK);
    int bos = 1;
    assert_int_equal(tsr_seq_append_tokens(s, &bos, 1), TSR_OK);
    tsr_gen_opts one = { .max_tokens = 1 };
    assert_int_equal(tsr_seq_generate(s, &one, NULL, NULL, NULL), TSR_OK);
    assert_int_equal(tsr_seq_read_logits(s, out, n), TSR_OK);
    tsr_seq_close(s);
}

unsigned long long counter_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)) != NULL; p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtoull(p + n + 1, NULL, 10);
    fail_msg("counter %s missing", name);
    return 0;
}
