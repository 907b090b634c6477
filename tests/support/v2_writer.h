/* v2_writer.h - write a llama2.c version-2 (Q8_0) checkpoint from an fp32
 * one, as llama2.c export.py's version2_export does, for the tests that
 * compare tessera with llama2.c runq.c on a file of a given group size. */
#ifndef TSR_TEST_V2_WRITER_H
#define TSR_TEST_V2_WRITER_H

#include "model.h"

/* Write m (fp32 tensors) to path as a version-2 file at group size G:
 * the 256-byte header (magic "ak42", version 2, the 7 shape fields,
 * shared_classifier, G), the fp32 norms (rms_att of every layer, rms_ffn,
 * rms_final), then per tensor (tok_embeddings, wq.., wk.., wv.., wo..,
 * w1.., w2.., w3.., [wcls]) its int8 values and then its fp32 scales.
 * export.py's quantize_q80: per group of G elements of the flattened
 * tensor, scale = max |w| / 127 and q = round(w / scale), half to even
 * (torch.round).  Returns 0, or -1 when G does not divide a tensor or the
 * file cannot be written. */
int v2_write(const tsr_checkpoint *m, int G, const char *path);

#endif
