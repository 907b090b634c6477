/* gguf_index.h - where a GGUF file's tensors are, read independently of
 * driver/format_gguf.c, for the tests that compare on-chip bytes with the
 * file's own (ggml docs/gguf.md: header, key/value pairs, tensor infos,
 * data at the alignment after them). */
#ifndef TSR_TEST_GGUF_INDEX_H
#define TSR_TEST_GGUF_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct gguf_tensor {
    char     name[64];
    uint32_t type;        /* ggml type id: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0 */
    uint64_t ne0, ne1;    /* row length, rows */
    const uint8_t *data;  /* its first byte in the file's bytes */
} gguf_tensor;

typedef struct gguf_index {
    uint8_t     *bytes;   /* the whole file (owned) */
    size_t       len;
    gguf_tensor *t;       /* [n] */
    int          n;
} gguf_index;

/* Read path and index its tensors; fails the calling CMocka test on any
 * problem (the files are the shared, well-formed ones). */
void gguf_index_open(const char *path, gguf_index *g);
void gguf_index_close(gguf_index *g);

/* The tensor named name, or NULL. */
const gguf_tensor *gguf_index_find(const gguf_index *g, const char *name);

/* The byte offset in the file of the value of the u32 key `key`, or 0. */
size_t gguf_index_u32_key(const gguf_index *g, const char *key);

#endif
