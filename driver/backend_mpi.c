/*
 * backend_mpi.c - the MPI transport: a pipeline stage's device on another
 * MPI rank (Open MPI), for a model split over processes and hosts.
 *
 *   rank 0 (the driver)                     rank r (a stage's device)
 *   kcmd (protocol) -> backend_mpi:         tsr_mpi_rank_serve:
 *     open/start/write/read/publish/wait  ->  the same call on its own
 *     as one request message (+ payload)      emulator device (backend_emu)
 *   <- one reply (status, value, message,  <-  and its answer
 *      + payload)
 *
 * A backend is only a transport: it moves the words of the device's
 * buffers between ranks; what they mean stays in the command layer
 * (kcmd.c).  Stage k of a split over N = the world's size runs on rank k;
 * stage 0 on rank 0 beside the driver.  Built with MPI=1 (TSR_HAVE_MPI);
 * otherwise only the stubs at the end, which say how to get it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sched.h>
#include <time.h>

#include "backend.h"
#include "tessera.h"

#ifdef TSR_HAVE_MPI
#include <mpi.h>

/* Requests (rank 0 -> rank r), in tag REQ: a req_hdr, then for OPEN the
 * spec, WRITE the words, PREPARE the config, in tag DATA.  Replies in tag
 * REP: a rep_hdr, then READ's words or OPEN's devinfo in tag DATA. */
enum { RQ_OPEN = 1, RQ_START, RQ_WRITE, RQ_READ, RQ_PUBLISH, RQ_WAIT, RQ_PREPARE, RQ_CLOSE,
       RQ_QUIT };
enum { TAG_REQ = 0x7472, TAG_DATA, TAG_REP };

typedef struct req_hdr {
    int32_t  op, buf;
    uint32_t off, words, v, timeout_us;
} req_hdr;

typedef struct rep_hdr {
    int32_t  rc;
    uint32_t value;
    char     msg[TSR_ERRMSG_MAX];
} rep_hdr;

struct tsr_backend {
    int rank;   /* the rank whose device this is */
};

/* Ranks whose device this driver has closed (bit r): their serve loop
 * has ended; tsr_mpi_end releases the others. */
static uint64_t g_done_ranks;

static int mpi_up(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

/* A rank that neither answers nor fails: a dead rank that mpirun has not
 * yet ended (mpirun ends the whole job when a rank dies, within about a
 * second), a rank stopped or wedged, or a stalled link.  Every request's
 * reply is due within its own wait (at most 100 ms) plus this bound (3 s), and
 * its payload's time at 50 MB/s; after it the call fails with
 * TSR_ERR_DEVICE naming the rank, instead of blocking in MPI_Recv for
 * ever. */
#define STALL_MS        3000.0
#define STALL_BYTES_PER_MS 50000.0

/* Ranks whose link failed (bit r): the request and reply stream with them
 * is out of step, so later calls fail at once, tsr_mpi_end does not wait
 * for them, and MPI is not finalised (its finalize waits for every rank;
 * the process exits without it, and mpirun then ends the job). */
static uint64_t g_failed_ranks;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Wait for rq until deadline (ms, now_ms's clock): spin first (a reply
 * is usually microseconds away), then yield the CPU, then sleep 100 us
 * between tests (1 ms after a second: an idle server's ranks).  0 when it completed; -1 after the deadline (the request
 * cancelled, so a late reply never lands in the caller's buffer); -2 on
 * an MPI error. */
static int await(MPI_Request *rq, double deadline)
{
    double t0 = now_ms(), t = t0;
    for (unsigned n = 0;; n++) {
        int done = 0;
        if (MPI_Test(rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -2;
        if (done) return 0;
        if (n < 256) continue;
        if ((n & 15u) == 0 && (t = now_ms()) > deadline) {
            /* a receive not yet matched cancels at once, so a late reply
             * never lands in the caller's buffer; one in progress, or a
             * send (Open MPI cannot cancel sends), is given 100 ms more
             * and then let go */
            MPI_Cancel(rq);
            for (int i = 0; i < 1000 && !done; i++) {
                if (MPI_Test(rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
                if (!done) {
                    struct timespec ts = { 0, 100 * 1000 };
                    nanosleep(&ts, NULL);
                }
            }
            if (!done) MPI_Request_free(rq);
            return -1;
        }
        if (t - t0 < 1.0) continue;
        if (t - t0 < 10.0) {
            sched_yield();
        } else {
            struct timespec ts = { 0, t - t0 < 1000.0 ? 100 * 1000 : 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
}

static int link_failed(int rank, int how, const char *what, double waited_ms, tsr_err *e)
{
    if (rank < 64) g_failed_ranks |= 1ull << rank;
    if (how == -2)
        return tsr_seterr(e, TSR_ERR_DEVICE, "mpi: rank %d: the link failed (%s); the rank "
                          "has died or its host is unreachable", rank, what);
    return tsr_seterr(e, TSR_ERR_DEVICE, "mpi: rank %d has not answered in %.1f s (%s): the "
                      "rank has died, stopped or its link has stalled", rank, waited_ms / 1e3, what);
}

/* One request and its reply; payload out (words) after the header, reply
 * payload into in (in_bytes).  Each step bounded in time (await). */
static int call(int rank, const req_hdr *h, const void *out, size_t out_bytes, void *in,
                size_t in_bytes, uint32_t *value, tsr_err *e)
{
    if (rank < 64 && (g_failed_ranks >> rank & 1u))
        return tsr_seterr(e, TSR_ERR_DEVICE, "mpi: rank %d: its link failed earlier", rank);
    rep_hdr r;
    MPI_Request rq;
    double t0 = now_ms();
    double deadline = t0 + STALL_MS + h->timeout_us / 1e3 +
                      (double)(out_bytes + in_bytes) / STALL_BYTES_PER_MS;
    int w;
    if (MPI_Isend(h, (int)sizeof *h, MPI_BYTE, rank, TAG_REQ, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
        return link_failed(rank, -2, "request", 0, e);
    if ((w = await(&rq, deadline))) return link_failed(rank, w, "request", now_ms() - t0, e);
    if (out_bytes) {
        if (MPI_Isend(out, (int)out_bytes, MPI_BYTE, rank, TAG_DATA, MPI_COMM_WORLD, &rq) !=
            MPI_SUCCESS)
            return link_failed(rank, -2, "payload", 0, e);
        if ((w = await(&rq, deadline))) return link_failed(rank, w, "payload", now_ms() - t0, e);
    }
    if (MPI_Irecv(&r, (int)sizeof r, MPI_BYTE, rank, TAG_REP, MPI_COMM_WORLD, &rq) != MPI_SUCCESS)
        return link_failed(rank, -2, "reply", 0, e);
    if ((w = await(&rq, deadline))) return link_failed(rank, w, "reply", now_ms() - t0, e);
    if (r.rc == TSR_OK && in_bytes) {
        if (MPI_Irecv(in, (int)in_bytes, MPI_BYTE, rank, TAG_DATA, MPI_COMM_WORLD, &rq) !=
            MPI_SUCCESS)
            return link_failed(rank, -2, "reply payload", 0, e);
        if ((w = await(&rq, deadline)))
            return link_failed(rank, w, "reply payload", now_ms() - t0, e);
    }
    if (value) *value = r.value;
    if (r.rc != TSR_OK) {
        r.msg[sizeof r.msg - 1] = '\0';
        return tsr_seterr(e, r.rc, "rank %d: %s", rank, r.msg);
    }
    return TSR_OK;
}

/* ------------------------------------------------------------------------ */
/* The driver's side: a device on rank spec->index                            */

static int mpi_open(const tsr_devspec *spec, tsr_backend **out, tsr_devinfo *info, tsr_err *e)
{
    *out = NULL;
    int size = 0;
    if (!mpi_up()) return tsr_seterr(e, TSR_ERR_UNSUPPORTED, "mpi: MPI is not running");
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (spec->index < 1 || spec->index >= size || spec->index >= 64)
        return tsr_seterr(e, TSR_ERR_ARG, "mpi: rank %d outside 1..%d", spec->index, size - 1);
    tsr_backend *b = calloc(1, sizeof *b);
    if (!b) return tsr_seterr(e, TSR_ERR_NOMEM, "mpi: out of memory");
    b->rank = spec->index;
    tsr_devspec remote = *spec;
    snprintf(remote.backend, sizeof remote.backend, "emu");
    remote.index = 0;
    req_hdr h = { .op = RQ_OPEN };
    int rc = call(b->rank, &h, &remote, sizeof remote, info, sizeof *info, NULL, e);
    if (rc) {
        free(b);
        return rc;
    }
    info->cap_name = NULL;   /* a pointer of the other process */
    *out = b;
    return TSR_OK;
}

static int mpi_start(tsr_backend *b, tsr_err *e)
{
    req_hdr h = { .op = RQ_START };
    return call(b->rank, &h, NULL, 0, NULL, 0, NULL, e);
}

static void mpi_close(tsr_backend *b)
{
    req_hdr h = { .op = RQ_CLOSE };
    (void)call(b->rank, &h, NULL, 0, NULL, 0, NULL, NULL);
    g_done_ranks |= 1ull << b->rank;
    free(b);
}

static int mpi_write(tsr_backend *b, int buf, uint32_t off, const void *src, uint32_t words,
                     tsr_err *e)
{
    req_hdr h = { .op = RQ_WRITE, .buf = buf, .off = off, .words = words };
    return call(b->rank, &h, src, 4u * (size_t)words, NULL, 0, NULL, e);
}

static int mpi_read(tsr_backend *b, int buf, uint32_t off, void *dst, uint32_t words, tsr_err *e)
{
    req_hdr h = { .op = RQ_READ, .buf = buf, .off = off, .words = words };
    return call(b->rank, &h, NULL, 0, dst, 4u * (size_t)words, NULL, e);
}

static int mpi_publish(tsr_backend *b, int buf, uint32_t off, uint32_t v, tsr_err *e)
{
    req_hdr h = { .op = RQ_PUBLISH, .buf = buf, .off = off, .v = v };
    return call(b->rank, &h, NULL, 0, NULL, 0, NULL, e);
}

static int mpi_wait(tsr_backend *b, int buf, uint32_t off, uint32_t old, uint32_t timeout_us,
                    uint32_t *now, tsr_err *e)
{
    req_hdr h = { .op = RQ_WAIT, .buf = buf, .off = off, .v = old, .timeout_us = timeout_us };
    return call(b->rank, &h, NULL, 0, NULL, 0, now, e);
}

static void mpi_prepare(tsr_backend *b, const tsr_kconfig *kc)
{
    req_hdr h = { .op = RQ_PREPARE };
    (void)call(b->rank, &h, kc, sizeof *kc, NULL, 0, NULL, NULL);
}

const tsr_backend_iface tsr_backend_mpi = {
    .name      = "mpi",
    .open      = mpi_open,
    .start     = mpi_start,
    .close     = mpi_close,
    .write     = mpi_write,
    .read      = mpi_read,
    .publish   = mpi_publish,
    .wait      = mpi_wait,
    .interrupt = NULL,   /* a wait returns within its slice; decode checks
                            the cancel flag between tokens */
    .prepare   = mpi_prepare,
};

int tsr_mpi_ranks(void)
{
    int size = 1;
    if (mpi_up()) MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

/* ------------------------------------------------------------------------ */
/* A stage's rank: serve the driver's requests on a local emulator device     */

static void reply(const rep_hdr *r, const void *data, size_t bytes)
{
    MPI_Send(r, (int)sizeof *r, MPI_BYTE, 0, TAG_REP, MPI_COMM_WORLD);
    if (r->rc == TSR_OK && bytes) MPI_Send(data, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
}

static int serve_rank(void)
{
    const tsr_backend_iface *be = &tsr_backend_emu;
    tsr_backend *dev = NULL;
    uint32_t *tmp = NULL;
    size_t tmp_cap = 0;
    for (;;) {
        req_hdr h;
        rep_hdr r;
        tsr_err e;
        memset(&r, 0, sizeof r);
        tsr_clearerr(&e);
        /* the next request may be a long way off (a server without
         * clients): polled, sleeping between tests once it has been a while,
         * rather than MPI_Recv's busy wait, which would hold a core */
        MPI_Request rq;
        if (MPI_Irecv(&h, (int)sizeof h, MPI_BYTE, 0, TAG_REQ, MPI_COMM_WORLD, &rq) !=
                MPI_SUCCESS ||
            await(&rq, INFINITY))
            break;
        size_t bytes = 4u * (size_t)h.words;
        if ((h.op == RQ_WRITE || h.op == RQ_READ) && bytes > tmp_cap) {
            uint32_t *t = realloc(tmp, bytes);
            if (!t) {
                free(tmp);
                return 1;
            }
            tmp = t;
            tmp_cap = bytes;
        }
        switch (h.op) {
        case RQ_OPEN: {
            tsr_devspec spec;
            tsr_devinfo info;
            memset(&info, 0, sizeof info);
            MPI_Recv(&spec, (int)sizeof spec, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            r.rc = dev ? tsr_seterr(&e, TSR_ERR_STATE, "a device is open on this rank")
                       : be->open(&spec, &dev, &info, &e);
            snprintf(r.msg, sizeof r.msg, "%s", e.msg);
            reply(&r, &info, sizeof info);
            continue;
        }
        case RQ_WRITE:
            MPI_Recv(tmp, (int)bytes, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            r.rc = dev ? be->write(dev, h.buf, h.off, tmp, h.words, &e) : TSR_ERR_STATE;
            break;
        case RQ_READ:
            r.rc = dev ? be->read(dev, h.buf, h.off, tmp, h.words, &e) : TSR_ERR_STATE;
            snprintf(r.msg, sizeof r.msg, "%s", e.msg);
            reply(&r, tmp, bytes);
            continue;
        case RQ_START:   r.rc = dev ? be->start(dev, &e) : TSR_ERR_STATE; break;
        case RQ_PUBLISH: r.rc = dev ? be->publish(dev, h.buf, h.off, h.v, &e) : TSR_ERR_STATE; break;
        case RQ_WAIT:
            r.rc = dev ? be->wait(dev, h.buf, h.off, h.v, h.timeout_us, &r.value, &e)
                       : TSR_ERR_STATE;
            break;
        case RQ_PREPARE: {
            tsr_kconfig kc;
            MPI_Recv(&kc, (int)sizeof kc, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (dev && be->prepare) be->prepare(dev, &kc);
            break;
        }
        case RQ_CLOSE:
        case RQ_QUIT:
            if (dev) be->close(dev);
            dev = NULL;
            if (h.op == RQ_CLOSE) reply(&r, NULL, 0);
            free(tmp);
            return 0;
        default:
            r.rc = tsr_seterr(&e, TSR_ERR_ARG, "unknown request %d", h.op);
        }
        snprintf(r.msg, sizeof r.msg, "%s", e.msg);
        reply(&r, NULL, 0);
    }
    free(tmp);
    return 1;
}

int tsr_mpi_rank_serve(void)
{
    int init = 0, rank = 0, size = 1;
    MPI_Initialized(&init);
    if (!init) {
        const char *n = getenv("OMPI_COMM_WORLD_SIZE");
        if (!n || atoi(n) < 2) return -1;   /* not launched by mpirun with ranks */
        /* serialized: rank 0's device calls may come from any one thread at
         * a time (tessera serve's scheduler), under the device's lock */
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) return 1;
    }
    /* a failed transfer returns its error to call() instead of aborting */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || rank == 0) return -1;   /* the driver's rank goes on */
    int rc = serve_rank();
    MPI_Finalize();
    return rc;
}

void tsr_mpi_end(void)
{
    if (!mpi_up()) return;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        /* ranks whose device was never opened, or is still open, wait for a
         * request: release them (a rank whose link failed is not waited
         * for: the message goes out or is let go after the stall bound) */
        for (int r = 1; r < size; r++) {
            if (r < 64 && ((g_done_ranks | g_failed_ranks) >> r & 1u)) continue;
            req_hdr h = { .op = RQ_QUIT };
            MPI_Request rq;
            if (MPI_Isend(&h, (int)sizeof h, MPI_BYTE, r, TAG_REQ, MPI_COMM_WORLD, &rq) !=
                    MPI_SUCCESS ||
                await(&rq, now_ms() + STALL_MS))
                g_failed_ranks |= r < 64 ? 1ull << r : 0;
        }
    }
    /* MPI_Finalize waits for every rank: with one gone or stalled it would
     * never return.  Leave MPI as it is; the process exits, and mpirun,
     * seeing a rank end without finalising, ends the others. */
    if (g_failed_ranks) return;
    MPI_Finalize();
}

int tsr_mpi_available(void) { return 1; }

#else /* !TSR_HAVE_MPI */

int tsr_mpi_ranks(void) { return 1; }
int tsr_mpi_rank_serve(void) { return -1; }
void tsr_mpi_end(void) {}
int tsr_mpi_available(void) { return 0; }

#endif
