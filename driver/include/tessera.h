/*
 * tessera.h - the public C API of libtessera.
 *
 * tessera decodes LLM tokens on a device (an FPGA, or the emulator that runs
 * the same kernel sources on a CPU) that holds the whole model in on-chip
 * SRAM, tiled across a mesh of processing elements (PEs).
 *
 * Conventions (after SQLite's C API):
 *   - Handles are opaque.  Closing NULL is a no-op.
 *   - Every call that can fail returns an int status (TSR_OK == 0);
 *     tsr_strerror() names a status, and tsr_device_errmsg() and
 *     tsr_errcode() give the detail and the code of the calling thread's
 *     last failure on a device (or on one of its models or sequences).
 *   - The library never prints and never exits; it logs only through the
 *     optional callback set with tsr_device_set_log().
 *   - Only the calls marked TSR_API are exported from libtessera.so.
 *
 * Lifetimes (one rule, after sqlite3_close_v2):
 *   A handle is valid from the call that opens it until the caller closes
 *   it, whatever is closed before: a model until tsr_model_close(), a
 *   sequence until tsr_seq_close(), in any order.  Closing a device closes
 *   its models and sequences with it: the device and the models' host
 *   memory are released at once, and every later call on those model and
 *   sequence handles returns TSR_ERR_STATE (tsr_model_token_text returns
 *   NULL, tsr_seq_length 0; tsr_seq_cancel does nothing) until the caller
 *   closes them, which then only frees them.
 *   Closing a model does the same to its sequences.  A model that another
 *   load replaced keeps its handle until it is closed: it opens no more
 *   sequences and its sequences' calls that drive the device return
 *   TSR_ERR_STATE, while host-side calls (the model's info, tokenize and
 *   token text; the sequences' history and stats) still answer.  So tsr_seq_close() after tsr_device_close() or
 *   tsr_model_close() is defined, and so is closing in any order; closing
 *   the same handle twice, or any call on a handle after its own close,
 *   is a use after free, as with free().
 *
 * Threads:
 *   - No shared state, callable from any thread at any time:
 *     tsr_version, tsr_version_number, tsr_strerror, tsr_part_list,
 *     tsr_device_open, tsr_file_inspect, tsr_synth_file, tsr_plan_report,
 *     tsr_chat_template_list, tsr_chat_template_find,
 *     tsr_chat_template_detect, tsr_chat_format.
 *   - tsr_seq_cancel and tsr_seq_was_cancelled: from any thread at any time
 *     while the sequence is open, and from a signal handler (they take no
 *     lock and allocate nothing); a cancel stops only its own sequence,
 *     also in a tsr_seq_generate_batch of several.
 *   - tsr_device_errmsg and tsr_errcode read the calling thread's own
 *     record, so threads sharing a device do not see each other's failures.
 *   - Every other call on a device, its models and its sequences may come
 *     from any thread, also while other threads make calls on the same
 *     device: the library holds one lock per device for the length of each
 *     call, since a device has one kernel state.  Two threads generating on
 *     two sequences of one model therefore take turns (the second generate
 *     starts when the first returns); different devices never wait for
 *     each other.
 *   - Callbacks (token, progress, log) run on the calling thread while it
 *     holds its device's lock.  From inside one, calls on the same device
 *     that only read (tsr_model_token_text, tsr_model_tokenize,
 *     tsr_model_get_info, tsr_seq_length, tsr_seq_tokens, tsr_seq_get_stats,
 *     tsr_device_traffic, tsr_device_errmsg, tsr_errcode, tsr_seq_cancel,
 *     tsr_seq_was_cancelled, tsr_device_set_log) work; calls that drive the
 *     device (load, fit, open, append, generate, truncate, reset, read
 *     logits, kernel counters) return TSR_ERR_STATE; closing a handle of
 *     that device from a callback is a programmer error (it asserts).
 *   - Never close a handle while another thread uses it, or uses something
 *     opened from it: that is a use after free.
 *
 * Growing structs (the size rule, after Win32's cbSize and Linux's
 * openat2): every struct below starts with `size_t size` and ends in
 * `reserved` words.  The caller sets size to sizeof the struct as its own
 * tessera.h declares it, so a library newer or older than the header a
 * program was built with knows which fields the program has:
 *   - size 0 stands for the struct as 0.3.0 (the first version with a size
 *     field) declares it, so a zero-initialised struct ({0}, or memset)
 *     with the fields you need set keeps working, unchanged, with every
 *     later library; set size = sizeof(T) (TSR_INIT(T)) to use fields a
 *     later version adds.
 *   - A struct passed in (options, messages): the library reads only its
 *     first size bytes; fields past them take their zero defaults.  Bytes
 *     past the library's own struct (a program built against a newer
 *     tessera.h) must be zero, and so must the reserved words: else
 *     TSR_ERR_UNSUPPORTED.
 *   - A struct the library fills (info, stats, counters): it writes only
 *     the first size bytes (at most its own struct's), zeroing the fields
 *     it has no value for and the reserved words, and leaves size as the
 *     caller set it.  Bytes past them are not touched.
 *   - A size below the bytes every version has (the fields before the
 *     first one added after 0.2.0: e.g. offsetof(tsr_model_info, bos),
 *     offsetof(tsr_model_opts, weights); for tsr_gen_opts, tsr_seq_stats,
 *     tsr_chat_msg and tsr_pipeline all named fields), or above 4096 bytes
 *     for a struct passed in, is refused with TSR_ERR_ARG and nothing is
 *     read or written.
 *   - An array of structs (tsr_seq_generate_batch's opts, tsr_chat_format's
 *     msgs) is an array of the caller's struct: its elements are size bytes
 *     apart, the size of its first element, and every element states the
 *     same size (else TSR_ERR_ARG).
 * The version rule: TSR_VERSION_MINOR changes whenever a struct's layout or
 * a call's meaning changes in a way a program built against the older
 * header would notice (while MAJOR is 0, a minor version is an ABI: the
 * shared library's SONAME is libtessera.so.0.MINOR); PATCH changes nothing
 * a program sees.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden: TSR_API marks what it
 * exports, and nothing else is (tests/test_abi.c holds the two equal). */
#if defined(__GNUC__) || defined(__clang__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */

#define TSR_VERSION_MAJOR 0
#define TSR_VERSION_MINOR 3
#define TSR_VERSION_PATCH 0
#define TSR_VERSION_STRING "0.3.0"
/* One integer, e.g. 0.3.0 -> 300, for compile-time comparisons.  0.2.0
 * added tsr_seq_generate_batch; 0.3.0 added chat templates
 * (tsr_model_chat_template, tsr_chat_*), the size field that starts every
 * growing struct (see Growing structs above; 0.2.0's layouts, which had
 * taken fields in front of `reserved` unversioned, are not 0.3.0's), and
 * the token callback's text piece. */
#define TSR_VERSION_NUMBER (TSR_VERSION_MAJOR * 10000 + TSR_VERSION_MINOR * 100 + TSR_VERSION_PATCH)

/* An initialiser (C; C++20) for a growing struct of this header's size, e.g.
 * `tsr_model_opts o = TSR_INIT(tsr_model_opts);` (the other fields zero). */
#define TSR_INIT(type) { .size = sizeof(type) }

/* The library's version string, e.g. "0.3.0"; compare with TSR_VERSION_STRING
 * to check that the header matches the library.  Thread-safe. */
TSR_API const char *tsr_version(void);

/* ---- a model split over processes (MPI) ------------------------------------
 * A library built with MPI=1 (Open MPI) runs a model split in pipeline
 * stages over the ranks of mpirun, one stage a rank: every rank calls
 * tsr_mpi_rank_serve() first; rank 0 goes on as the program (its device
 * spec's cards= equal to the ranks puts stage k on rank k), the others
 * serve their stage's device until rank 0 closes it; every rank calls
 * tsr_mpi_end() before it exits (rank 0 also releases ranks it never
 * used).  Not thread-safe: call them from the main thread. */

/* 1 when this library was built with MPI, else 0. */
TSR_API int  tsr_mpi_available(void);

/* Under mpirun with two or more ranks (MPI initialised here if it is not
 * yet): on rank 0 returns -1 at once; on another rank serves its stage
 * device, then finalises MPI and returns 0 (1: MPI failed).  Without MPI,
 * or not under mpirun: -1 at once. */
TSR_API int  tsr_mpi_rank_serve(void);

/* Rank 0: release the ranks still waiting, then finalise MPI.  After a
 * rank's link failed (a device call returned TSR_ERR_DEVICE naming a rank
 * that did not answer within 3 s beyond the call's own wait), MPI is left
 * unfinalised, since finalising waits for every rank: the process exits
 * and mpirun ends the others.  A no-op without MPI. */
TSR_API void tsr_mpi_end(void);

/* The library's TSR_VERSION_NUMBER (MAJOR * 10000 + MINOR * 100 + PATCH),
 * e.g. to require at least a version at run time:
 * tsr_version_number() >= 200 (tsr_seq_generate_batch).  Thread-safe. */
TSR_API int tsr_version_number(void);

/* ------------------------------------------------------------------------ */
/* Status codes: one X-macro list makes both the enum and tsr_strerror().   */

/* 11 and 13 (TSR_ERR_MISMATCH, TSR_ERR_CANCELLED in 0.1.0 drafts) were
 * never returned and are retired; their numbers are not reused.  A
 * cancelled generation returns TSR_OK (see tsr_seq_generate). */
#define TSR_STATUS_LIST(X)                                                   \
    X(TSR_OK,              0, "ok")                                          \
    X(TSR_ERR_ARG,         1, "invalid argument")                            \
    X(TSR_ERR_NOMEM,       2, "out of memory")                               \
    X(TSR_ERR_IO,          3, "cannot open or read file")                    \
    X(TSR_ERR_FORMAT,      4, "malformed file")                              \
    X(TSR_ERR_UNSUPPORTED, 5, "unsupported format or feature")               \
    X(TSR_ERR_CAPACITY,    6, "does not fit in on-chip memory")              \
    X(TSR_ERR_RANGE,       7, "position or length out of range")             \
    X(TSR_ERR_NODEV,       8, "no device found")                             \
    X(TSR_ERR_DEVICE,      9, "device error")                                \
    X(TSR_ERR_STATE,      10, "call not valid in this state")                \
    X(TSR_ERR_NOSLOT,     12, "no free sequence slot")

#define TSR_STATUS_ENUM_(name, value, text) name = value,
typedef enum { TSR_STATUS_LIST(TSR_STATUS_ENUM_) } tsr_status;
#undef TSR_STATUS_ENUM_

/* A static English string for a status code ("unknown status" for others).
 * Thread-safe. */
TSR_API const char *tsr_strerror(int status);

/* The FPGA parts the library knows (the table hw/parts.def), comma-
 * separated in table order, e.g. "u55c, u280, u250, u200, vu9p, v80,
 * vck5000": the names "part=" of a device spec and tsr_plan_opts.part
 * take.  A static string.  Thread-safe. */
TSR_API const char *tsr_part_list(void);

/* ------------------------------------------------------------------------ */
/* Handles                                                                   */

typedef struct tsr_device tsr_device; /* an open device: emulator or card   */
typedef struct tsr_model  tsr_model;  /* a model file, resident on a device  */
typedef struct tsr_seq    tsr_seq;    /* a sequence: one KV slot on a device */

/* Log levels for the optional log callback. */
enum { TSR_LOG_ERROR = 0, TSR_LOG_WARN = 1, TSR_LOG_INFO = 2, TSR_LOG_DEBUG = 3 };

/* Log hook: msg is one line without a newline.  Called on the thread that
 * made the call that logs, with the device's lock held (see Threads). */
typedef void (*tsr_log_fn)(int level, const char *msg, void *user);

/* ------------------------------------------------------------------------ */
/* Device                                                                    */

/* Open a device from a spec string:
 *   "emu"                          the emulator with its default generic part
 *   "emu:part=u55c,pes=16,threads=2"  the on-chip capacity of a part
 *                                  (tsr_part_list(); parts whose block
 *                                  counts the table lacks are refused), 16
 *                                  PEs, 2 worker threads (default: the
 *                                  cores this process may run on); "simd=0"
 *                                  keeps to the portable kernel loops, and
 *                                  "simd=avx2" to the paths an AVX2-only CPU
 *                                  takes (no AVX-512, AVX-VNNI or AMX; for
 *                                  the whole process) (same tokens either
 *                                  way); "batch=N" (1..8) steps at most
 *                                  N sequences together in
 *                                  tsr_seq_generate_batch (default: the
 *                                  device's limit; on a split over cards,
 *                                  N sequences at most in one stage pass,
 *                                  default 1; same tokens)
 *   "xrt:0" / "xrt:0,xclbin=FILE"  Alveo card 0 through XRT
 * *out is set to a handle even when the call fails (except TSR_ERR_NOMEM),
 * so that tsr_device_errmsg() can tell why; close it with tsr_device_close().
 * Errors: TSR_ERR_ARG (bad spec), TSR_ERR_NODEV, TSR_ERR_UNSUPPORTED
 * (backend not built in), TSR_ERR_NOMEM.  Thread-safe. */
TSR_API int  tsr_device_open(const char *spec, tsr_device **out);

/* Close the device and, with it, its models and sequences (see Lifetimes:
 * their handles stay until closed, and their calls return TSR_ERR_STATE).
 * NULL is a no-op. */
TSR_API void tsr_device_close(tsr_device *dev);

/* The detail of the calling thread's last failure on dev (or on a model or
 * sequence of dev): one line, "" when there is none.  Valid until the
 * thread's next failing call.  Lock-free. */
TSR_API const char *tsr_device_errmsg(const tsr_device *dev);

/* The status of the calling thread's last failure on dev (or on a model or
 * sequence of dev), TSR_OK when there is none: the code that
 * tsr_device_errmsg() describes.  Lock-free. */
TSR_API int  tsr_errcode(const tsr_device *dev);

/* Route the library's log lines to fn (NULL: drop them, the default). */
TSR_API void tsr_device_set_log(tsr_device *dev, tsr_log_fn fn, void *user);

/* Bytes that crossed the host link (host->device, device->host) per phase,
 * and kernel invocations, since the device was opened. */
typedef struct tsr_traffic {
    size_t   size;                 /* sizeof(tsr_traffic), or 0 (see Growing structs) */
    uint64_t load_h2d, load_d2h;         /* weight image and configuration */
    uint64_t prefill_h2d, prefill_d2h;   /* prompt token ids in            */
    uint64_t decode_h2d, decode_d2h;     /* token ids out                  */
    uint64_t debug_h2d, debug_d2h;       /* logits, counters read back     */
    uint64_t invocations;                /* kernel runs, all phases        */
    uint64_t loads;                      /* weight images streamed         */
    uint64_t link_prefill, link_decode;  /* a model split over devices
                                            (spec cards=): bytes of residual
                                            vectors between its stages, over
                                            their card links, all hops: a
                                            decoded token costs 16 + 4 x dim
                                            bytes a hop (a header, then dim
                                            fp32); 0 on one device         */
    uint64_t link_passes;                /* passes moved over a link, all
                                            hops and phases                */
    uint64_t reserved[5];                /* zeroed                         */
} tsr_traffic;

/* Fill *t with dev's counters: its first t->size bytes (Growing structs;
 * set t->size, or zero it).  Errors: TSR_ERR_ARG (NULL, or t->size too
 * small: nothing written), TSR_ERR_STATE (the device failed to open). */
TSR_API int  tsr_device_traffic(const tsr_device *dev, tsr_traffic *t);

/* Cards a model is split over at most (spec cards=). */
#define TSR_MAX_CARDS 16

/* A model split over devices (spec cards=N, or stages=): its stages and
 * their device clocks.  Each card keeps its own time in cycles of the
 * kernel's clock: the kernel's cycle accounting of every pass it ran (the
 * hop into it, TSR_LINK_HOP, included), a pass starting once its input
 * has arrived and the card is free, a sampled id taking one more hop back
 * to card 0.  So the emulator reports what N cards would do, whatever the
 * host's cores.  A host call (a prefill, a decode of one or more
 * sequences) starts every clock at the latest and lasts until the last
 * card is done; with several sequences decoding, card k works on one while
 * card k + 1 works on the one before.  Device tokens/s: tokens x
 * clock_mhz x 1e6 / cycles. */
typedef struct tsr_pipeline {
    size_t   size;                 /* sizeof(tsr_pipeline), or 0 (see Growing structs) */
    int      cards;                       /* 0: one device (all else zero)  */
    int      clock_mhz;                   /* the clock the cycles are of    */
    uint32_t first_layer[TSR_MAX_CARDS];  /* card k: layers first_layer[k]  */
    uint32_t n_layers[TSR_MAX_CARDS];     /*   .. first_layer[k] + n_layers[k] - 1 */
    uint64_t busy_cycles[TSR_MAX_CARDS];  /* cycles card k ran passes       */
    uint64_t passes[TSR_MAX_CARDS];       /* passes it ran                  */
    uint64_t prefill_cycles;              /* device time of prefill calls   */
    uint64_t prefill_tokens;              /* prompt tokens they fed         */
    uint64_t decode_cycles;               /* device time of decode calls    */
    uint64_t decode_tokens;               /* tokens they generated          */
    uint64_t reserved[8];                 /* zeroed                         */
} tsr_pipeline;

/* Fill *p with dev's stages and device clocks (cards 0 on one device): its
 * first p->size bytes (Growing structs).  Counts from the device's open.
 * Errors: TSR_ERR_ARG (NULL, or p->size too small), TSR_ERR_STATE
 * (the device failed to open).  Thread-safe as every device call. */
TSR_API int  tsr_device_pipeline(const tsr_device *dev, tsr_pipeline *p);

/* The kernel's own counters as "name value" lines (MACs, fabric bytes,
 * per-PE SRAM bytes, ...) written into buf (NUL-terminated, truncated to
 * len).  Reading them crosses the host link (debug phase).
 * Errors: TSR_ERR_ARG, TSR_ERR_STATE (no model loaded), TSR_ERR_UNSUPPORTED. */
TSR_API int  tsr_device_kernel_counters(tsr_device *dev, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Model                                                                     */

/* On-chip weight formats (tsr_model_opts.weights). */
enum {
    TSR_WEIGHTS_FILE = 0,    /* the file's own: Q8_0 at its group size, Q4_0 as
                                int4; anything else (fp32, f16) Q8_0       */
    TSR_WEIGHTS_Q8   = 1,    /* Q8_0 throughout (Q4_0 widened, exactly)      */
    TSR_WEIGHTS_Q4   = 2,    /* Q4_0 throughout (GGUF's rule; group 32)      */
};

/* How to place a model on a device.  Zero-initialise (or TSR_INIT), then
 * set fields; the library reads the first size bytes (Growing structs). */
typedef struct tsr_model_opts {
    size_t   size;                 /* sizeof(tsr_model_opts), or 0 (see Growing structs) */
    const char *tokenizer;   /* llama2.c tokenizer.bin path (required for
                                llama2.c checkpoints; NULL for GGUF, whose
                                metadata holds the tokenizer)                */
    int  weights_f32;        /* 1: F32 validation mode; 0: quantized, as
                                `weights` says (default)                     */
    int  group_size;         /* Q8_0 group size in elements; 0: the file's
                                (32 for fp32 files).  Another size than the
                                file's re-quantizes, with a notice (log)    */
    int  seq_len;            /* context per sequence, tokens; 0: the model's,
                                or as much of it as the device holds (at most
                                its profile's maximum, then halved down to 512
                                while the KV cache does not fit; said through
                                the log hook)                                 */
    int  n_seqs;             /* sequence slots; 0: as many as fit (<= 8)     */
    /* Progress of the weight stream: bytes sent of total, called once with
     * sent = 0 as streaming starts (the image is built and the device
     * configured), then after every chunk.  Optional; not called when the
     * same image is already resident (nothing streams). */
    void (*progress)(uint64_t sent, uint64_t total, void *user);
    void *progress_user;
    int  weights;            /* TSR_WEIGHTS_FILE (0), TSR_WEIGHTS_Q8,
                                TSR_WEIGHTS_Q4; ignored when weights_f32     */
    const char *kv;          /* KV cache precision: "f32" (NULL), "f16" (IEEE
                                half), "int8" (one fp32 scale per head
                                vector per position)                         */
    uint64_t reserved[8];    /* zero                                          */
} tsr_model_opts;

/* Open the model file at path, check that it fits the device, and stream
 * its weight image to the device once.  The weights go on chip in the
 * file's own quantization where the kernel takes it (opts->weights); every
 * conversion away from it is logged as one warning line.  Formats: llama2.c checkpoints
 * (legacy, version 1 fp32, version 2 Q8_0) with a tokenizer.bin, and GGUF
 * v2/v3 files of the llama architecture (Llama 2/3 with rope_freqs
 * scaling, SmolLM2, TinyLlama, Mistral) or qwen2 (q, k, v biases; NEOX
 * RoPE); another architecture is TSR_ERR_UNSUPPORTED naming it (F32, F16,
 * Q8_0, Q4_0 tensors; tokenizer and BOS/EOS from the metadata).  Paths must name regular
 * files (a FIFO or directory is refused with TSR_ERR_IO before it is
 * opened).  A model with a NaN or infinite weight is refused with
 * TSR_ERR_FORMAT naming the tensor.  A seq_len above a GGUF file's
 * ARCH.context_length is allowed with a warning through the log hook.
 * Loading a model whose weight image equals the one already resident (same
 * content hash) streams nothing.  The model replaces any other model on
 * dev; sequences of a replaced model fail with TSR_ERR_STATE.
 * Errors: TSR_ERR_IO, TSR_ERR_FORMAT, TSR_ERR_UNSUPPORTED, TSR_ERR_CAPACITY
 * (message: bytes needed against bytes available), TSR_ERR_ARG,
 * TSR_ERR_STATE (device closed or failed to open), TSR_ERR_DEVICE,
 * TSR_ERR_NOMEM. */
TSR_API int  tsr_model_load(tsr_device *dev, const char *path,
                            const tsr_model_opts *opts, tsr_model **out);

/* Would the model at path fit dev with these options?  Reads the file's
 * header, streams nothing, and places the same number of sequence slots
 * tsr_model_load() would (n_seqs 0: as many as fit, up to 8).
 * *need_bytes and *have_bytes (optional) get the on-chip bytes the
 * placement needs and the device has.  Returns TSR_OK when it fits,
 * TSR_ERR_CAPACITY (message: the figures) when it does not, or the errors
 * of tsr_model_load for a bad file or options. */
TSR_API int  tsr_model_fit(tsr_device *dev, const char *path, const tsr_model_opts *opts,
                           uint64_t *need_bytes, uint64_t *have_bytes);

/* The same as tsr_model_load from memory: data (len bytes) holds a whole
 * model file.  The caller owns data; it must stay valid and unchanged until
 * tsr_model_close(*out).  Errors as tsr_model_load, without TSR_ERR_IO for
 * the model. */
TSR_API int  tsr_model_load_memory(tsr_device *dev, const void *data, size_t len,
                                   const tsr_model_opts *opts, tsr_model **out);

/* Release the host side of a model and close its sequences with it (see
 * Lifetimes).  The device keeps the weights until another model is loaded.
 * NULL is a no-op. */
TSR_API void tsr_model_close(tsr_model *m);

/* Hyperparameters of a model, as read from its file, and its placement:
 * what of it is on the device. */
typedef struct tsr_model_info {
    size_t   size;                 /* sizeof(tsr_model_info), or 0 (see Growing structs) */
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
    int seq_len;             /* context per sequence on the device          */
    int n_seqs;              /* sequence slots on the device                */
    uint64_t n_params;       /* weight elements                             */
    uint64_t image_bytes;    /* the weight image streamed to the device, bytes:
                                weights as placed (int8 tiles and scales, or
                                fp32 tiles), norms and the configuration
                                block; the `total` of the progress callback.
                                The KV cache is not part of it.             */
    int bos, eos;            /* the model's BOS / EOS ids (GGUF metadata, else
                                llama2.c's 1 and 2): generation stops after
                                either; BOS starts a prompt                 */
    int group_size;          /* quantization group on chip; 0 for F32       */
    char weights[96];        /* the on-chip weight formats, e.g. "Q8_0 group
                                4", "Q4_0 (embedding, ...) + Q8_0 group 32
                                (w2, classifier)", "F32"                     */
    char kv[8];              /* the KV cache's precision: "f32", "f16", "int8" */
    uint64_t reserved[8];    /* zeroed                                      */
} tsr_model_info;

/* Fill *info: its first info->size bytes (Growing structs; set info->size,
 * or zero it).  Errors: TSR_ERR_ARG (NULL, or info->size too small:
 * nothing written), TSR_ERR_STATE (model closed). */
TSR_API int  tsr_model_get_info(const tsr_model *m, tsr_model_info *info);

/* Tokenize text: BOS first when bos != 0 and the model's vocabulary starts
 * its texts with one (llama2.c's and SentencePiece's do; a byte-level BPE
 * vocabulary's when its tokenizer.ggml.add_bos_token says so, or Llama 3's).
 * Special tokens written in the text of a GGUF vocabulary ("<|im_start|>",
 * "<|eot_id|>") are those tokens, as in llama.cpp's prompts.  Text to token
 * ids follows llama.cpp's tokenizer (its test vectors hold it) for GGUF
 * files, run.c's for llama2.c files.  *n_tokens gets the count.
 * Errors: TSR_ERR_ARG, TSR_ERR_RANGE (more than max_tokens), TSR_ERR_STATE. */
TSR_API int  tsr_model_tokenize(tsr_model *m, const char *text, int bos, int *tokens,
                                int max_tokens, int *n_tokens);

/* The text bytes of token following prev ("<0xNN>" gives one raw byte; the
 * leading space after BOS is dropped; a control token of a GGUF vocabulary,
 * such as "<|im_end|>", gives no bytes).  A token may end inside a UTF-8
 * character that the next token completes: a caller that prints pieces as
 * they come holds back an incomplete character's bytes.  *len gets the byte
 * count.  The
 * pointer lives as long as m's host side.  NULL for an out-of-range token
 * or a closed model.  Lock-free. */
TSR_API const char *tsr_model_token_text(const tsr_model *m, int prev, int token,
                                         size_t *len);

/* The model's chat template (see "Chat templates" below).  Returns the
 * family to format its conversations with, a static string: the family
 * tsr_chat_template_detect() recognises in the file's
 * tokenizer.chat_template, or "plain" when the file has none (llama2.c
 * checkpoints, GGUF files without the key) or when its text is of no
 * family tessera knows (tsr_model_load then logged one warning line
 * saying so).  *text (optional) gets the template as the file holds it
 * (NUL-terminated; the Jinja source, not evaluated), or NULL when the
 * file has none; it lives as long as m's host side (until
 * tsr_model_close, or the device's close).  NULL (and *text NULL) for a
 * NULL or closed model.  Lock-free, like tsr_model_token_text. */
TSR_API const char *tsr_model_chat_template(const tsr_model *m, const char **text);

/* ------------------------------------------------------------------------ */
/* Sequences                                                                 */

/* Open a sequence on a free KV slot of m's device and reset the slot.
 * Errors: TSR_ERR_NOSLOT (all slots in use), TSR_ERR_STATE (m no longer
 * resident, or closed), TSR_ERR_ARG, TSR_ERR_NOMEM. */
TSR_API int  tsr_seq_open(tsr_model *m, tsr_seq **out);

/* Free the sequence and its slot.  NULL is a no-op. */
TSR_API void tsr_seq_close(tsr_seq *s);

/* Append text (tokenized; BOS first when the sequence is empty) or tokens to
 * the sequence, running them through the model into the device's KV cache
 * (prefill).  Appending after a generation continues from the KV cache on
 * the device: nothing earlier is sent again.
 * Errors: TSR_ERR_RANGE (would pass seq_len; nothing is appended),
 * TSR_ERR_ARG, TSR_ERR_STATE, TSR_ERR_DEVICE. */
TSR_API int  tsr_seq_append_text(tsr_seq *s, const char *text);
TSR_API int  tsr_seq_append_tokens(tsr_seq *s, const int *tokens, int n);

/* Sampler settings.  Zero-initialised = greedy, stop at the model's BOS/EOS
 * (tsr_model_info.bos, .eos) and, for a GGUF vocabulary, at its other
 * end-of-generation tokens (tokenizer.ggml.eot_token_id / eom_token_id and
 * the tokens llama.cpp ends at by their text: <|im_end|>, <|eot_id|>,
 * <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>, <EOT>). */
typedef struct tsr_gen_opts {
    size_t   size;                 /* sizeof(tsr_gen_opts), or 0 (see Growing structs) */
    int      max_tokens;   /* tokens to generate; clamped to what seq_len
                              leaves                                         */
    float    temperature;  /* 0: greedy (argmax); finite, >= 0              */
    float    top_p;        /* nucleus sampling when in (0,1); else off;
                              finite, >= 0                                   */
    uint64_t seed;         /* xorshift RNG seed; 0: a fixed default.  A
                              sequence's RNG is seeded at its first
                              generate and whenever the seed differs from
                              the last one's; otherwise it goes on where
                              the last generate left it, across
                              tsr_seq_truncate and tsr_seq_reset (so a
                              regenerated tail is a fresh sample)          */
    int      ignore_stop;  /* 1: do not stop at the model's BOS/EOS or other
                              end-of-generation tokens                      */
    uint64_t reserved[8];  /* zero                                           */
} tsr_gen_opts;

/* Called for each token as soon as the device has sampled it, with its
 * sequence, on the thread that called generate (see Threads):
 *   token   the token id;
 *   text    its text, len bytes: what tsr_model_token_text(model, the
 *           token before it, token) gives (a byte-fallback token's one raw
 *           byte; a control token of a GGUF vocabulary, and the model's BOS
 *           and EOS, which end the text, give len 0).  Not NUL-terminated
 *           (a byte token may be a NUL); never NULL; valid only during the
 *           call: copy what you keep.  A piece may end inside a UTF-8
 *           character that the next one completes;
 *   user    the generate call's user pointer.
 * Return non-zero to stop that sequence's generation after this token: no
 * later token reaches the callback or the history.  Calling
 * tsr_seq_cancel(s) from the callback does the same (the generate then
 * also reports it cancelled). */
typedef int (*tsr_token_cb)(tsr_seq *s, int token, const char *text, size_t len, void *user);

/* Generate up to opts->max_tokens tokens on the device, streaming each to cb
 * (optional).  Stops early at the model's BOS/EOS (tsr_model_info.bos, .eos,
 * after writing it; unless ignore_stop), at seq_len,
 * when cb returns non-zero, or on tsr_seq_cancel().  *n_generated
 * (optional) gets the count.  Returns TSR_OK also when cancelled (then
 * tsr_seq_was_cancelled() is 1).
 * Errors: TSR_ERR_STATE (nothing appended yet; closed or replaced model),
 * TSR_ERR_ARG (NaN, infinite or negative temperature or top_p; a size
 * outside the size rule, see Growing structs),
 * TSR_ERR_DEVICE. */
TSR_API int  tsr_seq_generate(tsr_seq *s, const tsr_gen_opts *opts, tsr_token_cb cb,
                              void *user, int *n_generated);

/* Generate for the n sequences seqs at once: each as tsr_seq_generate(
 * seqs[k], &opts[k], ...) would alone, with the same tokens, and all of
 * them together on the device, one pass over the weights a step for every
 * sequence still going (batched decode).
 *   seqs        (n,) distinct sequences, 1 <= n <= 8, all of one device
 *               and of its resident model, each with a prompt appended;
 *               read during the call only (the caller owns the array).
 *   opts        (n,) opts[k] is seqs[k]'s sampler and stop rule
 *               (tsr_gen_opts: max_tokens, temperature, top_p, seed,
 *               ignore_stop); each sequence keeps its own position, KV
 *               cache and RNG.
 *   cb          optional; called with (seqs[k], token, text, len, user) for every
 *               token as the device samples it, on the calling thread,
 *               the sequences' tokens interleaved as the steps produce
 *               them.  Returning non-zero stops that sequence after that
 *               token (its history ends there); the others go on.
 *   n_generated optional, (n,): each sequence's tokens generated.
 * A sequence stops at its max_tokens, BOS/EOS (unless ignore_stop), its
 * seq_len, its callback's stop or tsr_seq_cancel(seqs[k]) (from any
 * thread, or from a callback), whatever the others do; a cancel that came
 * before the call stops that sequence with no tokens, as tsr_seq_generate.
 * The device steps up to its batch limit of sequences together (the
 * kernel profile's slots or items a pass, whichever is fewer: 8 on the
 * emulator's generic profile); more are generated in later steps, in the
 * order given, once earlier ones have finished, with the same tokens.
 * Each sequence's stats (tsr_seq_get_stats) time the whole call; the
 * call's host-link traffic is shared evenly among its sequences.
 * Returns TSR_OK also when some or all were cancelled
 * (tsr_seq_was_cancelled tells which); a refused call changes no sequence.
 * Errors: TSR_ERR_ARG (seqs, seqs[k] or opts NULL, n outside 1..8, a
 * sequence of another device, a sequence twice; NaN, infinite or negative
 * temperature or top_p; negative max_tokens; an opts[k].size other than
 * opts[0].size, or outside the size rule), TSR_ERR_STATE (a sequence
 * empty, its model closed or replaced; called from a callback),
 * TSR_ERR_UNSUPPORTED (non-zero reserved option words), TSR_ERR_DEVICE,
 * TSR_ERR_NOMEM; the message names the sequence by its index.  Thread-safe
 * as tsr_seq_generate: it holds the device's lock for the whole call, so
 * other calls on the device wait for it. */
TSR_API int  tsr_seq_generate_batch(tsr_seq *const *seqs, int n, const tsr_gen_opts *opts,
                                    tsr_token_cb cb, void *user, int *n_generated);

/* Ask s's generation to stop; a running one returns within one token: the
 * callback sees at most the token it is being handed as the cancel lands,
 * however slow it is, and tokens the device sampled ahead of the cancel
 * are dropped (the sequence is rewound to what the callback saw).  From
 * inside the callback, the token it was given is the last, exactly as
 * when the callback returns non-zero.  A cancel that arrives while no
 * generate runs on s is kept: the next tsr_seq_generate(s) returns at once
 * with no tokens, and tsr_seq_was_cancelled(s) is 1.  Each generate
 * consumes the cancel it returns for.  Safe from any thread and from a
 * signal handler (one atomic store and a wake-up, no lock). */
TSR_API void tsr_seq_cancel(tsr_seq *s);
/* 1 when the last generate on s ended because of tsr_seq_cancel().  Safe
 * from any thread and from a signal handler. */
TSR_API int  tsr_seq_was_cancelled(const tsr_seq *s);

/* Tokens in the sequence's history (prompt and generated); 0 for NULL or a
 * closed sequence. */
TSR_API int  tsr_seq_length(const tsr_seq *s);
/* The history: *tokens points into s (valid until the next call on s).
 * Errors: TSR_ERR_ARG, TSR_ERR_STATE. */
TSR_API int  tsr_seq_tokens(const tsr_seq *s, const int **tokens, int *n);

/* Rewind to the first n tokens of the history, keeping their KV cache.
 * Errors: TSR_ERR_RANGE (n > length or n < 1), TSR_ERR_STATE. */
TSR_API int  tsr_seq_truncate(tsr_seq *s, int n);
/* Empty the sequence.  Errors: TSR_ERR_ARG, TSR_ERR_STATE, TSR_ERR_DEVICE. */
TSR_API int  tsr_seq_reset(tsr_seq *s);

/* Timing and traffic of one sequence, accumulated since it was opened.
 * "Last generate" is its last tsr_seq_generate or tsr_seq_generate_batch;
 * a batch's bytes and kernel runs are shared evenly among its sequences
 * (summed over them, they are the device's). */
typedef struct tsr_seq_stats {
    size_t   size;                 /* sizeof(tsr_seq_stats), or 0 (see Growing structs) */
    double   ttft_ms;          /* last generate: call to first token, ms    */
    double   decode_tok_s;     /* last generate: tokens / wall time of the call */
    double   prefill_tok_s;    /* all prefill: tokens/s                     */
    uint64_t prefill_tokens, decode_tokens;
    uint64_t prefill_h2d, prefill_d2h, decode_h2d, decode_d2h; /* bytes    */
    uint64_t invocations;      /* kernel runs for this sequence            */
    uint64_t reserved[8];      /* zeroed                                   */
} tsr_seq_stats;

/* Fill *st: its first st->size bytes (Growing structs).  Errors:
 * TSR_ERR_ARG (NULL, or st->size too small: nothing written),
 * TSR_ERR_STATE (closed). */
TSR_API int  tsr_seq_get_stats(const tsr_seq *s, tsr_seq_stats *st);

/* Logits (vocab floats) that predicted s's last token, e.g. after a
 * generate of one token: what the device's last forward pass left, if that
 * pass was s's.  After a tsr_seq_generate_batch only one sequence has
 * them: the first of seqs still generating at the batch's last step.
 * Debug traffic.  Errors: TSR_ERR_ARG, TSR_ERR_STATE (closed; or the
 * device holds no logits of s's last token: none computed yet, or since
 * then a prefill or append on any sequence (a prefill runs no classifier),
 * a forward pass of another sequence, a reset of s or a truncate that
 * dropped tokens of s; also after a generate whose callback stopped it
 * when the device had already sampled past that token, since the rewind
 * is a truncate), TSR_ERR_UNSUPPORTED. */
TSR_API int  tsr_seq_read_logits(tsr_seq *s, float *logits, int n);

/* ------------------------------------------------------------------------ */
/* Chat templates                                                            */

/* A model's chat template is a Jinja program (GGUF tokenizer.chat_template).
 * tessera does not run Jinja: it recognises the template's family by its
 * text and formats conversations natively, to the bytes the model's own
 * template renders (jinja2, as Hugging Face transformers sets it up) for
 * messages of text.  The families (docs/server.md, "Chat templates"):
 *   plain       no template: "User: ...\nAssistant:" (tessera's own)
 *   chatml      <|im_start|>ROLE\n...<|im_end|>\n      (Qwen2/2.5, SmolLM2)
 *   llama3      <|start_header_id|>ROLE<|end_header_id|>\n\n...<|eot_id|>
 *   llama2      [INST] ... [/INST] (system text as a line of the first turn)
 *   llama2-sys  [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] (Llama 2 chat)
 *   phi3        <|user|>\n...<|end|>\n                  (Phi-3, Phi-3.5)
 *   gemma       <start_of_turn>user\n...<end_of_turn>\n (Gemma; system text
 *               opens the first turn, as Gemma 3's template puts it)
 * Details a family's templates differ in are read from the template's text
 * when it is given: chatml's default system message (the literal
 * '<|im_start|>system\n...<|im_end|>' a template emits when the
 * conversation has none, e.g. Qwen2.5's "You are Qwen, created by Alibaba
 * Cloud. You are a helpful assistant."); llama3's system header with
 * "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
 * (Llama 3.1/3.2 templates, whose text holds "Cutting Knowledge Date"; the
 * date is the templates' own default for a renderer without strftime_now,
 * so the text does not change with the day); llama2's BOS text before
 * each later turn ("bos_token + '[INST]") and stripped contents
 * (".strip()" or "trim").  Without a text, a family is its reference
 * template: ChatML with no default system message, Llama 3 (3.0) with no
 * system header, Llama 2 chat (BOS text before later turns, contents
 * stripped).
 * BOS: templates that open with {{ bos_token }} (Llama 2/3, Gemma) get no
 * BOS text at the start: the tokenizer adds the BOS token when the text
 * starts a sequence (tsr_seq_append_text on an empty sequence), so the
 * formatted text is the template's output after its opening BOS.  Special
 * tokens inside it (<|im_start|>, </s>, ...) are plain text here. */

/* One message of a conversation.  Zero-initialise (size and the reserved
 * words; Growing structs: an array's elements all state one size). */
typedef struct tsr_chat_msg {
    size_t   size;                 /* sizeof(tsr_chat_msg), or 0 (see Growing structs) */
    const char *role;        /* "system", "developer" (formatted as system,
                                as OpenAI's newer name for it), "user" or
                                "assistant"                                 */
    const char *content;     /* UTF-8 text, NUL-terminated                  */
    uint64_t reserved[2];    /* zero                                        */
} tsr_chat_msg;

/* The family names tsr_chat_format takes, comma-separated: "plain,
 * chatml, llama3, llama2, llama2-sys, phi3, gemma".  A static string.
 * Thread-safe. */
TSR_API const char *tsr_chat_template_list(void);

/* The family called name (one of tsr_chat_template_list(), exactly): the
 * library's static copy of the name, or NULL for any other string or
 * NULL.  Thread-safe. */
TSR_API const char *tsr_chat_template_find(const char *name);

/* Recognise a Jinja chat template's family by the text it contains, as
 * llama.cpp's llm_chat_detect_template does (src/llama-chat.cpp), checked
 * in this order:
 *   "<|im_start|>" (and not "<|im_sep|>", Phi-4's)             chatml
 *   "[INST]" (not Mistral's: "[SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]",
 *            "' [INST] ' + system_message")   llama2-sys with "<<SYS>>",
 *                                             else llama2
 *   "<|assistant|>" and "<|end|>"                                phi3
 *   "<start_of_turn>"                                            gemma
 *   "<|start_header_id|>" and "<|end_header_id|>"                llama3
 * Returns the family's static name, or NULL when text is NULL or none of
 * these is in it (callers then format with "plain" and say so).
 * Thread-safe. */
TSR_API const char *tsr_chat_template_detect(const char *text);

/* Format a conversation for family (NULL: tsr_chat_template_detect(tmpl),
 * "plain" when that is NULL) into buf: the text the model's template
 * renders for msgs, then, when add_generation_prompt is non-zero, the
 * opening of the assistant's turn for the model to continue.  tmpl
 * (optional) is the template's text, read for the details above; NULL:
 * the family's reference template.  msgs is (n_msgs,), read during the
 * call only; n_msgs 0 formats an empty conversation.  Per family:
 *   plain:  system "CONTENT\n\n", user "User: CONTENT\n", assistant
 *           "Assistant: CONTENT\n", generation prompt "Assistant:".
 *   chatml: "<|im_start|>ROLE\nCONTENT<|im_end|>\n" each, after the
 *           template's default system message when msgs[0] is not a system
 *           one; prompt "<|im_start|>assistant\n".  (Qwen2.5's template.)
 *   llama3: each "<|start_header_id|>ROLE<|end_header_id|>\n\n" +
 *           trim(CONTENT) + "<|eot_id|>"; with the date header, a system
 *           turn always comes first (msgs[0]'s content if it is a system
 *           one, else empty) after the header lines; prompt
 *           "<|start_header_id|>assistant<|end_header_id|>\n\n".
 *           (Llama 3.2's template without tools.)
 *   llama2, llama2-sys: "[INST] " + user + " [/INST]", " " + assistant +
 *           " </s>", "<s>" before later "[INST]"s (see above); msgs[0]'s
 *           system text opens the first user turn: "<<SYS>>\nS\n<</SYS>>\n\n"
 *           (llama2-sys) or "S\n" (llama2); no generation prompt (the text
 *           ends with " [/INST]").  (Llama 2 chat's template.)
 *   phi3:   "<|system|>\n" (non-empty content only), "<|user|>\n",
 *           "<|assistant|>\n" + CONTENT + "<|end|>\n"; prompt
 *           "<|assistant|>\n", without one "<|endoftext|>" (the eos_token
 *           Phi-3.5's template ends with).  (Phi-3.5-mini-instruct's.)
 *   gemma:  "<start_of_turn>" + ("model" for assistant, else the role) +
 *           "\n" + trim(CONTENT) + "<end_of_turn>\n", msgs[0]'s system
 *           text + "\n\n" opening the next turn; prompt
 *           "<start_of_turn>model\n".  (Gemma 3's template, text only.)
 * trim and strip remove what Python's str.strip() does (ASCII and Unicode
 * white space).  A system message after the first is formatted as the
 * family's system turn where it has one (plain, chatml, llama3, phi3),
 * else as a user turn (llama2, gemma).  The templates' checks that roles
 * alternate are not made.
 * *len gets the text's length in bytes (without the NUL) whether or not it
 * fits; buf (cap bytes, may be NULL when cap is 0) gets the text and a NUL
 * when cap > *len, else TSR_ERR_RANGE is returned and buf holds the first
 * cap - 1 bytes and a NUL (nothing when cap is 0): call with cap 0 to
 * learn the length.  The caller owns buf; the library keeps nothing.
 * Errors: TSR_ERR_ARG (unknown family, len NULL, n_msgs < 0, msgs NULL
 * with n_msgs > 0, a NULL role or content, a role outside the four, a
 * message's size other than msgs[0]'s or outside the size rule),
 * TSR_ERR_UNSUPPORTED (a message's reserved words not zero),
 * TSR_ERR_RANGE.  Thread-safe (no shared state). */
TSR_API int tsr_chat_format(const char *family, const char *tmpl, const tsr_chat_msg *msgs,
                            int n_msgs, int add_generation_prompt, char *buf, size_t cap,
                            size_t *len);

/* ------------------------------------------------------------------------ */
/* Model files without a device                                              */

/* What a model file holds: its header, parameters and bytes per tensor
 * group, as stored in the file. */
typedef struct tsr_file_info {
    size_t   size;                 /* sizeof(tsr_file_info), or 0 (see Growing structs) */
    char     format[48];       /* e.g. "llama2.c v2 (Q8_0)"                */
    int      dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
    int      seq_len;          /* trained context, tokens                  */
    int      shared_classifier;/* 1: the classifier is the embedding table */
    int      group_size;       /* Q8_0 group size, 0 for fp32 files        */
    uint64_t file_bytes;
    uint64_t n_params;         /* weight elements, shared classifier once  */
    /* Elements and stored bytes per tensor group. */
    uint64_t params_embedding, bytes_embedding;   /* tok_embedding          */
    uint64_t params_attention, bytes_attention;   /* wq wk wv wo, all layers */
    uint64_t params_ffn, bytes_ffn;               /* w1 w2 w3, all layers   */
    uint64_t params_norms, bytes_norms;           /* RMSNorm weights        */
    uint64_t params_classifier, bytes_classifier; /* wcls when not shared   */
    /* GGUF: the architecture and tensors by stored type; zero otherwise. */
    char     architecture[16];
    int      tensors_f32, tensors_f16, tensors_q8_0, tensors_q4_0;
    /* On-chip bytes after conversion on the emulator's default device (16
     * PEs, one sequence of seq_len tokens, fp32 KV cache): weights as Q8_0
     * at group size 32, and as F32. */
    uint64_t onchip_q8_bytes, onchip_f32_bytes;
    /* What goes on chip by default (the file's own quantization where the
     * kernel takes it, e.g. "Q8_0 group 4", "Q4_0 (embedding, ...) + Q8_0
     * group 32 (w2, classifier)") and its bytes on that device; "" and 0
     * when the default placement fails. */
    char     onchip_weights[96];
    uint64_t onchip_bytes;
    uint64_t reserved[8];      /* zeroed                                   */
} tsr_file_info;

/* Read the header and tensor table of a model file (all checks of
 * tsr_model_load apply, except the scan for non-finite weights, which
 * needs every weight).  On failure err (if not NULL) gets a one-line
 * message naming the file.  Fills the first info->size bytes (Growing
 * structs; zeroed when the file cannot be read).  Errors: TSR_ERR_ARG
 * (NULL, or info->size too small: nothing written), TSR_ERR_IO,
 * TSR_ERR_FORMAT, TSR_ERR_UNSUPPORTED, TSR_ERR_NOMEM.  Thread-safe. */
TSR_API int tsr_file_inspect(const char *path, tsr_file_info *info, char *err, size_t errlen);

/* Write a llama2.c checkpoint with deterministic pseudo-random weights
 * (normal, std 0.02; norm weights 1) of a named shape: "stories260K",
 * "stories15M", "stories42M", "stories110M" (in any case), or "DIMxLAYERS" with optional
 * ":hidden=H,heads=N,kv=K,vocab=V,seq=S".  group_size 0 writes version 1
 * fp32; > 0 writes version 2 Q8_0 with that group size; TSR_SYNTH_LEGACY
 * writes llama2.c's legacy (version 0) fp32 layout, the one run.c and
 * llama.cpp's llama-convert-llama2c-to-ggml read (the same weights as
 * version 1 for the same seed).  A regular file is written under a
 * temporary name beside path (path.tmp.*) and renamed to path when
 * complete, so path never holds a partial checkpoint; a device or pipe
 * named by path is written directly.  On failure err (if not NULL) gets a
 * one-line message.
 * Errors: TSR_ERR_ARG (bad shape or group size), TSR_ERR_IO.  Thread-safe. */
#define TSR_SYNTH_LEGACY (-1)
TSR_API int tsr_synth_file(const char *shape, const char *path, int group_size, uint64_t seed,
                           char *err, size_t errlen);

/* Write a GGUF file with deterministic pseudo-random weights (as
 * tsr_synth_file's; biases std 0.1) of architecture arch: "llama3" (GGUF
 * architecture llama) or "qwen2" (q, k, v biases, NEOX RoPE), of shape
 * shape: NULL for the arch's tiny one ("llama3-tiny": dim 128, hidden 384,
 * 2 layers, 4 heads, 2 KV heads, RoPE base 5e5 with Llama 3 scaling;
 * "qwen2-tiny": hidden 320, base 1e6, epsilon 1e-6), a real model's
 * ("smollm2-135m", "llama3.2-1b" for llama3; "qwen2.5-0.5b" for qwen2),
 * or "DIMxLAYERS[:...]" as tsr_synth_file's, made of the arch.  The
 * vocabulary is vocab's, a vocab-only GGUF file (llama.cpp's
 * models/ggml-vocab-*.gguf): its tokenizer.* metadata copied as stored,
 * vocab_size its token count.  type: TSR_SYNTH_F32, TSR_SYNTH_Q8_0 or
 * TSR_SYNTH_Q4_0 for the matrices (norms, biases, rope_freqs F32).  Tensor
 * names, metadata keys and layouts are those of llama.cpp's converter, so
 * llama.cpp loads the file.  Written under a temporary name and renamed.
 * On failure err (if not NULL) gets a one-line message.  Errors:
 * TSR_ERR_ARG (unknown arch, shape or type; a shape of the other arch),
 * TSR_ERR_IO, TSR_ERR_FORMAT (vocab is not a GGUF with tokens),
 * TSR_ERR_NOMEM.  Thread-safe. */
#define TSR_SYNTH_F32  0
#define TSR_SYNTH_Q8_0 1
#define TSR_SYNTH_Q4_0 2
TSR_API int tsr_synth_gguf_file(const char *arch, const char *shape, const char *vocab,
                                const char *path, int type, uint64_t seed, char *err,
                                size_t errlen);

/* ------------------------------------------------------------------------ */
/* Planning for a real FPGA part (tessera plan)                              */

/* What to plan.  Zero-initialise (or TSR_INIT), then set part (required);
 * the library reads the first size bytes (Growing structs). */
typedef struct tsr_plan_opts {
    size_t   size;                 /* sizeof(tsr_plan_opts), or 0 (see Growing structs) */
    const char *part;      /* one of tsr_part_list() (the table in
                              hw/parts.def)                                  */
    const char *shape;     /* plan a synth shape ("stories110M", "DIMxLAYERS:...",
                              as tsr_synth_file) instead of a file; or NULL  */
    int  weights_f32;      /* 1: F32 weights; 0: quantized (see weights)     */
    int  group_size;       /* group size; 0: the file's (32)                 */
    const char *kv;        /* KV cache precision "f32" (NULL: f32), "f16",
                              "int8"                                         */
    int  seq_len;          /* context; 0: the model's                        */
    int  pes;              /* PEs per card; 0: the fastest projected that fits */
    int  clock_mhz;        /* kernel clock; 0: the part's default            */
    int  step;             /* report the decode step at position step - 1;
                              0: the last position (seq_len - 1)             */
    int  cards;            /* split the layers over this many cards; 0: 1    */
    const char *profile;   /* a shipped synthesis profile to plan for ("stories260k",
                              "stories15m"): its datapath, limits and arrays;
                              NULL: the stories15m datapath with arrays sized
                              for the model                                  */
    int  cols;             /* mesh columns (a power of two); 0: the profile's
                              default (1 when its sums keep run.c's order,
                              else its most)                                 */
    int  kv_split;         /* PEs per KV head (a power of two); 0: the
                              profile's default                              */
    int  weights;          /* quantized weights: TSR_WEIGHTS_FILE (the file's
                              own; a shape as Q8_0), TSR_WEIGHTS_Q8,
                              TSR_WEIGHTS_Q4                                 */
    double max_util;       /* utilisation ceiling: a design fits when each of
                              LUT, FF, DSP, BRAM36 and URAM is at most this
                              percent of what the platform shell leaves;
                              0: 75                                          */
    uint64_t reserved[7];  /* zero                                           */
} tsr_plan_opts;

/* Plan the model file at path (or o->shape) on a part: on-chip bytes
 * (weights, scales, KV cache, norms, activations, scratch), BRAM36 / URAM
 * blocks after packing and DSPs, per PE and per card, against the part;
 * whether it fits and, if not, the smallest change that does (a shorter
 * context, an int8 KV cache, a split over K cards); projected cycles per
 * decoded token and tokens/s, with the cycle model's assumptions.  Every
 * speed is a projection from a cycle model (docs/cycle-model.md), never a
 * measurement.  Writes text (json 0) or one JSON object (json 1) into buf
 * (NUL-terminated, truncated to len); *fits (optional) gets 1 (fits), 0
 * (does not fit) or -1 (cannot decide: hw/parts.def lacks the part's block
 * or DSP counts), so test it with == 1.  A model that does not fit is not
 * an error.  On failure err gets a one-line
 * message.  Errors: TSR_ERR_ARG (no or unknown part: the message lists the
 * valid ones; bad kv, pes, clock, step, cards, group, seq_len; o->size
 * outside the size rule), TSR_ERR_IO,
 * TSR_ERR_FORMAT, TSR_ERR_UNSUPPORTED.  Thread-safe. */
TSR_API int tsr_plan_report(const char *path, const tsr_plan_opts *o, int json, char *buf,
                            size_t len, int *fits, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
