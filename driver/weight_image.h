/*
 * weight_image.h - the device layout of a model: the byte stream the kernel's
 * LOAD commands consume, built on the host from a tsr_checkpoint (model.h).
 *
 * Layout (kernels/tsr_layout.h, shared with the kernel): the matrices (wq,
 * wk, wv stacked as one; w1 and w3 as a pair) are tiled over the R x C mesh
 * (row blocks of whole TSR_VEC units by mesh row, rotated per matrix;
 * G-column groups by mesh column); each tile's entries in the order its PE
 * reads them (8-row blocks, then groups, then rows); each PE's int8 array
 * holds its Q8_0 tiles and its fp32 array its scales (or, in F32 mode, its
 * fp32 tiles), in matrix order; the norm weights go to the controller.  The
 * image is that content as chunks of at most TSR_WIMAGE_CHUNK bytes, each
 * one LOAD command (pe, region, offset, length).  Q8_0 follows the numerics
 * contract: per row, groups of G columns, scale = amax / 127,
 * q = roundf(w / scale).
 */
#ifndef TSR_WEIGHT_IMAGE_H
#define TSR_WEIGHT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"
#include "tsr_kernel.h"

#define TSR_WIMAGE_CHUNK (4u * TSR_LOAD_WORDS)   /* bytes per LOAD command, at most */
#define TSR_WIMAGE_DEFAULT_GROUP 32
#define TSR_WIMAGE_MAX_COLS 64       /* mesh columns the host lays out, at most */
#define TSR_WIMAGE_MAX_MATS 1024     /* matrices the planner lays out, at most  */

/* One LOAD command's worth of the image. */
typedef struct tsr_wchunk {
    uint32_t        pe;       /* PE index (0 for the controller region)      */
    uint32_t        region;   /* TSR_REG_W8, TSR_REG_F32, TSR_REG_CTRL       */
    uint32_t        offset;   /* in region units: bytes (W8) or fp32 words   */
    uint32_t        length;   /* in region units                             */
    uint32_t        nbytes;   /* payload bytes on the link (W8: length
                                 rounded up to whole words)                  */
    const uint32_t *data;     /* (nbytes / 4,) payload words                 */
} tsr_wchunk;

/* What a placement needs on chip (all from the layout arithmetic). */
typedef struct tsr_wneed {
    uint64_t pe_w8_max;     /* int8 bytes of the fullest PE                  */
    uint64_t pe_f32_max;    /* fp32 words (scales / F32 tiles), fullest PE   */
    uint64_t pe_kv_max;     /* KV elements of the fullest PE (fp32 words,
                               halves or bytes: the configured precision's) */
    uint64_t pe_kvs_max;    /* int8 KV scales of the fullest PE              */
    uint32_t pe_rows_max;   /* partial sums of the largest tile              */
    uint32_t pe_att_max;    /* attention scores on the busiest PE            */
    uint64_t ctrl_words;    /* controller fp32 words                         */
    uint64_t weight_bytes;  /* all PEs' weight tiles (int8 + fp32)           */
    uint64_t kv_bytes;      /* all PEs' KV caches                            */
    uint64_t total_bytes;   /* weight + KV + controller                      */
} tsr_wneed;

/* A built image.  Owns its buffers; free with tsr_wimage_free. */
typedef struct tsr_wimage {
    tsr_kconfig  cfg;          /* the CONFIGURE block it was built for       */
    uint32_t     n_pes;
    uint32_t   **pe_w8;        /* [n_pes] (ceil(w8_bytes/4),) int8 tiles     */
    float      **pe_f32;       /* [n_pes] (f32_words,) scales or fp32 tiles  */
    uint32_t    *w8_bytes;     /* [n_pes]                                    */
    uint32_t    *f32_words;    /* [n_pes] weight words (the KV cache follows
                                  on the device)                             */
    float       *ctrl;         /* (ctrl_words,) rms_att, rms_ffn, rms_final  */
    uint32_t     ctrl_words;
    tsr_wchunk  *chunks;       /* [n_chunks], in streaming order             */
    int          n_chunks;
    uint64_t     bytes;        /* payload bytes: every chunk + the 64-byte
                                  CONFIGURE block                            */
    uint64_t     hash;         /* XXH3-64 (libxxhash) over the config, chunk
                                  headers and payloads                       */
} tsr_wimage;

/* How a placement is asked for: the PEs, and (0: the default) mesh columns
 * and KV split; the profile's figures decide the defaults and the limits. */
typedef struct tsr_mesh_opts {
    int pes;            /* PEs the mesh uses                              */
    int cols;           /* mesh columns C (a power of two); 0: 1 when the
                           profile keeps run.c's sum order, else its most */
    int kv_split;       /* PEs per KV head (a power of two); 0: 1 when the
                           profile keeps run.c's sum order, else as many as
                           the mesh and the profile allow                 */
    int stage;          /* a pipeline stage's TSR_STAGE_* bits (tsr_layout.h;
                           the model a tsr_checkpoint_stage_view of its
                           layers); 0: the whole model on this device     */
} tsr_mesh_opts;

/* How to place a model on the device (tsr_wimage_config, the command
 * layer's load).  progress, optional, is called on the loading thread. */
typedef struct tsr_load_opts {
    int weights_f32;    /* 1: F32 validation mode; 0: quantized       */
    int weights;        /* quantized mode: TSR_WEIGHTS_FILE (the file's
                           own Q8_0 / Q4_0, Q8_0 for the rest),
                           TSR_WEIGHTS_Q8, TSR_WEIGHTS_Q4             */
    int group_size;     /* group size; 0: the file's (32 for fp32)    */
    int kv;             /* KV cache precision, TSR_KV_*               */
    int seq_len;        /* context per sequence; 0: model's seq_len   */
    int n_slots;        /* sequence slots (KV regions); 0: 1          */
    void (*progress)(uint64_t sent, uint64_t total, void *user); /* optional */
    void *progress_user;
} tsr_load_opts;

/* Fill the CONFIGURE block for model m placed by o on the mesh mo of a
 * device with profile prof: the file's own formats unless o says otherwise
 * (its group size; its Q4_0 kinds as Q4_0 tiles when the profile has the
 * datapath and the group is 32), the model's BOS/EOS, o's KV precision.
 * Decided from m->cfg alone (plan passes a config without tensors).
 * Errors: TSR_ERR_ARG (bad seq_len, slots or group size in o; bad cols,
 * kv_split; --weights q4 at a group size other than 32),
 * TSR_ERR_UNSUPPORTED (a group size that is not a power of two or outside
 * the profile's range, naming both; Q4_0 without the datapath). */
int tsr_wimage_config(const tsr_checkpoint *m, const tsr_load_opts *o, const tsr_mesh_opts *mo,
                      const tsr_kprofile *prof, tsr_kconfig *kc, tsr_err *e);

/* On-chip needs of kc (no model data needed). */
void tsr_wimage_need(const tsr_kconfig *kc, tsr_wneed *need);

/* What kc puts on chip, e.g. "Q8_0 group 4", "Q4_0 (embedding, ...) +
 * Q8_0 group 32 (w2, classifier)", "F32", into buf (NUL-terminated,
 * truncated to cap).  Returns the length needed, like snprintf. */
size_t tsr_wimage_describe(const tsr_kconfig *kc, char *buf, size_t cap);

/* A one-line notice when kc does not keep m's weights in the file's own
 * quantization (another group size, Q4_0 <-> Q8_0, F32/F16 tensors of a
 * quantized file quantized): 1 and the line in buf, else 0.  Quantizing
 * an fp32 file is the default and no notice. */
int tsr_wimage_notice(const tsr_checkpoint *m, const tsr_kconfig *kc, char *buf, size_t cap);

/* "f32", "f16", "int8" for a TSR_KV_* value. */
const char *tsr_wimage_kv_name(uint32_t kv);

/* Check kc against profile prof (named name): max shapes, the mesh, the
 * per-PE memories.  Errors: TSR_ERR_UNSUPPORTED (a shape over a profile
 * limit), TSR_ERR_CAPACITY (a PE's arrays too small), with the figures. */
int tsr_wimage_check_profile(const tsr_kconfig *kc, const tsr_kprofile *prof, const char *name,
                             tsr_err *e);

/* Build the image of m for kc, whole (every PE's arrays at once, matrix
 * by matrix: the reference the stream below is tested against, and what
 * the csim and test rigs write out).  Errors: TSR_ERR_NOMEM, TSR_ERR_ARG
 * (model shape differs from kc).  On failure img holds nothing to free. */
int tsr_wimage_build(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wimage *img, tsr_err *e);

/* Free what tsr_wimage_build allocated; a zeroed img is a no-op. */
void tsr_wimage_free(tsr_wimage *img);

/* The same image built one PE at a time, for streaming: the chunks of
 * tsr_wimage_build, in its order, with its payload bytes and its hash,
 * byte for byte, while only one PE's arrays exist on the host.  Once a
 * PE's arrays are built the model file's pages are let go
 * (tsr_checkpoint_evict), so the file is never all resident either.
 * Open, then tsr_wstream_next until it says done; tsr_wstream_rewind
 * starts over (the hash too); close frees. */
typedef struct tsr_wstream {
    const tsr_checkpoint *m;   /* borrowed: must outlive the stream          */
    tsr_kconfig  cfg;
    uint32_t     n_pes;
    uint64_t     bytes;        /* payload bytes: every chunk + the 64-byte
                                  CONFIGURE block (tsr_wimage.bytes)        */
    uint64_t     hash;         /* tsr_wimage.hash; valid once next said done */
    /* private */
    uint32_t    *w8;           /* (max_w8 / 4 + 1,) the current PE's int8 tiles */
    float       *f32;          /* (max_f32 + 1,) its scales or fp32 tiles   */
    float       *ctrl;         /* (ctrl_words,) the norm weights            */
    float       *row;          /* (max_pad,) a row span, dequantized        */
    int8_t      *qr;           /* (max_pad,) a row span, quantized          */
    float       *sc;           /* (max_pad / group,) its scales             */
    void        *hs;           /* XXH3_state_t                              */
    size_t       w8_cap, f32_cap;   /* bytes of w8, f32                      */
    uint32_t     pe, stage;    /* next chunk: PE, 0 int8 / 1 fp32 / 2 controller / 3 done */
    uint32_t     built;        /* 1 + the PE whose arrays w8/f32 hold, 0: none */
    uint64_t     off;          /* units of the current region already sent  */
    uint64_t     units;        /* units of the current region               */
} tsr_wstream;

/* Prepare the stream of m's image for kc (allocates one PE's worth of
 * arrays, the fullest PE's; builds nothing yet).  Errors: TSR_ERR_ARG
 * (model shape differs from kc), TSR_ERR_NOMEM.  On failure ws holds
 * nothing to close. */
int tsr_wstream_open(const tsr_checkpoint *m, const tsr_kconfig *kc, tsr_wstream *ws, tsr_err *e);

/* The next chunk into *ch (its data valid until the following call, which
 * may overwrite the PE arrays it points into), or *done = 1 after the last
 * one, when ws->hash is final.  Errors: TSR_ERR_ARG (a tensor of the wrong
 * shape). */
int tsr_wstream_next(tsr_wstream *ws, tsr_wchunk *ch, int *done, tsr_err *e);

/* Start again from the first chunk (the hash too). */
void tsr_wstream_rewind(tsr_wstream *ws);

/* Free the stream's buffers; a zeroed ws is a no-op. */
void tsr_wstream_close(tsr_wstream *ws);


#endif
