/* call.c - one public call on a device at a time: the device's lock, calls
 * from inside callbacks, per-thread error records (call.h). */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "call.h"

/* ------------------------------------------- per-thread error records --- */

/* The calling thread's last failure, and the device it happened on (by id,
 * which is never reused, so a record cannot outlive its device's meaning). */
static _Thread_local struct {
    uint64_t dev_id;
    int      code;
    char     msg[TSR_ERRMSG_MAX];
} last_err;

static uint64_t next_dev_id = 1;   /* atomic */

uint64_t tsr_call_new_id(void) { return __atomic_fetch_add(&next_dev_id, 1, __ATOMIC_RELAXED); }

static void publish(const tsr_device *dev, int rc)
{
    last_err.dev_id = dev->id;
    last_err.code = rc;
    snprintf(last_err.msg, sizeof last_err.msg, "%s", dev->err.msg[0] ? dev->err.msg
                                                                       : tsr_strerror(rc));
}

const char *tsr_device_errmsg(const tsr_device *dev)
{
    if (!dev) return "no device handle";
    return last_err.dev_id == dev->id ? last_err.msg : "";
}

int tsr_errcode(const tsr_device *dev)
{
    return dev && last_err.dev_id == dev->id ? last_err.code : TSR_OK;
}

/* ------------------------------------------------------ one call at a time */

static _Thread_local tsr_held *held_top;

static int holds(const tsr_device *dev)
{
    for (const tsr_held *h = held_top; h; h = h->up)
        if (h->dev == dev) return 1;
    return 0;
}

void tsr_call_enter(tsr_call *c, tsr_device *dev)
{
    c->dev = dev;
    c->locked = !holds(dev);
    if (c->locked) {
        pthread_mutex_lock(&dev->mu);
        c->h = (tsr_held){ dev, held_top };
        held_top = &c->h;
    }
    tsr_clearerr(&dev->err);
}

int tsr_call_drive(const tsr_call *c, const char *what)
{
    if (c->locked) return TSR_OK;
    return tsr_seterr(&c->dev->err, TSR_ERR_STATE,
                      "%s: called from a callback of a call on the same device", what);
}

void tsr_call_enter_close(tsr_call *c, tsr_device *dev)
{
    tsr_call_enter(c, dev);
    assert(c->locked && "a tessera handle closed from a callback of a call on its device");
}

int tsr_call_leave(tsr_call *c, int rc)
{
    tsr_device *dev = c->dev;
    if (rc != TSR_OK) publish(dev, rc);
    int dead = dev->refs == 0;   /* read under the lock: nobody else refers to it then */
    if (c->locked) {
        held_top = c->h.up;
        pthread_mutex_unlock(&dev->mu);
    }
    if (dead) {
        pthread_mutex_destroy(&dev->mu);
        free(dev);
    }
    return rc;
}
