/* kstatus.c - kernel status words (kernels/tsr_kernel.h TSR_K_*) as driver
 * errors, for every backend. */
#include "backend.h"
#include "tsr_kernel.h"

static const char *kstatus_name(int k)
{
    switch (k) {
    case TSR_K_OK:        return "ok";
    case TSR_K_EOP:       return "unknown op";
    case TSR_K_EARG:      return "bad argument";
    case TSR_K_ESTATE:    return "bad state";
    case TSR_K_ESHAPE:    return "shape outside the kernel profile";
    case TSR_K_ECAPACITY: return "PE memory too small";
    case TSR_K_ERANGE:    return "position out of range";
    default:              return "unknown kernel status";
    }
}

int tsr_kstatus_err(int k, const char *backend, const char *what, tsr_err *e)
{
    int code = k == TSR_K_ERANGE ? TSR_ERR_RANGE
             : k == TSR_K_ECAPACITY ? TSR_ERR_CAPACITY
             : k == TSR_K_ESHAPE ? TSR_ERR_UNSUPPORTED
             : k == TSR_K_ESTATE ? TSR_ERR_STATE
             : k == TSR_K_EARG ? TSR_ERR_ARG : TSR_ERR_DEVICE;
    return tsr_seterr(e, code, "%s: %s: kernel status %d (%s)", backend, what, k, kstatus_name(k));
}
