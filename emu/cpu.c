/*
 * cpu.c - what the CPU can run, asked once (see tsr_emu.h): the SIMD rows
 * and attention's register sums pick their path by it at run time.
 */
#include "tsr_emu.h"

int tsr_emu_cpu_once(int *cache, int (*probe)(void))
{
    int h = __atomic_load_n(cache, __ATOMIC_RELAXED);   /* -1: not asked yet */
    if (h < 0) {
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        h = probe() != 0;
#else
        (void)probe;
        h = 0;
#endif
        __atomic_store_n(cache, h, __ATOMIC_RELAXED);
    }
    return h;
}

/* AVX-512 F, BW and VL (every AVX-512 CPU but Xeon Phi has all three). */
static int avx512_probe(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

int tsr_emu_avx512(void)
{
    static int have = -1;
    return tsr_emu_cpu_once(&have, avx512_probe);
}

/* AVX2 and FMA (every x86-64 CPU since Haswell and Zen). */
static int avx2_probe(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

int tsr_emu_avx2(void)
{
    static int have = -1;
    return tsr_emu_cpu_once(&have, avx2_probe);
}

int tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;

int tsr_emu_vec_level(void)
{
    int v = tsr_emu_avx512() ? TSR_EMU_VEC_AVX512 : tsr_emu_avx2() ? TSR_EMU_VEC_AVX2
                                                                  : TSR_EMU_VEC_NONE;
    return v < tsr_emu_vec_limit ? v : tsr_emu_vec_limit;
}
