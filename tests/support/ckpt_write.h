/* ckpt_write.h - small llama2.c checkpoints for tests and fuzz seeds. */
#ifndef TSR_CKPT_WRITE_H
#define TSR_CKPT_WRITE_H

/* Write a tsr_synth_write checkpoint of shape spec (tessera synth's syntax)
 * to path: version 1 fp32 (group 0) or version 2 Q8_0.  Returns 0, or -1
 * after printing why. */
int tsr_test_synth(const char *spec, int group, const char *path);

/* Rewrite the v1 checkpoint at v1_path in the legacy layout (llama2.c
 * export.py legacy_export: 7 int32, tensors by kind over all layers, the
 * RoPE tables, then the classifier when not shared) at path.  Returns 0,
 * or -1 after printing why. */
int tsr_test_write_legacy(const char *v1_path, const char *path);

#endif
