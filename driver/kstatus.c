/* kstatus.c - what the kernel answers, for every backend: status words
 * (kernels/tsr_kernel.h TSR_K_*) as driver errors, and its counters block
 * (READ_COUNTERS) as text. */
#include <stdio.h>
#include <string.h>

#include "kstatus.h"
#include "plan.h"
#include "tsr_kernel.h"
#include "weight_image.h"

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

void tsr_kcounters_from_words(const uint32_t *w, uint32_t n, tsr_kcounters *kc)
{
    memset(kc, 0, sizeof *kc);
    uint32_t k = 0;
#define GET(field) do { if (k + 1u < n) (field) = (uint64_t)w[k] | ((uint64_t)w[k + 1u] << 32); \
                        k += 2u; } while (0)
    for (int i = 0; i < TSR_OP_COUNT; i++) GET(kc->runs[i]);
    GET(kc->tokens_fed);
    GET(kc->tokens_sampled);
    GET(kc->macs);
    GET(kc->fabric_bcast_bytes);
    GET(kc->fabric_reduce_bytes);
    GET(kc->fabric_gather_bytes);
    GET(kc->attended);
    GET(kc->load_bytes);
    GET(kc->n_pes);
    GET(kc->last_pos);
    for (int r = 0; r < TSR_RG_COUNT; r++) GET(kc->cyc[r]);
    for (int r = 0; r < TSR_RG_COUNT; r++) GET(kc->cyc_mark[r]);
    for (int p = 0; p < TSR_MAX_PES; p++) GET(kc->pe_sram_bytes[p]);
#undef GET
}

size_t tsr_kcounters_text(const tsr_kcounters *kc, uint32_t max_pes, const char *profile,
                          const tsr_kconfig *cfg, int clock_mhz, char *buf, size_t len)
{
    static const char *const opn[TSR_OP_COUNT] = {
        "nop", "load", "configure", "reset", "truncate", "prefill", "decode", "read_logits",
        "read_counters", "exit", "decode_batch", "read_mem", "forward"
    };
    size_t at = 0;
#define PUT(...) do { int w_ = snprintf(at < len ? buf + at : NULL, at < len ? len - at : 0, \
                                        __VA_ARGS__); \
                      if (w_ > 0) at += (size_t)w_; } while (0)
#ifdef TSR_SERIAL_PES
    PUT("profile %s, %llu PEs (PE loops serialised: TSR_SERIAL_PES)\n", profile,
        (unsigned long long)kc->n_pes);
#else
    PUT("profile %s, %llu PEs\n", profile, (unsigned long long)kc->n_pes);
#endif
    if (cfg) {
        /* what is on chip: the weights' formats, the KV cache's precision and bytes */
        char w[160];
        uint64_t kvb = 0;
        tsr_wimage_describe(cfg, w, sizeof w);
        for (uint32_t p = 0; p < tsr_lay_pes(cfg); p++) kvb += tsr_lay_kv_bytes(cfg, p);
        PUT("onchip.weights %s\n", w);
        PUT("onchip.kv %s\n", tsr_wimage_kv_name(cfg->kv_dtype));
        PUT("onchip.kv_bytes %llu\n", (unsigned long long)kvb);
    }
    for (int i = 0; i < TSR_OP_COUNT; i++) PUT("runs.%s %llu\n", opn[i], (unsigned long long)kc->runs[i]);
    PUT("tokens_fed %llu\n", (unsigned long long)kc->tokens_fed);
    PUT("tokens_sampled %llu\n", (unsigned long long)kc->tokens_sampled);
    PUT("macs %llu\n", (unsigned long long)kc->macs);
    PUT("fabric_bcast_bytes %llu\n", (unsigned long long)kc->fabric_bcast_bytes);
    PUT("fabric_reduce_bytes %llu\n", (unsigned long long)kc->fabric_reduce_bytes);
    PUT("fabric_gather_bytes %llu\n", (unsigned long long)kc->fabric_gather_bytes);
    PUT("attended %llu\n", (unsigned long long)kc->attended);
    PUT("load_bytes %llu\n", (unsigned long long)kc->load_bytes);
    for (uint32_t p = 0; p < kc->n_pes && p < max_pes && p < TSR_MAX_PES; p++)
        PUT("pe%u.sram_bytes %llu\n", p, (unsigned long long)kc->pe_sram_bytes[p]);
#undef PUT
    /* the cycles the code charged for the last forward pass, by region */
    if (cfg && kc->tokens_fed)
        at += tsr_plan_run_estimate(kc->cyc, kc->cyc_mark, kc->last_pos, clock_mhz,
                                    at < len ? buf + at : NULL, at < len ? len - at : 0);
    if (len > 0 && at >= len) buf[len - 1] = '\0';
    return at;
}
