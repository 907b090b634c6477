/* greedy.h - a greedy decode through the public API, for the tests that
 * compare token sequences (emulator meshes, threads, SIMD, GGUF), and the
 * two readings the weight, KV and plan tests take of a device. */
#ifndef TSR_TEST_GREEDY_H
#define TSR_TEST_GREEDY_H

#include "tessera.h"

/* On a fresh sequence of m: append prompt (BOS first), then decode greedily
 * until `steps` positions in all, prompt included (as llama2.c run.c -n),
 * stopping at BOS/EOS unless ignore_stop.  ids (cap ints) gets the whole
 * history, BOS first; logits (n_logits floats; NULL: not read) the last
 * forward pass's.  Returns the history length.  Any failure fails the
 * calling CMocka test. */
int greedy_history(tsr_model *m, const char *prompt, int steps, int ignore_stop, int *ids,
                   int cap, float *logits, int n_logits);

/* s's history (prompt and generated tokens) copied into out (cap ints);
 * its length.  A failure, or a history longer than cap, fails the calling
 * CMocka test. */
int seq_history(tsr_seq *s, int *out, int cap);

/* On a fresh sequence of m: BOS (1), one forward pass; its logits into out
 * (n floats).  Any failure fails the calling CMocka test. */
void logits_after_bos(tsr_model *m, float *out, int n);

/* The value of the line "name value" in text (tsr_device_kernel_counters'
 * format); a missing line fails the calling CMocka test. */
unsigned long long counter_value(const char *text, const char *name);

#endif
