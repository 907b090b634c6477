/*
 * call.h - one public call on a device at a time (tessera.h, "Threads").
 *
 * Every public call that touches a device brackets its work with
 * tsr_call_enter() and tsr_call_leave().  Enter takes the device's lock,
 * unless the calling thread already holds it: then the call comes from
 * inside a callback of a call on the same device (a token, progress or
 * log callback), runs under that call's lock, and tsr_call_drive() refuses
 * it if it would drive the device.  Leave records a failure in the calling
 * thread's error record (tsr_device_errmsg, tsr_errcode), drops the lock,
 * and frees the device once no reference to it is left (device.h).
 */
#ifndef TSR_CALL_H
#define TSR_CALL_H

#include "device.h"

/* The devices whose lock a thread holds, innermost first. */
typedef struct tsr_held {
    const tsr_device *dev;
    struct tsr_held  *up;
} tsr_held;

/* One call in progress (on the caller's stack). */
typedef struct tsr_call {
    tsr_device *dev;
    int         locked;   /* 1: this call took dev->mu; 0: nested in a callback */
    tsr_held    h;
} tsr_call;

/* A fresh device id (never reused): keys the threads' error records. */
uint64_t tsr_call_new_id(void);

/* Start a call on dev and clear dev->err. */
void tsr_call_enter(tsr_call *c, tsr_device *dev);

/* TSR_OK, or TSR_ERR_STATE ("<what>: called from a callback ...") for a
 * call that drives the device from inside a callback of the same device. */
int  tsr_call_drive(const tsr_call *c, const char *what);

/* Enter for a close: closing from a callback of the same device would free
 * what the running call uses, a programmer error (asserts). */
void tsr_call_enter_close(tsr_call *c, tsr_device *dev);

/* End the call with status rc (returned). */
int  tsr_call_leave(tsr_call *c, int rc);

#endif
