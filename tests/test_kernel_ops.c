/*
 * test_kernel_ops.c - the kernel's building blocks (kernels/) against
 * llama2.c's run.c / runq.c arithmetic, written out here as plain loops:
 *
 *   ops        reductions, RMSNorm scale, softmax, SwiGLU, RoPE, the Q8_0
 *              group rule (tsr_quantize and the mesh's input path), argmax
 *   mesh       Q8_0 and F32 GEMV on 1..64 PEs and 1..4 mesh columns,
 *              the embedding gather, the greedy argmax on the mesh, the
 *              emulator's SIMD rows
 *   attention  per-head outputs with GQA, kv_split 1 and > 1
 *   sampler    greedy, multinomial and top-p (tsr_sample), seeded
 *   cycles     a parallel region charges its slowest PE
 *   forward    whole passes through the commands against tests/ref/golden
 *
 * (Where things go and what CONFIGURE refuses: test_kernel_layout.c.)
 * The emulator's generic profile is what this file is compiled with
 * (TSR_SUM_LANES 1: reductions in run.c's order).  The model is
 * tests/support/tiny_model.h, placed through the real path
 * (tests/support/kernel_rig.c: weight image -> CONFIGURE -> LOAD).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "kernel_rig.h"
#include "tiny_model.h"
#include "tsr_emu.h"
#include "tsr_half.h"
#include "tsr_ops.h"

/* ------------------------------------------------------------------------ */
/* Meshes and checks                                                          */

/* 1, 4, 16 and 64 PEs on 1, 2 and 4 mesh columns, and 6 PEs as 3 x 2 (mesh
 * rows not a power of two). */
static const tm_mesh MESHES[] = { { 1, 1 },  { 4, 1 },  { 4, 2 },  { 4, 4 },  { 6, 2 },  { 16, 1 },
                                  { 16, 2 }, { 16, 4 }, { 64, 1 }, { 64, 2 }, { 64, 4 } };
#define N_MESHES (sizeof MESHES / sizeof MESHES[0])

static int profile_allows(tm_mesh m)
{
    return m.pes <= TSR_MAX_PES && m.cols <= TSR_MAX_MESH_COLS &&
           m.pes / m.cols <= TSR_MAX_MESH_ROWS;
}

/* Cycles charged to region rg so far. */
static uint64_t charged(const tsr_kstate *st, int rg) { return st->cnt.cyc[rg]; }

/* The controller's vectors (tsr_kstate.cv): the residual stream x, the
 * GEMV input xn, q | k | v. */
static float *cv_x(tsr_kstate *st) { return st->cv[0] + TSR_CV_X; }
static float *cv_xn(tsr_kstate *st) { return st->cv[0] + TSR_CV_XN; }
static float *cv_qkv(tsr_kstate *st) { return st->cv[0] + TSR_CV_QKV; }

/* tsr_mesh_input of x (n,) with norm weights w (NULL: ones) and scale ss:
 * x goes into the residual stream, w into norm row 0 for the call (the
 * model's row restored after), so xn = w * (ss * x); with w NULL and ss
 * 1, xn = 1 * (1 * x) = x exactly. */
static void input_of(tsr_kstate *st, const float *x, uint32_t n, const float *w, float ss)
{
    static float keep[TSR_PAD32(TSR_MAX_DIM)];
    memcpy(keep, st->rms[0], sizeof keep);
    memcpy(cv_x(st), x, n * sizeof *x);
    for (uint32_t i = 0; i < n; i++) st->rms[0][i] = w ? w[i] : 1.0f;
    tsr_mesh_input(st, 0, n, 0, w ? ss : 1.0f, 0);
    memcpy(st->rms[0], keep, sizeof keep);
}
static void input_raw(tsr_kstate *st, const float *x, uint32_t n) { input_of(st, x, n, NULL, 1.0f); }

/* tsr_mesh_gather of item 0's outputs of mat into y (d,): through q | k |
 * v for TSR_GATHER_QKV (where the attention PEs' latch reads it), xn for
 * TSR_GATHER_INPUT, x for TSR_GATHER_ADD (y's values first), else the
 * logits. */
static void gather_to(tsr_kstate *st, uint32_t mat, float *y, uint32_t flags, uint32_t pos)
{
    uint32_t d, n, pair;
    tsr_lay_mat_shape(&st->cfg, mat, &d, &n, &pair);
    uint32_t yw = flags & TSR_GATHER_QKV ? TSR_CVW_QKV : flags & TSR_GATHER_INPUT ? TSR_CVW_XN
                                                                                 : TSR_CVW_X;
    if (!(flags & (TSR_GATHER_QKV | TSR_GATHER_INPUT | TSR_GATHER_ADD))) flags |= TSR_GATHER_LOGITS;
    float *v = flags & TSR_GATHER_LOGITS ? st->logits[0] : st->cv[0] + yw * TSR_VEC;
    if (flags & TSR_GATHER_ADD) memcpy(v, y, d * sizeof *y);
    tsr_mesh_gather(st, mat, 0, yw, flags, pos);
    memcpy(y, v, d * sizeof *y);
}

/* Bit-for-bit equality of two float vectors, with the first difference. */
static void assert_bits_equal(const float *got, const float *want, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            print_error("%s[%d]: %.9g, want %.9g\n", what, i, got[i], want[i]);
            fail();
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Ops: reductions, RMSNorm                                                   */

/* The documented order of tsr_reduce_sum over S partial sums: partial k
 * adds x[k], x[k + S], ... in order, then partial k += partial k + half for
 * half = S/2, ..., 1.  S = 1 is run.c's ((x0 + x1) + x2) + ... */
static float ref_sum_lanes(const float *x, int n, int S, int square)
{
    float part[TSR_SUM_LANES] = { 0 };
    for (int i = 0; i < n; i++) part[i % S] += square ? x[i] * x[i] : x[i];
    for (int half = S / 2; half >= 1; half /= 2)
        for (int k = 0; k < half; k++) part[k] += part[k + half];
    return part[0];
}

static void reduce_sum_in_runc_order(void **state)
{
    (void)state;
    static float x[1000];
    /* magnitudes that make the order visible: a big value swallows small
     * ones that a pairwise or reversed order would keep */
    for (int i = 0; i < 1000; i++) x[i] = tm_rand() * (i % 37 == 0 ? 3e6f : 1.0f) + 0.25f;
    float fwd = 0.0f, rev = 0.0f;
    for (int i = 0; i < 1000; i++) fwd += x[i];
    for (int i = 999; i >= 0; i--) rev += x[i];
    assert_true(fwd != rev);   /* the data tells orders apart */

    static const int ns[] = { 1, 2, 7, 31, 1000 };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        float s = tsr_reduce_sum(x, (uint32_t)n), ss = tsr_reduce_sumsq(x, (uint32_t)n);
        float want = ref_sum_lanes(x, n, TSR_SUM_LANES, 0);
        float want_sq = ref_sum_lanes(x, n, TSR_SUM_LANES, 1);
        assert_memory_equal(&s, &want, sizeof s);
        assert_memory_equal(&ss, &want_sq, sizeof ss);
#if TSR_SUM_LANES == 1
        float runc = 0.0f, runc_sq = 0.0f;   /* run.c: rmsnorm's ss, softmax's sum */
        for (int j = 0; j < n; j++) {
            runc += x[j];
            runc_sq += x[j] * x[j];
        }
        assert_memory_equal(&s, &runc, sizeof s);
        assert_memory_equal(&ss, &runc_sq, sizeof ss);
#endif
    }
}

/* tsr_rms_scale is run.c rmsnorm's 1 / sqrtf(ss / n + eps), bit for bit,
 * and charges NORM what tsr_cy_norm_s says. */
static void rms_scale_in_runc_order(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = tm_configured(fx, (tm_mesh){ 1, 1 }, 0, 32, 0);
    float x[HID];
    for (int j = 0; j < HID; j++) x[j] = 3.0f * tm_rand();
    static const int ns[] = { DIM, HID, 1 };
    uint64_t prev = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        float ss = 0.0f;   /* run.c rmsnorm() */
        for (int j = 0; j < n; j++) ss += x[j] * x[j];
        ss /= n;
        ss += 1e-5f;
        ss = 1.0f / sqrtf(ss);
        uint64_t before = charged(st, TSR_RG_NORM);
        memcpy(cv_x(st), x, (size_t)n * sizeof *x);
        float got = tsr_rms_scale(st, 0, (uint32_t)n);
        assert_memory_equal(&got, &ss, sizeof got);
        uint64_t cy = charged(st, TSR_RG_NORM) - before;
        assert_int_equal(cy, tsr_cy_norm_s((uint32_t)n, TSR_SUM_LANES, 0));
        assert_true(cy > 0);
        if (k) assert_true(cy != prev);   /* the charge follows n */
        prev = cy;
    }
    rig_state_free(st);
    tm_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Ops: softmax, SwiGLU, RoPE                                                 */

static void runc_softmax(float *x, int n)
{
    float max_val = x[0];
    for (int i = 1; i < n; i++) if (x[i] > max_val) max_val = x[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max_val);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

static void softmax_matches_runc(void **state)
{
    (void)state;
    static float x[300], want[300];
    static const int ns[] = { 1, 2, 7, 300 };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        int n = ns[k];
        for (int i = 0; i < n; i++) want[i] = x[i] = 10.0f * tm_rand();
        if (n > 3) x[3] = want[3] = 90.0f;   /* exp would overflow without the max */
        tsr_softmax(x, (uint32_t)n);
        runc_softmax(want, n);
        assert_bits_equal(x, want, n, "softmax");
        double sum = 0;
        for (int i = 0; i < n; i++) sum += x[i];
        assert_float_equal(sum, 1.0, 1e-5);
        if (n == 1) assert_float_equal(x[0], 1.0f, 0.0f);
    }
}

static void swiglu_matches_runc(void **state)
{
    (void)state;
    float hb[200], hb2[200], want[200];
    for (int i = 0; i < 200; i++) {
        hb[i] = 8.0f * tm_rand();
        hb2[i] = 2.0f * tm_rand();
    }
    hb[0] = -100.0f;   /* expf(100) overflows to inf: silu is -0 */
    hb[1] = 100.0f;
    for (int i = 0; i < 200; i++) {   /* run.c forward(), the FFN's SwiGLU */
        float val = hb[i];
        val *= (1.0f / (1.0f + expf(-val)));
        val *= hb2[i];
        want[i] = val;
    }
    tsr_swiglu(hb, hb2, 200);
    assert_bits_equal(hb, want, 200, "swiglu");
    assert_float_equal(hb[1], 100.0f * hb2[1], 0.0f);
}

/* RoPE, which the QKV gather applies on the way in (TSR_GATHER_QKV), at
 * pos with this token's angles (tsr_rope_angles), against run.c's loop on
 * the plain gather's q | k, with the model's theta; v is left alone. */
static void rope_matches_runc(void **state)
{
    (void)state;
    static const float thetas[] = { 10000.0f, 500000.0f };
    for (int th = 0; th < 2; th++) {
        tm_model *fx = tm_new(1);
        fx->ck.cfg.rope_theta = thetas[th];
        tsr_kstate *st = tm_place(fx, (tm_mesh){ 4, 1 }, 0, 32, 0);
        uint32_t mat = TSR_MAT_LAYER(0, TSR_W_QKV);
        static const uint32_t positions[] = { 0, 1, 7, SEQ - 1, 3000 };
        for (size_t k = 0; k < sizeof positions / sizeof positions[0]; k++) {
            uint32_t pos = positions[k];
            float x[DIM], want[QKVD];
            for (int i = 0; i < DIM; i++) x[i] = tm_rand();
            input_raw(st, x, DIM);
            tsr_mesh_gemv(st, mat, 1, 0);
            gather_to(st, mat, want, 0, 0);   /* q | k | v as they come */
            float *q = want, *kk = want + DIM;
            for (int i = 0; i < DIM; i += 2) {   /* run.c forward(), RoPE */
                int head_dim = i % HS;
                float freq = 1.0f / powf(thetas[th], head_dim / (float)HS);
                float val = pos * freq;
                float fcr = cosf(val);
                float fci = sinf(val);
                int rotn = i < KVD ? 2 : 1;
                for (int v = 0; v < rotn; v++) {
                    float *vec = v == 0 ? q : kk;
                    float v0 = vec[i];
                    float v1 = vec[i + 1];
                    vec[i] = v0 * fcr - v1 * fci;
                    vec[i + 1] = v0 * fci + v1 * fcr;
                }
            }
            uint64_t r0 = charged(st, TSR_RG_ROPE), g0 = charged(st, TSR_RG_GATHER);
            tsr_rope_angles(st, 0, pos);
            assert_int_equal(charged(st, TSR_RG_ROPE) - r0, tsr_cy_rope_angles(HS));
            tsr_mesh_gather(st, mat, 0, TSR_CVW_QKV, TSR_GATHER_QKV, pos);
            assert_int_equal(charged(st, TSR_RG_GATHER) - g0, tsr_cy_gather_vec(QKVD));
            assert_bits_equal(cv_qkv(st), want, QKVD, "rope (v unrotated)");
            /* and the attention PEs latched the rotated values */
            uint32_t h0, q0, nh = tsr_lay_kv_heads(&st->cfg, 0, &h0, &q0);
            assert_true(nh > 0);
            assert_bits_equal(&st->qkvw[0][0][0] + h0 * KVMUL * HS, cv_qkv(st) + h0 * KVMUL * HS,
                              nh * KVMUL * HS, "q latched");
        }
        /* the angle of pair 1 at position 1 is theta^(-2/8): a rotation that
         * must actually happen */
        tsr_rope_angles(st, 0, 1);
        assert_float_equal(st->rope_cos[0][1], cos(pow(thetas[th], -2.0 / HS)), 1e-6);
        assert_float_equal(st->rope_sin[0][1], sin(pow(thetas[th], -2.0 / HS)), 1e-6);
        rig_state_free(st);
        tm_free(fx);
    }
}

/* ------------------------------------------------------------------------ */
/* Ops: the Q8_0 group rule                                                   */

/* runq.c quantize(): per group scale = max|x| / 127 and q = (int8_t)
 * round(x / scale) (round(): half away from zero), with tessera's two
 * extensions of it: the last group may be short, and an all-zero group has
 * scale 0 and q 0 (runq.c would divide by zero). */
static void runq_quantize(const float *x, int n, int G, int8_t *q, float *s)
{
    for (int group = 0; group * G < n; group++) {
        int len = n - group * G < G ? n - group * G : G;
        float wmax = 0.0;
        for (int i = 0; i < len; i++) {
            float val = fabs(x[group * G + i]);
            if (val > wmax) wmax = val;
        }
        float scale = wmax / 127.0f;
        s[group] = scale;
        for (int i = 0; i < len; i++) {
            float quant_value = scale != 0.0f ? x[group * G + i] / scale : 0.0f;
            q[group * G + i] = (int8_t)round(quant_value);
        }
    }
}

/* A vector of n with, in every group of G, the ties the rounding rule
 * decides: the group's max is 127 (scale 1 exactly), so x / scale = x. */
static void ties_vector(float *x, int n, int G)
{
    static const float ties[] = { 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -126.5f, 1.4999999f, 3.5f };
    for (int i = 0; i < n; i++) x[i] = 60.0f * tm_rand();
    for (int g0 = 0; g0 < n; g0 += G) {
        x[g0] = (g0 / G) % 2 ? -127.0f : 127.0f;
        for (int k = 1; k < G && g0 + k < n && k <= 8; k++) x[g0 + k] = ties[k - 1];
    }
    if (n > 2 * G)   /* one all-zero group */
        for (int i = G; i < 2 * G; i++) x[i] = 0.0f;
}

static void quantize_matches_runq(void **state)
{
    (void)state;
    enum { N = HID };   /* 136: a short last group for every G below */
    static const int groups[] = { 4, 8, 16, 32, 64, 128, 256 };
    for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
        int G = groups[k], ng = (N + G - 1) / G;
        float x[N], s[N], want_s[N];
        int8_t q[N + 256], want_q[N + 256];
        ties_vector(x, N, G);
        memset(q, 0x55, sizeof q);
        memset(want_q, 0, sizeof want_q);
        runq_quantize(x, N, G, want_q, want_s);
        tsr_quantize(x, N, (uint32_t)G, q, s);
        assert_memory_equal(q, want_q, (size_t)ng * G);   /* zeros past N included */
        assert_bits_equal(s, want_s, ng, "scale");
        /* the rule, spelled out: half away from zero, scale max/127 */
        if (G >= 8) {
            assert_float_equal(s[0], 1.0f, 0.0f);
            assert_int_equal(q[1], 3);
            assert_int_equal(q[2], -3);
            assert_int_equal(q[3], 1);
            assert_int_equal(q[4], -1);
            assert_int_equal(q[5], 127);
            assert_int_equal(q[6], -127);
            assert_int_equal(q[7], 1);
        }
        if (ng > 2) {
            assert_float_equal(s[1], 0.0f, 0.0f);
            for (int i = G; i < 2 * G; i++) assert_int_equal(q[i], 0);
        }
    }
}

/* tsr_round_q8 is roundf for every float up to 2^31 - 128 in magnitude (a
 * stride through them, and both neighbours of every half up to 200: a
 * group whose max is subnormal gives values up to about 190), clamps
 * beyond, and gives 0 for NaN, so the quantizer has no undefined
 * conversion when an activation overflowed to inf (found by a checkpoint
 * with 3e38 weights under UBSan).  A group holding inf gets an inf scale
 * and zeros. */
static void round_q8_is_roundf(void **state)
{
    (void)state;
    for (uint32_t b = 0; b <= 0x4EFFFFFFu; b += 61u) {   /* 0 .. 2147483520.0f */
        float v;
        memcpy(&v, &b, sizeof v);
        assert_int_equal(tsr_round_q8(v), (int32_t)roundf(v));
        assert_int_equal(tsr_round_q8(-v), (int32_t)roundf(-v));
    }
    for (int n = 0; n < 200; n++) {
        float h = (float)n + 0.5f, lo = nextafterf(h, 0.0f), hi = nextafterf(h, 300.0f);
        assert_int_equal(tsr_round_q8(h), n + 1);
        assert_int_equal(tsr_round_q8(lo), n);
        assert_int_equal(tsr_round_q8(hi), n + 1);
        assert_int_equal(tsr_round_q8(-h), -(n + 1));
        assert_int_equal(tsr_round_q8(-lo), -n);
    }
    const float big[] = { 2147483648.0f, 1e30f, FLT_MAX, INFINITY };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        assert_int_equal(tsr_round_q8(big[i]), 2147483520);
        assert_int_equal(tsr_round_q8(-big[i]), -2147483520);
    }
    uint32_t nans[] = { 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu };
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        float v;
        memcpy(&v, &nans[i], sizeof v);
        assert_int_equal(tsr_round_q8(v), 0);
    }
    float x[64], sc[2];
    int8_t q[64];
    for (int i = 0; i < 64; i++) x[i] = (float)(i - 20);
    x[5] = INFINITY;   /* group 0 overflowed; group 1 is finite */
    tsr_quantize(x, 64, 32u, q, sc);
    assert_true(isinf(sc[0]));
    for (int i = 0; i < 32; i++) assert_int_equal(q[i], 0);
    assert_float_equal(sc[1], 43.0f / 127.0f, 0.0f);
    assert_int_equal(q[63], 127);
}

/* The emulator's vectorized quantizer (emu/quant.c) writes the scalar
 * loop's bytes: ties either side of every half, values past the clamp,
 * infinities and NaNs, a subnormal scale whose values wrap past 127, and
 * every length up to 40 (the vector tail). */
static void quantize_rows_bit_identical(void **state)
{
    (void)state;
    enum { N = 40 };
    float v[N];
    int8_t got[N + 1], want[N];
    uint64_t r = 777;
    static const float scales[] = { 1.0f, 0.0625f, 3.0f / 127.0f, 1e-3f, 7.1e-39f, 1e-45f, 1e30f };
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
        float sc = scales[k];
        for (int rep = 0; rep < 200; rep++) {
            for (int i = 0; i < N; i++) {
                r = r * 6364136223846793005ull + 1442695040888963407ull;
                uint32_t u = (uint32_t)(r >> 32);
                float h = (float)(int)(u % 301u) - 150.0f + 0.5f;   /* a half, in units of sc */
                switch (u >> 29) {
                case 0: v[i] = h * sc; break;
                case 1: v[i] = nextafterf(h * sc, 0.0f); break;
                case 2: v[i] = nextafterf(h * sc, 1e38f); break;
                case 3: v[i] = (float)(int32_t)u * 1e-7f; break;
                case 4: v[i] = (u & 1u ? 1.0f : -1.0f) * 3e38f; break;
                case 5: v[i] = (u & 1u) ? INFINITY : -INFINITY; break;
                case 6: v[i] = (u & 1u) ? NAN : -NAN; break;
                default: memcpy(&v[i], &u, sizeof u); break;   /* any bits */
                }
            }
            uint32_t n = rep < N ? (uint32_t)rep + 1u : N;   /* every length, then N */
            for (uint32_t j = 0; j < n; j++) want[j] = (int8_t)tsr_round_q8(v[j] / sc);
            /* the widest path, the AVX2 one, the scalar loop */
            for (int lim = TSR_EMU_VEC_AVX512; lim >= TSR_EMU_VEC_NONE; lim--) {
                tsr_emu_vec_limit = lim;
                memset(got, 0x5A, sizeof got);
                tsr_emu_quantize_q8(v, sc, got, n);
                assert_memory_equal(got, want, n);
                assert_int_equal(got[n], 0x5A);   /* nothing past n */
            }
            tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
        }
    }
}

/* The mesh's input path (tsr_mesh_input: TSR_LANES-wide chunks, a
 * segmented max tree for G < TSR_LANES) gives every PE the same int8
 * words and scales as runq.c's quantize, and xn = w * (ss * x) as run.c's
 * rmsnorm output; F32 mode copies and zero pads. */
static void mesh_input_matches_runq(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    static const int groups[] = { 4, 8, 16, 32, 64, 128, 256 };
    for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
        int G = groups[k], ng = (HID + G - 1) / G, P = 4;
        tsr_kstate *st = tm_configured(fx, (tm_mesh){ P, 2 }, 0, G, 0);
        float x[HID], w[HID], xn[HID], s[HID];
        int8_t q[HID + 256];
        ties_vector(x, HID, G);
        for (int i = 0; i < HID; i++) w[i] = 1.0f + 0.5f * tm_rand();
        /* plain input (w NULL): quantized as is */
        memset(q, 0, sizeof q);
        runq_quantize(x, HID, G, q, s);
        uint64_t before = charged(st, TSR_RG_INPUT);
        input_raw(st, x, HID);
        assert_int_equal(charged(st, TSR_RG_INPUT) - before, tsr_cy_input(HID, (uint32_t)G, 1));
        for (int p = 0; p < P; p++) {   /* the copy each PE's GEMV reads */
            assert_memory_equal(&st->xq[TSR_BCAST_SRC(p)][0][0][0], q, (size_t)ng * G);
            assert_bits_equal(st->xs[TSR_BCAST_SRC(p)][0], s, ng, "xs");
        }
        assert_bits_equal(cv_xn(st), x, HID, "xn");
        /* normalised input: xn = w * (ss * x), then quantized */
        float ss = 0.37f;
        for (int i = 0; i < HID; i++) xn[i] = w[i] * (ss * x[i]);
        memset(q, 0, sizeof q);
        runq_quantize(xn, HID, G, q, s);
        input_of(st, x, HID, w, ss);
        assert_bits_equal(cv_xn(st), xn, HID, "xn");
        for (int p = 0; p < P; p++) {   /* the copy each PE's GEMV reads */
            assert_memory_equal(&st->xq[TSR_BCAST_SRC(p)][0][0][0], q, (size_t)ng * G);
            assert_bits_equal(st->xs[TSR_BCAST_SRC(p)][0], s, ng, "xs");
        }
        rig_state_free(st);
    }
#if TSR_WITH_F32
    tsr_kstate *st = tm_configured(fx, (tm_mesh){ 4, 1 }, 1, 32, 0);
    float x[HID], pad[160] = { 0 };
    for (int i = 0; i < HID; i++) pad[i] = x[i] = tm_rand();
    for (int p = 0; p < 4; p++) st->xf[p][0][HID] = 9.0f;   /* must be padded over */
    input_raw(st, x, HID);
    for (int p = 0; p < 4; p++) assert_bits_equal(st->xf[TSR_BCAST_SRC(p)][0], pad, 160, "xf");
    rig_state_free(st);
#endif
    tm_free(fx);
}

static void argmax_lowest_index_wins(void **state)
{
    (void)state;
    float v[9] = { 1.0f, 5.0f, -2.0f, 5.0f, 0.0f, 5.0f, 4.9f, -INFINITY, 5.0f };
    assert_int_equal(tsr_argmax(v, 9), 1);
    assert_int_equal(tsr_argmax(v, 1), 0);
    v[8] = 5.5f;
    assert_int_equal(tsr_argmax(v, 9), 8);
    float flat[40];
    for (int i = 0; i < 40; i++) flat[i] = -3.0f;
    assert_int_equal(tsr_argmax(flat, 40), 0);
}

/* ------------------------------------------------------------------------ */
/* Mesh GEMV                                                                  */

/* Row i of W times the input over mesh column c of C: the groups
 * [c*ng/C, (c+1)*ng/C) (tsr_layout.h), from 0, in runq.c's per-row order
 * (Q8: the int32 group sum, times both scales, groups ascending) or run.c's
 * (F32: columns ascending).  *mag gets the sum of the terms' magnitudes. */
static float ref_col(const golden_mat *w, int i, int c, int C, int G, const int8_t *xq,
                     const float *xs, const float *x, double *mag)
{
    int n = w->cols, ng = (n + G - 1) / G, g0 = c * ng / C, g1 = (c + 1) * ng / C;
    size_t r = (size_t)i * n;
    float val = 0.0f;
    for (int g = g0; g < g1; g++) {
        int j0 = g * G, j1 = j0 + G < n ? j0 + G : n;
        if (w->q) {
            int32_t ival = 0;
            for (int j = j0; j < j1; j++) ival += (int32_t)w->q[r + j] * (int32_t)xq[j];
            float term = (float)ival * w->s[(size_t)i * w->n_groups + g] * xs[g];
            val += term;
            if (mag) *mag += fabs(term);
        } else {
            for (int j = j0; j < j1; j++) {
                float term = w->f[r + j] * x[j];
                val += term;
                if (mag) *mag += fabs(term);
            }
        }
    }
    return val;
}

/* The kernel's order on C columns: each column's sum, then the column
 * adder tree (level s: column c, c % 2s == 0, adds column c + s). */
static float ref_tree(const golden_mat *w, int i, int C, int G, const int8_t *xq, const float *xs,
                      const float *x)
{
    float part[TSR_MAX_MESH_COLS];
    for (int c = 0; c < C; c++) part[c] = ref_col(w, i, c, C, G, xq, xs, x, NULL);
    for (int s = 1; s < C; s *= 2)
        for (int c = 0; c + s < C; c += 2 * s) part[c] += part[c + s];
    return part[0];
}

/* The golden matrix and its row behind row i of kernel matrix mat of
 * layer 0 / the classifier (QKV stacks wq, wk, wv; W13 half h). */
static const golden_mat *mat_row(const golden *g, int k, int i, int h, int *r)
{
    const golden_layer *ly = &g->layers[0];
    *r = i;
    switch (k) {
    case TSR_W_QKV:
        if (i < DIM) return &ly->wq;
        if (i < DIM + KVD) { *r = i - DIM; return &ly->wk; }
        *r = i - DIM - KVD;
        return &ly->wv;
    case TSR_W_O:  return &ly->wo;
    case TSR_W_13: return h ? &ly->w3 : &ly->w1;
    case TSR_W_2:  return &ly->w2;
    default:       return &g->wcls;
    }
}

/* One GEMV of matrix k (TSR_W_*, or TSR_W_COUNT for the classifier) on st
 * against the references: bit for bit in the kernel's column-tree order;
 * on one column that is runq.c's / run.c's order, checked against golden's
 * own matmul too; on more columns, within the reassociation bound of
 * runq.c's sequential sum: |tree - seq| <= (terms - 1) * FLT_EPSILON *
 * sum |term| (each of the two sums is within (terms - 1) u sum|term| of the
 * exact one, u = FLT_EPSILON / 2; the terms themselves are rounded alike). */
static void check_gemv(tsr_kstate *st, const golden *g, int k, int C, int G, int q8)
{
    int d, n;
    uint32_t mat;
    switch (k) {
    case TSR_W_QKV: d = QKVD; n = DIM; break;
    case TSR_W_O:   d = DIM;  n = DIM; break;
    case TSR_W_13:  d = HID;  n = DIM; break;
    case TSR_W_2:   d = DIM;  n = HID; break;
    default:        d = VOCAB; n = DIM; break;
    }
    mat = k == TSR_W_COUNT ? tsr_lay_mat_wcls(&st->cfg) : TSR_MAT_LAYER(0, k);
    C = (int)tsr_lay_mat_cols(&st->cfg, mat);   /* each matrix its own columns (tsr_layout.h) */
    float x[HID], xs[HID], y[VOCAB + HID];
    int8_t xq[HID + 256];
    for (int j = 0; j < n; j++) x[j] = tm_rand();
    if (q8) golden_quantize(x, n, G, xq, xs);
    input_raw(st, x, (uint32_t)n);
    tsr_mesh_gemv(st, mat, 1, 0);
    gather_to(st, mat, y, 0, 0);
    for (int i = 0; i < d; i++) {
        int r;
        const golden_mat *w = mat_row(g, k, i, 0, &r);
        float want = ref_tree(w, r, C, G, xq, xs, x);
        if (k == TSR_W_13) {   /* SwiGLU on the PEs, after the column tree */
            float b = ref_tree(mat_row(g, k, i, 1, &r), r, C, G, xq, xs, x);
            want *= (1.0f / (1.0f + expf(-want)));
            want *= b;
        }
        if (memcmp(&y[i], &want, sizeof want) != 0) {
            print_error("matrix %d row %d on %d columns: %.9g, want %.9g\n", k, i, C, y[i], want);
            fail();
        }
        if (k == TSR_W_13) continue;
        double mag = 0;
        float seq = ref_col(w, r, 0, 1, G, xq, xs, x, &mag);
        int terms = q8 ? (n + G - 1) / G : n;
        if (C == 1) assert_memory_equal(&y[i], &seq, sizeof seq);
        else assert_true(fabs((double)y[i] - seq) <= (terms - 1) * FLT_EPSILON * mag);
    }
    if (C == 1 && q8 && k != TSR_W_13 && k != TSR_W_QKV) {
        float want[VOCAB];   /* golden's own per-row Q8 matmul, independent code */
        golden_gemv_q8(mat_row(g, k, 0, 0, &(int){ 0 }), xq, xs, want);
        assert_bits_equal(y, want, d, "golden_gemv_q8");
    }
}

/* Q8_0 at group 8 (several groups a lane word), 32 (one) and 64 (two words
 * a group), and F32, on every mesh of MESHES, with the emulator's SIMD
 * rows off and on: every matrix kind of layer 0 and the classifier. */
static void mesh_gemv_matches_reference(void **state)
{
    (void)state;
    tm_model *fx = tm_new(0);
    static const int modes[][2] = { { 1, 8 }, { 1, 32 }, { 1, 64 }, { 0, 32 } };   /* q8, G */
    for (size_t md = 0; md < sizeof modes / sizeof modes[0]; md++) {
        int q8 = modes[md][0], G = modes[md][1];
        if (!q8 && !TSR_WITH_F32) continue;
        golden g;
        assert_int_equal(golden_build(&g, &fx->ck, q8 ? GOLDEN_Q8 : GOLDEN_F32, G, SEQ), TSR_OK);
        for (size_t m = 0; m < N_MESHES; m++) {
            if (!profile_allows(MESHES[m])) continue;
            tsr_kstate *st = tm_place(fx, MESHES[m], !q8, G, 0);
            for (int simd = 0; simd <= tsr_emu_simd_available(); simd++) {
                st->simd = (uint32_t)simd;
                for (int k = 0; k <= TSR_W_COUNT; k++) check_gemv(st, &g, k, MESHES[m].cols, G, q8);
            }
            rig_state_free(st);
        }
        golden_free(&g);
    }
    tm_free(fx);
}

/* The embedding row, gathered from the PEs of its row block, is the
 * file's row (F32) or its Q8_0 dequantization q * scale, on every mesh. */
static void mesh_embed_gathers_the_row(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    static const uint32_t tokens[] = { 0, 1, 15, 16, 47, 64, 95, VOCAB - 1 };
    for (int G = 16; G <= 32; G *= 2) {   /* 32: a column without groups on 4 columns */
        golden g;
        assert_int_equal(golden_build(&g, &fx->ck, GOLDEN_Q8, G, SEQ), TSR_OK);
        for (size_t m = 0; m < N_MESHES; m++) {
            for (int q8 = 0; q8 <= 1; q8++) {
                if (!profile_allows(MESHES[m]) || (!q8 && !TSR_WITH_F32)) continue;
                tsr_kstate *st = tm_place(fx, MESHES[m], !q8, G, 0);
                for (size_t k = 0; k < sizeof tokens / sizeof tokens[0]; k++) {
                    uint32_t tok = tokens[k];
                    float x[DIM], want[DIM];
                    for (int j = 0; j < DIM; j++)
                        want[j] = q8 ? (float)g.tok_emb.q[tok * DIM + j] *
                                           g.tok_emb.s[tok * g.tok_emb.n_groups + j / G]
                                     : fx->emb[tok * DIM + j];
                    uint64_t before = charged(st, TSR_RG_EMBED);
                    tsr_mesh_embed(st, 0, tok);
                    memcpy(x, cv_x(st), sizeof x);
                    assert_bits_equal(x, want, DIM, "embedding");
                    assert_true(charged(st, TSR_RG_EMBED) > before);
                }
                rig_state_free(st);
            }
        }
        golden_free(&g);
    }
    tm_free(fx);
}

/* Greedy on the mesh (each root's best row, then the tree over the roots)
 * is tsr_argmax of the gathered logits: the largest, the lowest row on
 * ties, also when the tied rows sit in one PE's lanes, in different words
 * of one lane, or on different mesh rows. */
static void mesh_argmax_lowest_index_wins(void **state)
{
    (void)state;
    static const int tied[] = { 19, 97, 4, 50, 3 };   /* 3 and 19: lane 3 of words 0, 1 */
    for (int variant = 0; variant < 2; variant++) {
        tm_model *fx = tm_new(1);
        float u[DIM];
        for (int j = 0; j < DIM; j++) u[j] = tm_rand();
        for (int k = 0; k < 5; k++)   /* identical rows: identical logits on any mesh */
            for (int j = 0; j < DIM; j++) fx->emb[tied[k] * DIM + j] = u[j];
        if (variant)   /* row 97 a little larger: now it wins */
            for (int j = 0; j < DIM; j++) fx->emb[97 * DIM + j] = 1.01f * u[j];
        int want = variant ? 97 : 3;
        for (size_t m = 0; m < N_MESHES; m++) {
            if (!profile_allows(MESHES[m])) continue;
            tsr_kstate *st = tm_place(fx, MESHES[m], 0, 32, 0);
            uint32_t cls = tsr_lay_mat_wcls(&st->cfg);
            float logits[VOCAB];
            uint64_t before = charged(st, TSR_RG_ARGMAX);
            input_raw(st, u, DIM);
            tsr_mesh_gemv(st, cls, 1, TSR_JOB_ARGMAX);
            int32_t best = tsr_mesh_best(st, cls, 0);
            assert_true(charged(st, TSR_RG_ARGMAX) > before);
            gather_to(st, cls, logits, 0, 0);
            assert_memory_equal(&logits[3], &logits[50], sizeof(float));   /* a real tie */
            assert_memory_equal(&logits[3], &logits[19], sizeof(float));
            assert_int_equal(best, want);
            assert_int_equal(best, (int32_t)tsr_argmax(logits, VOCAB));
            rig_state_free(st);
        }
        tm_free(fx);
    }
}

/* The SIMD rows' tests' inputs: n int8 values x in the quantizer's range
 * -127..127 (both limits at x[0], x[1]; xf, when not NULL, x / 32), nws
 * weight scales ws and nxs input scales xs; r the xorshift state. */
static void simd_inputs(int8_t *x, float *xf, uint32_t n, float *ws, uint32_t nws, float *xs,
                        uint32_t nxs, uint64_t *r)
{
    for (uint32_t j = 0; j < n; j++) {
        *r ^= *r << 13; *r ^= *r >> 7; *r ^= *r << 17;
        x[j] = (int8_t)((int)(*r % 255u) - 127);
    }
    x[0] = 127;
    x[1] = -127;
    for (uint32_t j = 0; xf && j < n; j++) xf[j] = (float)x[j] / 32.0f;
    for (uint32_t i = 0; i < nws; i++) ws[i] = 1e-3f * (float)(1 + i % 97);
    for (uint32_t i = 0; i < nxs; i++) xs[i] = 3e-2f / (float)(1 + i % 13);
}

/* tsr_emu_tile_q8 / tsr_emu_tile_f32 (emu/tile_simd.c) against the
 * layout's per-row loop, bit for bit, on weights the quantizer never
 * makes (-128) and inputs at its limits (-127..127): the tile's full
 * 8-row blocks, entries (block, group, row) of G bytes (tsr_layout.h),
 * for every count of 1 to 9 items and 16 to 64 (one pass an item, and the
 * GEMMs of up to 4 and of up to 16 items a pass where the CPU has AVX-512
 * VNNI; then again kept to an AVX2-only CPU's paths: the AVX2 GEMM of 2 or
 * more items, four a pass and a rest of 1 to 3), on tiles with and without
 * tail rows and with no full block; and, at G = 32 on
 * such a CPU, tsr_emu_tile_q8t on the same tile as transposed units (one
 * item, pairs of items up to 8, GEMMs of up to 16 and the rest; without
 * an xkey, and with one: made, kept, and made again for changed inputs
 * under a new xkey), on a CPU with AMX once through it (9 items or more:
 * pairs of blocks and a single last one, 16 items and a rest) and once
 * without. */
static void simd_rows_bit_identical(void **state)
{
    (void)state;
    if (!tsr_emu_simd_available()) {
        skip();
        return;
    }
    static const uint32_t shapes[][3] = { { 32, 3, 27 }, { 32, 17, 16 }, { 32, 40, 13 },
                                          { 32, 1, 7 },  { 32, 9, 45 },  { 64, 1, 8 },
                                          { 64, 20, 21 } };   /* G, ng, rows */
    /* every batch size 1..9 (the decode batch's 2..8: the AVX2 8-bit GEMM,
     * four items a pass and a rest), then prompt blocks (the 16-bit one) */
    static const uint32_t items[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 20, 21, 25, 64 };
    uint64_t r = 12345;
    /* the CPU's widest paths, then an AVX2-only CPU's (the AVX2 GEMM) */
    for (int lim = TSR_EMU_VEC_AVX512; lim >= TSR_EMU_VEC_AVX2; lim--) {
    tsr_emu_vec_limit = lim;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        for (size_t q = 0; q < sizeof items / sizeof items[0]; q++) {
            uint32_t G = shapes[k][0], ng = shapes[k][1], rows = shapes[k][2], n = ng * G;
            uint32_t nb = rows / 8u, nx = items[q], xst = n + 32u, sst = ng + 3u, pst = rows + 5u;
            int8_t *w = malloc((size_t)rows * n), *x = malloc((size_t)nx * xst);   // layout order
            float *ws = malloc(sizeof(float) * rows * ng), *xs = malloc(sizeof(float) * nx * sst);
            float *got = calloc((size_t)nx * pst, sizeof(float)), *wf = malloc(sizeof(float) * rows * n);
            float *xf = malloc(sizeof(float) * nx * xst), *want = calloc((size_t)nx * pst, sizeof(float));
            assert_non_null(w); assert_non_null(x); assert_non_null(ws); assert_non_null(xs);
            assert_non_null(got); assert_non_null(wf); assert_non_null(xf); assert_non_null(want);
            for (uint32_t i = 0; i < rows * n; i++) {
                r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                w[i] = (int8_t)(r >> 24);
                wf[i] = (float)w[i] / 64.0f;
            }
            w[0] = -128;
            simd_inputs(x, xf, nx * xst, ws, rows * ng, xs, nx * sst, &r);
            int32_t *wc = malloc(sizeof(int32_t) * rows * ng);
            assert_non_null(wc);
            for (uint32_t e = 0; e < rows * ng; e++) wc[e] = tsr_emu_wcorr(w + (size_t)e * G, G);
            assert_int_equal(tsr_emu_tile_q8(w, ws, wc, rows, ng, G, x, xst, xs, sst, nx, got, pst), nb);
            for (uint32_t t = 0; t < nx; t++)
                for (uint32_t b = 0; b < nb; b++)
                    for (uint32_t j = 0; j < 8; j++) {
                        float acc = 0.0f;   /* groups ascending, ((float)isum * ws) * xs */
                        for (uint32_t g = 0; g < ng; g++) {
                            size_t e = ((size_t)b * ng + g) * 8u + j;   /* the entry */
                            int32_t isum = 0;
                            for (uint32_t l = 0; l < G; l++)
                                isum += (int32_t)w[e * G + l] * (int32_t)x[t * xst + g * G + l];
                            acc += (float)isum * ws[e] * xs[t * sst + g];
                        }
                        assert_memory_equal(&got[t * pst + b * 8 + j], &acc, sizeof acc);
                        memcpy(&want[t * pst + b * 8 + j], &acc, sizeof acc);
                    }
            /* the same tile as transposed units (G 32), each full block's
             * unit bytes moved by tsr_emu_tr_byte and XORed with 0x80 */
            /* where the CPU has AMX, once through it (9 or more items)
             * and once without; granted, its first product must have
             * agreed, or AMX would quietly be off */
            assert_int_equal(tsr_emu_amx_available(), tsr_emu_amx_granted());
            for (int amx = tsr_emu_amx_available(); G == 32 && tsr_emu_tr_available() && amx >= 0;
                 amx--) {
                tsr_emu_amx_limit = amx;
                uint8_t *wt = malloc((size_t)rows * n);
                assert_non_null(wt);
                memcpy(wt, w, (size_t)rows * n);
                for (uint32_t un = 0; un < nb * ng; un++)
                    for (uint32_t u = 0; u < 256; u++)
                        wt[un * 256 + tsr_emu_tr_byte(u)] = (uint8_t)w[un * 256 + u] ^ 0x80u;
                memset(got, 0, sizeof(float) * nx * pst);
                assert_int_equal(tsr_emu_tile_q8t(wt, ws, rows, ng, x, xst, xs, sst, nx, got, pst, 0), nb);
                for (uint32_t t = 0; t < nx; t++)
                    assert_memory_equal(&got[t * pst], &want[t * pst], sizeof(float) * nb * 8);
                /* and its plain loop, an item at a time */
                memset(got, 0, sizeof(float) * nx * pst);
                for (uint32_t t = 0; t < nx; t++) {
                    tsr_emu_tile_q8t_plain(wt, ws, nb, ng, x + t * xst, xs + t * sst, got + t * pst);
                    assert_memory_equal(&got[t * pst], &want[t * pst], sizeof(float) * nb * 8);
                }
                /* with an xkey: the same sums when the transposed inputs
                 * are made and when they are kept; then the inputs change
                 * in place under a new xkey, and the sums are the new
                 * inputs' (the plain loop's), not the kept ones' */
                uint64_t key = tsr_emu_next_key();
                for (int pass = 0; pass < 2; pass++) {
                    memset(got, 0, sizeof(float) * nx * pst);
                    assert_int_equal(tsr_emu_tile_q8t(wt, ws, rows, ng, x, xst, xs, sst, nx, got,
                                                      pst, key), nb);
                    for (uint32_t t = 0; t < nx; t++)
                        assert_memory_equal(&got[t * pst], &want[t * pst], sizeof(float) * nb * 8);
                }
                for (uint32_t i = 0; i < nx * xst; i++) x[i] = (int8_t)-x[i];
                memset(got, 0, sizeof(float) * nx * pst);
                assert_int_equal(tsr_emu_tile_q8t(wt, ws, rows, ng, x, xst, xs, sst, nx, got, pst,
                                                  tsr_emu_next_key()), nb);
                float *fresh = calloc((size_t)nx * pst, sizeof(float));
                assert_non_null(fresh);
                for (uint32_t t = 0; t < nx; t++) {
                    tsr_emu_tile_q8t_plain(wt, ws, nb, ng, x + t * xst, xs + t * sst, fresh + t * pst);
                    assert_memory_equal(&got[t * pst], &fresh[t * pst], sizeof(float) * nb * 8);
                }
                free(fresh);
                for (uint32_t i = 0; i < nx * xst; i++) x[i] = (int8_t)-x[i];
                free(wt);
                tsr_emu_amx_limit = 1;
            }
            assert_int_equal(tsr_emu_tile_q8(w, ws, wc, rows, ng, 16, x, xst, xs, sst, nx, got, pst), 0);
            free(wc);
            assert_int_equal(tsr_emu_tile_f32(wf, rows, n, xf, xst, nx, got, pst), nb);
            for (uint32_t t = 0; t < nx; t++)
                for (uint32_t b = 0; b < nb; b++)
                    for (uint32_t j = 0; j < 8; j++) {
                        float acc = 0.0f;   /* values (block, column, row), columns ascending */
                        for (uint32_t col = 0; col < n; col++)
                            acc += wf[((size_t)b * n + col) * 8u + j] * xf[t * xst + col];
                        assert_memory_equal(&got[t * pst + b * 8 + j], &acc, sizeof acc);
                    }
            free(w); free(x); free(ws); free(xs); free(got); free(wf); free(xf); free(want);
        }
    }
    }
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* tsr_emu_tile_q4 (emu/tile_simd.c) against pe_tile_q4's per-row loop,
 * bit for bit: the tile's full 8-row blocks of Q4_0 entries (16 bytes:
 * element i in the low nibble of byte i, i + 16 in the high one, value
 * nibble - 8; every nibble 0..15 occurs), inputs at the quantizer's limits,
 * for every count of 1 to 9 items and 16 to 64 (one pass an item, or
 * GEMMs of up to 16 where the CPU has AVX-512 VNNI, then again with an
 * AVX2-only CPU's paths: the AVX2 GEMM), with LOAD's per-entry sums
 * tsr_emu_wcorr_q4. */
static void simd_q4_rows_bit_identical(void **state)
{
    (void)state;
    if (!tsr_emu_simd_available()) {
        skip();
        return;
    }
    static const uint32_t shapes[][2] = { { 3, 27 }, { 17, 16 }, { 40, 13 }, { 1, 8 },
                                          { 9, 45 } };   /* ng, rows */
    static const uint32_t items[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 20, 21, 64 };
    uint64_t r = 777;
    /* the CPU's widest paths, then an AVX2-only CPU's (the AVX2 GEMM) */
    for (int lim = TSR_EMU_VEC_AVX512; lim >= TSR_EMU_VEC_AVX2; lim--) {
    tsr_emu_vec_limit = lim;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        for (size_t q = 0; q < sizeof items / sizeof items[0]; q++) {
            uint32_t ng = shapes[k][0], rows = shapes[k][1], n = ng * 32u, ne = rows * ng;
            uint32_t nb = rows / 8u, nx = items[q], xst = n + 32u, sst = ng + 3u, pst = rows + 5u;
            int8_t *w4 = malloc((size_t)ne * 16u), *x = malloc((size_t)nx * xst);
            float *ws = malloc(sizeof(float) * ne), *xs = malloc(sizeof(float) * nx * sst);
            float *got = calloc((size_t)nx * pst, sizeof(float));
            int32_t *wc = malloc(sizeof(int32_t) * ne);
            assert_non_null(w4); assert_non_null(x); assert_non_null(ws); assert_non_null(xs);
            assert_non_null(got); assert_non_null(wc);
            for (uint32_t i = 0; i < ne * 16u; i++) {
                r ^= r << 13; r ^= r >> 7; r ^= r << 17;
                w4[i] = (int8_t)(uint8_t)(r >> 24);
            }
            w4[0] = (int8_t)0x0f;   /* 7 and -8 */
            simd_inputs(x, NULL, nx * xst, ws, ne, xs, nx * sst, &r);
            for (uint32_t e = 0; e < ne; e++) wc[e] = tsr_emu_wcorr_q4(w4 + (size_t)e * 16u);
            assert_int_equal(tsr_emu_tile_q4(w4, ws, wc, rows, ng, x, xst, xs, sst, nx, got, pst), nb);
            for (uint32_t t = 0; t < nx; t++)
                for (uint32_t b = 0; b < nb; b++)
                    for (uint32_t j = 0; j < 8; j++) {
                        float acc = 0.0f;   /* groups ascending, ((float)isum * ws) * xs */
                        for (uint32_t g = 0; g < ng; g++) {
                            size_t e = ((size_t)b * ng + g) * 8u + j;   /* the entry */
                            int32_t isum = 0;
                            for (uint32_t l = 0; l < 32u; l++) {
                                uint32_t byte = (uint8_t)w4[e * 16u + l % 16u];
                                int32_t v = (int32_t)((l < 16u ? byte : byte >> 4) & 15u) - 8;
                                isum += v * (int32_t)x[t * xst + g * 32u + l];
                            }
                            acc += (float)isum * ws[e] * xs[t * sst + g];
                        }
                        assert_memory_equal(&got[t * pst + b * 8 + j], &acc, sizeof acc);
                    }
            free(w4); free(x); free(ws); free(xs); free(got); free(wc);
        }
    }
    }
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* ------------------------------------------------------------------------ */
/* Attention                                                                  */

/* run.c's attention for head h at pos over the cache K, V (positions,
 * KVD) -> out (HS,); kv_split Q > 1: the kernel's order instead, position
 * t on place t % Q of the head's group, each place's sums over its
 * positions ascending, then the group trees (place q, q % 2s == 0, adds
 * place q + s). */
static void ref_attention(const float *q, const float (*K)[KVD], const float (*V)[KVD], int h,
                          int pos, int Q, float *out)
{
    float att[SEQ];
    const float *qh = q + h * HS;
    int kvh = h / KVMUL, n = pos + 1;
    for (int t = 0; t <= pos; t++) {
        const float *k = K[t] + kvh * HS;
        float score = 0.0f;
        for (int i = 0; i < HS; i++) score += qh[i] * k[i];
        score /= sqrtf(HS);
        att[t] = score;
    }
    if (Q == 1) {
        runc_softmax(att, n);
        memset(out, 0, HS * sizeof(float));
        for (int t = 0; t <= pos; t++) {
            const float *v = V[t] + kvh * HS;
            float a = att[t];
            for (int i = 0; i < HS; i++) out[i] += a * v[i];
        }
        return;
    }
    float max_val = att[0], sum[16] = { 0 }, o[16][HS];
    for (int t = 1; t < n; t++) if (att[t] > max_val) max_val = att[t];
    for (int t = 0; t < n; t++) {
        att[t] = expf(att[t] - max_val);
        sum[t % Q] += att[t];
    }
    for (int s = 1; s < Q; s *= 2)
        for (int p = 0; p + s < Q; p += 2 * s) sum[p] += sum[p + s];
    memset(o, 0, sizeof o);
    for (int t = 0; t < n; t++) {
        float a = att[t] / sum[0];
        for (int i = 0; i < HS; i++) o[t % Q][i] += a * V[t][kvh * HS + i];
    }
    for (int s = 1; s < Q; s *= 2)
        for (int p = 0; p + s < Q; p += 2 * s)
            for (int i = 0; i < HS; i++) o[p][i] += o[p + s][i];
    memcpy(out, o[0], HS * sizeof(float));
}

/* Slot 0 layer 0 and slot 1 layer 1 advance side by side through SEQ
 * positions, each with its own q, k, v; after every step each head's
 * output is run.c's (kv_split 1: bit for bit; more: bit for bit in the
 * group-tree order, and within 4 n FLT_EPSILON max|v| of run.c's, n =
 * pos + 1: both are convex combinations of the v's, rounded differently
 * in at most n additions of the weights and n of the weighted sums). */
static void attention_matches_runc(void **state)
{
    (void)state;
    const float VMAX = 2.0f;   /* |v| < VMAX */
    tm_model *fx = tm_new(1);
    static const struct { tm_mesh m; int kv_split; } cases[] = {
        { { 1, 1 }, 1 }, { { 4, 1 }, 1 }, { { 16, 2 }, 1 }, { { 64, 1 }, 1 },
        { { 16, 1 }, 2 }, { { 16, 4 }, 2 }, { { 64, 2 }, 4 }, { { 64, 1 }, 8 },
    };
    static float K[2][SEQ][KVD], V[2][SEQ][KVD];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int Q = cases[c].kv_split;
        if (!profile_allows(cases[c].m) || Q > TSR_MAX_KV_SPLIT) continue;
        tsr_kstate *st = tm_configured(fx, cases[c].m, 0, 32, Q);
        assert_int_equal(st->cfg.kv_split, Q);
        for (int pos = 0; pos < SEQ; pos++) {
            for (int s = 0; s < 2; s++) {
                float q[DIM], want[HS];
                float *qkv = cv_qkv(st);
                for (int i = 0; i < DIM; i++) qkv[i] = q[i] = tm_rand();
                for (int i = 0; i < KVD; i++) qkv[DIM + i] = K[s][pos][i] = tm_rand();
                for (int i = 0; i < KVD; i++) qkv[DIM + KVD + i] = V[s][pos][i] = VMAX * tm_rand();
                /* the slot's position as the commands keep it */
                st->pos[s] = pos;
                uint64_t att0 = st->cnt.attended, tree0 = charged(st, TSR_RG_ATT_TREE);
                tsr_emu_latch_qkv(st, 0, (uint32_t)pos);   /* as the QKV gather does */
                tsr_attention(st, 0, (uint32_t)s, (uint32_t)s, (uint32_t)pos);
                assert_int_equal(st->cnt.attended - att0, HEADS * (pos + 1));
                assert_true(Q > 1 ? charged(st, TSR_RG_ATT_TREE) > tree0
                                  : charged(st, TSR_RG_ATT_TREE) == tree0);
                /* where the k and v went (tsr_layout.h): position pos of KV
                 * head h at local index pos / Q on the group's PE pos % Q;
                 * K^T in position tiles, V a row a position */
                for (int h = 0; h < KVH; h++) {
                    enum { L = TSR_ATT_LANES };
                    uint32_t p = st->kv_pe[h] + (uint32_t)pos % (uint32_t)Q, t = (uint32_t)pos / Q;
                    uint32_t slw = st->seq_local / L, hs = HS;
                    uint32_t kb = st->kv_blkw[p] * (uint32_t)(s * st->cfg.n_layers + s) +
                                  st->kv_j[h] * 2u * hs * slw;
                    assert_int_equal(st->cfg.kv_dtype, TSR_KV_F32);
                    for (uint32_t d = 0; d < hs; d++) {
                        assert_float_equal(st->kv[p][kb + (t / L) * hs + d][t % L],
                                           K[s][pos][h * HS + d], 0.0f);
                        assert_float_equal(st->kv[p][kb + hs * slw + t * (hs / L) + d / L][d % L],
                                           V[s][pos][h * HS + d], 0.0f);
                    }
                }
                for (int h = 0; h < HEADS; h++) {
                    ref_attention(q, (const float (*)[KVD])K[s], (const float (*)[KVD])V[s], h,
                                  pos, Q, want);
                    assert_bits_equal(cv_xn(st) + h * HS, want, HS, "head output");
                    if (Q == 1) continue;
                    float runc[HS];
                    ref_attention(q, (const float (*)[KVD])K[s], (const float (*)[KVD])V[s], h,
                                  pos, 1, runc);
                    for (int i = 0; i < HS; i++)
                        assert_true(fabs(cv_xn(st)[h * HS + i] - runc[i]) <=
                                    4.0 * (pos + 1) * FLT_EPSILON * VMAX);
                }
            }
        }
        rig_state_free(st);
    }
    tm_free(fx);
}

/* The emulator's attention multiply-add (emu/att_rows.c) against its
 * definition, pe_att_mac's sums: acc[o % parts][j] = (o < parts ? 0 :
 * itself) + s[o] * kv(o, j), o ascending, with kv(o, j) row o's element j
 * as fp32 (a half decoded by tsr_f32_from_f16, an int8 value converted),
 * for each cache type, one partial (the AVX-512 register sums, masked
 * past nj) and three (the plain loops), over row lengths around the
 * 16-lane registers and the 128-element blocks (rows stored whole, V) and
 * the 8-word blocks (K^T's position tiles: row o's word w at o + w x NO
 * words). */
static void att_rows_bit_identical(void **state)
{
    (void)state;
    enum { NO = 70, STRIDE = 272, ACC = 272, W = TSR_ATT_LANES };
    static float kf[NO * STRIDE], s[NO], want[3 * ACC], got[3 * ACC];
    static uint16_t kh[NO * STRIDE];
    static int8_t kq[NO * STRIDE];
    /* the tiles of the longest rows fit the same arrays */
    assert_true((size_t)(STRIDE / W) * NO * W <= (size_t)NO * STRIDE);
    for (int i = 0; i < NO * STRIDE; i++) {
        kf[i] = tm_rand();
        kh[i] = tsr_f16_from_f32(4.0f * tm_rand());
        kq[i] = (int8_t)(lrintf(127.0f * tm_rand()));
    }
    kh[5] = 0x7E00u;      /* the cache's NaN, in row 0 */
    kh[STRIDE + 3] = 0x0001u;   /* the least subnormal */
    for (int o = 0; o < NO; o++) s[o] = tm_rand();
    static const uint32_t njs[] = { 1, 15, 16, 17, 64, 80, 127, 128, 129, 200, 257 };
    static const uint32_t nos[] = { 1, 2, 64, 70 };
    int checked = 0;
    /* the register sums of AVX-512 and of AVX2 (fp32), and the loops */
    for (int lim = TSR_EMU_VEC_AVX512; lim >= TSR_EMU_VEC_NONE; lim--)
    for (int tiled = 0; tiled < 2; tiled++)
        for (int t = 0; t < 3; t++)
            for (uint32_t parts = 1; parts <= 3; parts += 2)
                for (size_t a = 0; a < sizeof nos / sizeof nos[0]; a++)
                    for (size_t b = 0; b < sizeof njs / sizeof njs[0]; b++) {
                        uint32_t no = nos[a], nj = njs[b];
                        uint32_t stride = tiled ? W : STRIDE, step = tiled ? NO * W : W;
                        for (uint32_t o = 0; o < no; o++)
                            for (uint32_t j = 0; j < nj; j++) {
                                size_t e = (size_t)o * stride + (size_t)(j / W) * step + j % W;
                                float v = t == 0   ? kf[e]
                                          : t == 1 ? tsr_f32_from_f16(kh[e])
                                                   : (float)kq[e];
                                float *w = &want[(o % parts) * ACC + j];
                                *w = (o < parts ? 0.0f : *w) + s[o] * v;
                            }
                        memset(got, 0xff, sizeof got);
                        tsr_emu_vec_limit = lim;
                        if (t == 0) tsr_emu_att_mac(kf, stride, step, s, no, nj, parts, got, ACC);
                        else if (t == 1)
                            tsr_emu_att_mac_f16(kh, stride, step, s, no, nj, parts, got, ACC);
                        else tsr_emu_att_mac_i8(kq, stride, step, s, no, nj, parts, got, ACC);
                        for (uint32_t k = 0; k < parts && k < no; k++) {
                            assert_bits_equal(got + k * ACC, want + k * ACC, (int)nj, "acc");
                            checked++;
                            uint32_t past;   /* nothing written past nj */
                            memcpy(&past, &got[k * ACC + nj], 4);
                            assert_int_equal(past, 0xffffffffu);
                        }
                    }
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
    /* 3 levels x 2 layouts x 3 caches x 11 lengths x (4 row counts a
     * partial, then 1 + 2 + 3 + 3) */
    assert_int_equal(checked, 3 * 2 * 3 * 11 * (4 + 9));
}

/* The emulator's expf over arrays (emu/vexpf.c) against the C library's
 * expf, bit for bit: 1 in 7 of all 2^32 encodings (every sign, exponent
 * and NaN class) through the AVX-512 path, 1 in 11 through the AVX2 one,
 * 8191 at a time (the tails), each on a CPU that has it and required
 * there (glibc 2.36's algorithm: its own check must have found it
 * equal). */
static void expf_bit_identical(void **state)
{
    (void)state;
    enum { CHUNK = 8191 };
    static float x[CHUNK], y[CHUNK];
    static const struct { int level, step; } paths[] = { { TSR_EMU_VEC_AVX512, 7 },
                                                         { TSR_EMU_VEC_AVX2, 11 } };
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        int level = paths[p].level;
        uint32_t step = (uint32_t)paths[p].step;
        if (level == TSR_EMU_VEC_AVX512 ? !tsr_emu_avx512() : !tsr_emu_avx2()) continue;
        tsr_emu_vec_limit = level;
        /* glibc's tunables can hide FMA, and its expf is then the unfused
         * build, which the vector paths rightly decline */
        if (!getenv("GLIBC_TUNABLES")) assert_int_equal(tsr_emu_expf_vector(), level);
        uint64_t checked = 0;
        uint32_t k = 0;
        for (uint64_t u = 0; u < 0x100000000ull; u += step) {
            uint32_t b = (uint32_t)u;
            memcpy(&x[k++], &b, 4);
            if (k == CHUNK || u + step >= 0x100000000ull) {
                tsr_emu_expf(x, y, k);
                for (uint32_t i = 0; i < k; i++) {
                    float want = expf(x[i]);
                    if (memcmp(&want, &y[i], 4) != 0)
                        fail_msg("path %d: expf(%a): %a, the C library %a", level, (double)x[i],
                                 (double)y[i], (double)want);
                }
                checked += k;
                k = 0;
            }
        }
        assert_int_equal(checked, (0x100000000ull + step - 1u) / step);
    }
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* SwiGLU's rows and attention's exponentials (emu/vexpf.c) against the
 * kernel's scalar loops (pe_swiglu, pe_att_exp): every length 1..40 (the
 * 8-lane tail), values over expf's whole range, its special inputs among
 * them, and nothing written past the rows. */
static void swiglu_exp_bit_identical(void **state)
{
    (void)state;
    enum { MAX = 40 };
    for (int level = TSR_EMU_VEC_AVX512; level >= TSR_EMU_VEC_NONE; level--) {
    tsr_emu_vec_limit = level;
    static const float special[] = { 0.0f, -0.0f, 88.0f, -88.0f, 89.0f, -104.0f, 1e30f, -1e30f,
                                     INFINITY, -INFINITY, NAN, 0x1.04845ep+5f, -0x1.f8cbb2p+5f };
    for (uint32_t n = 1; n <= MAX; n++) {
        float g[2 * MAX + 1], want[2 * MAX + 1], a[MAX + 1], wa[MAX + 1];
        for (uint32_t i = 0; i < 2u * n + 1u; i++) {
            float v = (float)ldexp(tm_rand(), (int)(i % 9u)) * 12.0f;   /* |v| up to ~3000 */
            if (i % 5u == 3u) v = special[(i + n) % (sizeof special / sizeof special[0])];
            g[i] = want[i] = v;
        }
        for (uint32_t i = 0; i < n; i++) {
            float val = want[i], e = expf(-val);
            val *= (1.0f / (1.0f + e));
            val *= want[n + i];
            want[i] = val;
        }
        tsr_emu_swiglu(g, n);
        /* a NaN's sign and payload depend on which operand the compiler
         * put first (x86 returns the first NaN): any NaN for a NaN */
        for (uint32_t i = 0; i < 2u * n + 1u; i++)
            if (isnan(want[i]) && isnan(g[i])) g[i] = want[i];
        assert_bits_equal(g, want, (int)(2u * n + 1u), "swiglu");
        float m = tm_rand() * 4.0f;
        for (uint32_t i = 0; i <= n; i++) a[i] = wa[i] = g[n + i] * 0.01f;
        for (uint32_t i = 0; i < n; i++) wa[i] = expf(wa[i] - m);
        tsr_emu_exp_shifted(a, n, m);
        for (uint32_t i = 0; i <= n; i++)
            if (isnan(wa[i]) && isnan(a[i])) a[i] = wa[i];
        assert_bits_equal(a, wa, (int)n + 1, "exp");
    }
    }
    tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
}

/* Attention's score scaling with its max, and its weights (emu/att_rows.c
 * tsr_emu_att_scale_max, tsr_emu_att_norm) against the kernel's loops:
 * the max over 8 lanes (t in lane t mod 8, a larger value only, from
 * -FLT_MAX) and their tree, bit for bit even between -0 and +0 and past
 * NaNs; with and without the int8 cache's scales; every length 1..40. */
static void att_scale_norm_bit_identical(void **state)
{
    (void)state;
    enum { MAX = 40, L = 8 };
    /* sqrt 48 (stories15M's head_size) rounds; sqrt 64 would not tell
     * x / s from x * (1 / s) */
    static const float sqs[] = { 6.92820323f, 2.82842712f };
    int cases = 0;
    for (int level = TSR_EMU_VEC_AVX512; level >= TSR_EMU_VEC_NONE; level--)
    for (int scaled = 0; scaled < 2; scaled++)
    for (size_t q = 0; q < sizeof sqs / sizeof sqs[0]; q++)
        for (uint32_t n = 1; n <= MAX; n++) {
            float acc[MAX], sc[MAX], att[MAX + 1], want[MAX + 1], coef[MAX + 1], wc[MAX + 1];
            for (uint32_t t = 0; t < n; t++) {
                acc[t] = tm_rand() * 8.0f;
                if (n >= 9u && n <= 24u) acc[t] = -fabsf(acc[t]);   /* a zero is the max */
                if (t % 16u == 2u) acc[t] = -0.0f;   /* -0 then +0 in lane 2 */
                if (t % 16u == 10u) acc[t] = 0.0f;
                if (t == 5u && n > 30u) acc[t] = NAN;
                if (n < 8u) acc[t] = -fabsf(acc[t]) - 1e30f;   /* all negative */
                if (n == 37u) acc[t] = t % 3u ? -INFINITY : NAN;   /* the max stays -FLT_MAX */
                sc[t] = fabsf(tm_rand()) * 0.1f;
            }
            const float *ks = scaled ? sc : NULL;
            float sq = sqs[q], lm[L];
            for (uint32_t l = 0; l < L; l++) lm[l] = -FLT_MAX;
            for (uint32_t t = 0; t < n; t++) {
                float v = acc[t];
                if (ks) v = v * ks[t];
                want[t] = v / sq;
                if (want[t] > lm[t % L]) lm[t % L] = want[t];
            }
            for (uint32_t h = L / 2u; h >= 1u; h /= 2u)
                for (uint32_t k = 0; k < h; k++)
                    if (lm[k + h] > lm[k]) lm[k] = lm[k + h];
            if (n == 37u) assert_true(lm[0] == -FLT_MAX);
            att[n] = want[n] = 12345.0f;   /* past nl: untouched */
            tsr_emu_vec_limit = level;
            float m = tsr_emu_att_scale_max(acc, ks, sq, att, n);
            assert_bits_equal(att, want, (int)n + 1, "scores");
            assert_bits_equal(&m, &lm[0], 1, "max");
            float sum = 3.0f + tm_rand();
            for (uint32_t t = 0; t < n; t++) wc[t] = scaled ? (att[t] / sum) * sc[t] : att[t] / sum;
            coef[n] = wc[n] = -7.0f;
            tsr_emu_att_norm(att, scaled ? sc : NULL, sum, coef, n);
            tsr_emu_vec_limit = TSR_EMU_VEC_AVX512;
            assert_bits_equal(coef, wc, (int)n + 1, "weights");
            cases++;
        }
    assert_int_equal(cases, 3 * 2 * 2 * MAX);
}

/* ------------------------------------------------------------------------ */
/* Sampler                                                                    */

typedef struct cand { float p; int i; } cand;

static int cand_cmp(const void *a, const void *b)   /* p descending, then id ascending */
{
    const cand *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->i - y->i;
}

/* run.c sample(): temperature, softmax, one coin, then sample_mult or
 * sample_topp (with a total order on ties: run.c leaves them to qsort). */
static int runc_sample(const float *logits, int n, float temperature, float topp, uint64_t *rng)
{
    float p[512];
    cand c[512];
    for (int i = 0; i < n; i++) p[i] = logits[i] / temperature;
    runc_softmax(p, n);
    float coin = tsr_rng_f32(rng);
    if (topp <= 0 || topp >= 1) {
        float cdf = 0.0f;
        for (int i = 0; i < n; i++) {
            cdf += p[i];
            if (coin < cdf) return i;
        }
        return n - 1;
    }
    int n0 = 0;
    const float cutoff = (1.0f - topp) / (n - 1);
    for (int i = 0; i < n; i++)
        if (p[i] >= cutoff) c[n0++] = (cand){ p[i], i };
    qsort(c, (size_t)n0, sizeof c[0], cand_cmp);
    float cumulative_prob = 0.0f;
    int last_idx = n0 - 1;
    for (int i = 0; i < n0; i++) {
        cumulative_prob += c[i].p;
        if (cumulative_prob > topp) {
            last_idx = i;
            break;
        }
    }
    float r = coin * cumulative_prob;
    float cdf = 0.0f;
    for (int i = 0; i <= last_idx; i++) {
        cdf += c[i].p;
        if (r < cdf) return c[i].i;
    }
    return c[last_idx].i;
}

/* Greedy (temperature 0 or top_p 0) is the first argmax; otherwise the
 * token run.c's sampler picks with the same coin, for multinomial and
 * nucleus sampling, with ties among the probabilities. */
static void sampler_matches_runc(void **state)
{
    (void)state;
    enum { N = 300 };
    static float logits[N], work[N], cp[N];
    static int32_t ci[N];
    static const float temps[] = { 1.0f, 0.7f, 1.5f }, topps[] = { 0.9f, 0.5f, 1.0f, 0.99f, 1e-9f };
    int greedy_cy = 0, differs = 0;
    for (int trial = 0; trial < 60; trial++) {
        for (int i = 0; i < N; i++) logits[i] = 4.0f * tm_rand();
        if (trial % 3 == 0)   /* ties in the logits, so in the probabilities */
            for (int i = 0; i < N; i += 7) logits[i] = logits[0];
        logits[11] = logits[30] = 9.0f;   /* a tied maximum: 11 is greedy's */
        uint32_t cy = 0;
        memcpy(work, logits, sizeof work);
        uint64_t r0 = 99;
        assert_int_equal(tsr_sample(work, N, 0.0f, 0.9f, &r0, cp, ci, &cy), 11);
        assert_int_equal(r0, 99);   /* greedy draws no coin */
        assert_int_equal(cy, tsr_cy_loop(N, TSR_D_CMP, 0));
        greedy_cy = (int)cy;
        memcpy(work, logits, sizeof work);
        assert_int_equal(tsr_sample(work, N, 0.8f, 0.0f, &r0, cp, ci, NULL), 11);
        float t = temps[trial % 3], p = topps[trial % 5];
        uint64_t rk = 1000 + (uint64_t)trial, rr = rk;
        memcpy(work, logits, sizeof work);
        int32_t got = tsr_sample(work, N, t, p, &rk, cp, ci, &cy);
        int want = runc_sample(logits, N, t, p, &rr);
        if (got != want) print_error("trial %d (T %g, top_p %g): %d, run.c %d\n", trial, t, p, got, want);
        assert_int_equal(got, want);
        assert_int_equal(rk, rr);   /* one coin, the same one */
        assert_true(cy > (uint32_t)greedy_cy);
        differs += got != 11;
    }
    assert_true(differs > 10);   /* it sampled, it did not fall back to argmax */
    /* the RNG is llama2.c's xorshift64*: its first output for state 42 */
    uint64_t s = 42, x = 42;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    assert_int_equal(tsr_rng_u32(&s), (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32));
    assert_int_equal(s, x);
}

/* The same seed gives the same tokens, another seed others; top-p 0.5 with
 * one dominant token always picks it. */
static void sampler_deterministic_given_seed(void **state)
{
    (void)state;
    static float logits[VOCAB], work[VOCAB], cp[VOCAB];
    static int32_t ci[VOCAB];
    for (int i = 0; i < VOCAB; i++) logits[i] = 2.0f * tm_rand();
    int32_t a[64], b[64];
    uint64_t ra = 42, rb = 42, rc = 43;
    int differ = 0, distinct = 0;
    for (int t = 0; t < 64; t++) {
        float tp = t % 2 ? 0.9f : 1.0f;
        memcpy(work, logits, sizeof work);
        a[t] = tsr_sample(work, VOCAB, 0.8f, tp, &ra, cp, ci, NULL);
        memcpy(work, logits, sizeof work);
        b[t] = tsr_sample(work, VOCAB, 0.8f, tp, &rb, cp, ci, NULL);
        memcpy(work, logits, sizeof work);
        differ += a[t] != tsr_sample(work, VOCAB, 0.8f, tp, &rc, cp, ci, NULL);
        assert_int_equal(a[t], b[t]);
        assert_in_range(a[t], 0, VOCAB - 1);
        distinct += t > 0 && a[t] != a[t - 1];
    }
    assert_true(differ > 0);
    assert_true(distinct > 10);
    for (int i = 0; i < VOCAB; i++) logits[i] = 0.0f;
    logits[17] = 8.0f;   /* p ~ 0.97 */
    uint64_t r = 7;
    for (int t = 0; t < 100; t++) {
        memcpy(work, logits, sizeof work);
        assert_int_equal(tsr_sample(work, VOCAB, 1.0f, 0.5f, &r, cp, ci, NULL), 17);
    }
}

/* ------------------------------------------------------------------------ */
/* Cycle accounting                                                           */

/* What PE p's GEMV task charges for matrix m, from the layout alone: its
 * tile's pipeline (each half of W13), SwiGLU on one column, zeros for a
 * column without groups, nothing for an empty row block. */
static uint32_t gemv_pe_cycles(const tsr_kconfig *c, uint32_t m, uint32_t p)
{
    tsr_tile t = tsr_lay_tile(c, m, tsr_lay_rot(c, m), p);
    uint32_t halves = t.pair ? 2u : 1u;
    if (t.rows == 0) return 0;
    if (t.ngroups == 0) return tsr_cy_zero(halves * t.rows);
    return halves * tsr_cy_tile(tsr_lay_tile_steps(c, t.rows, t.ngroups));
}

/* A GEMV charges the slowest PE's cycles, not the sum: on 6 PEs the row
 * blocks of W13 (9 units over 6 mesh rows) are unequal; the charge is the
 * largest PE's, each PE's is the layout's, and more work costs more. */
static void gemv_charges_the_slowest_pe(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    static const tm_mesh ms[] = { { 6, 1 }, { 1, 1 }, { 4, 4 } };
    uint64_t w13_cy[3];
    for (int k = 0; k < 3; k++) {
        tsr_kstate *st = tm_place(fx, ms[k], 0, 32, 0);
        const tsr_kconfig *c = &st->cfg;
        float x[HID];
        for (int j = 0; j < HID; j++) x[j] = tm_rand();
        static const int kinds[] = { TSR_W_13, TSR_W_O, TSR_W_QKV, TSR_W_2 };
        uint64_t per_kind[4];
        for (int q = 0; q < 4; q++) {
            uint32_t mat = TSR_MAT_LAYER(0, kinds[q]), d, n, pair;
            tsr_lay_mat_shape(c, mat, &d, &n, &pair);
            input_raw(st, x, n);
            uint64_t g0 = charged(st, TSR_RG_GEMV), t0 = charged(st, TSR_RG_TREE), macs = st->cnt.macs;
            tsr_mesh_gemv(st, mat, 1, 0);
            assert_int_equal(st->cnt.macs - macs, (pair ? 2u : 1u) * d * tsr_cdiv(n, 32) * 32);
            uint64_t cy = charged(st, TSR_RG_GEMV) - g0, tree = charged(st, TSR_RG_TREE) - t0;
            uint32_t Cm = tsr_lay_mat_cols(c, mat);   /* the matrix's own columns */
            uint32_t worst = 0, least = UINT32_MAX;
            uint64_t sum = 0;
            for (uint32_t p = 0; p < st->P; p++) {
                uint32_t e = gemv_pe_cycles(c, mat, p);
                if (Cm == 1 && !pair) assert_int_equal(st->pe_cy[p], e);   /* the last step's */
                if (e > worst) worst = e;
                if (e < least) least = e;
                sum += e;
            }
            per_kind[q] = cy;
            /* the tile step, then (W13) SwiGLU on the roots after the tree:
             * its own step, on every PE when C_m is 1 */
            uint32_t sw = 0;
            for (uint32_t p = 0; p < st->P; p += Cm) {
                tsr_tile t = tsr_lay_tile(c, mat, tsr_lay_rot(c, mat), p);
                if (pair && t.rows && tsr_cy_swiglu(t.rows) > sw) sw = tsr_cy_swiglu(t.rows);
            }
            assert_true(pair ? sw > 0 : sw == 0);
            assert_int_equal(cy, (uint64_t)worst + sw);
            if (Cm == 1) assert_int_equal(tree, 0);
            else assert_true(tree > 0);   /* log2 C_m levels */
            assert_true(cy > 0);
            if (st->P > 1) {
                assert_true(sum > worst);   /* a sum would have been more */
                if (ms[k].pes == 6) assert_true(least < worst);   /* and the work is unequal */
            }
        }
        w13_cy[k] = per_kind[0];
        assert_true(per_kind[0] > per_kind[1]);   /* W13 (2 x 136 x 80) > WO (80 x 80) */
        if (ms[k].pes == 1)   /* one PE: 10 blocks of 8 rows x 3 groups, one step each */
            assert_int_equal(per_kind[1], 10 * 3 * TSR_ROW_SLOTS + TSR_D_GEMV);
        rig_state_free(st);
    }
    assert_true(w13_cy[1] > w13_cy[0]);   /* 1 PE does all the work: slower than 6 */
    tm_free(fx);
}

/* Attention charges its busiest KV PE: 5 KV heads over 4 attention PEs
 * puts two on the last; the charge is that PE's, twice a one-head PE's,
 * and grows with the positions attended. */
static void attention_charges_the_busiest_pe(void **state)
{
    (void)state;
    tm_model *fx = tm_new(1);
    tsr_kstate *st = tm_configured(fx, (tm_mesh){ 4, 1 }, 0, 32, 1);
    uint32_t h0, q;
    assert_int_equal(tsr_lay_kv_heads(&st->cfg, 3, &h0, &q), 2);
    uint64_t prev = 0;
    for (int pos = 0; pos < 12; pos++) {
        for (int i = 0; i < QKVD; i++) cv_qkv(st)[i] = tm_rand();
        st->pos[0] = pos;
        uint64_t a0 = charged(st, TSR_RG_ATTN), io0 = charged(st, TSR_RG_ATT_IO);
        tsr_emu_latch_qkv(st, 0, (uint32_t)pos);   /* as the QKV gather does */
        tsr_attention(st, 0, 0, 0, (uint32_t)pos);
        uint64_t cy = charged(st, TSR_RG_ATTN) - a0;
        uint32_t nl = (uint32_t)pos + 1;
        uint32_t one = tsr_cy_att_store(HS, TSR_KV_F32) +
                       KVMUL * (tsr_cy_att_scores(HS, nl, TSR_ATT_PARTS, TSR_KV_F32) +
                                tsr_cy_att_exp_s(nl, TSR_PE_SUM_LANES) +
                                tsr_cy_att_values(HS, nl, TSR_KV_F32));
        for (int p = 0; p < 3; p++) assert_int_equal(st->pe_cy[p], one);
        assert_int_equal(st->pe_cy[3], 2 * one);
        assert_int_equal(cy, 2 * one);
        assert_true(cy < 5ull * one);   /* not the sum over the PEs */
        assert_int_equal(charged(st, TSR_RG_ATT_IO) - io0,
                         tsr_cy_att_collect(tsr_cdiv(DIM, 32u) * 32u));
        if (pos) assert_true(cy > prev);
        prev = cy;
    }
    rig_state_free(st);
    tm_free(fx);
}

/* ------------------------------------------------------------------------ */
/* Whole passes through the commands                                          */

static int decode_one(tsr_kstate *st, float temperature, float top_p, uint64_t seed,
                      uint32_t flags)
{
    float pay[2] = { temperature, top_p };
    uint32_t out[2], n = 0;
    uint32_t a[6] = { 1, (uint32_t)seed, (uint32_t)(seed >> 32), flags | TSR_DEC_IGNORE_STOP };
    assert_int_equal(rig_cmd(st, TSR_OP_DECODE, 0, a, pay, 2, out, 2, &n), TSR_K_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    return (int)out[1];
}

static void read_logits(tsr_kstate *st, float *logits)
{
    uint32_t n = 0;
    assert_int_equal(rig_cmd(st, TSR_OP_READ_LOGITS, 0, NULL, NULL, 0, logits, VOCAB, &n), TSR_K_OK);
    assert_int_equal(n, VOCAB);
}

/* A forced token path (PREFILL, then one DECODE a position, TRUNCATE to
 * force the next token) against golden_forward: logits bit for bit on one
 * mesh column with kv_split 1 (Q8 and F32).  With column or attention
 * trees the sums are reassociated: F32 within NMSE 1e-10 (rounding
 * only); Q8 within 1e-3, because a reassociated sum can move a quantized
 * activation across a rounding boundary, one int8 step, which the next
 * layers carry (seen: up to 6e-5; Q8_0's own error against F32 is ~2e-4
 * on stories260K).  The greedy token is the argmax of the logits read
 * back; a sampled token is what tsr_sample picks from them with the seed;
 * every region of the pass is charged. */
static void forward_matches_golden(void **state)
{
    (void)state;
    static const struct { tm_mesh m; int q8, G, kv_split, shared; } cases[] = {
        { { 1, 1 }, 1, 32, 1, 1 }, { { 16, 1 }, 1, 16, 1, 0 }, { { 4, 1 }, 0, 32, 1, 0 },
        { { 64, 1 }, 1, 64, 1, 1 }, { { 16, 2 }, 1, 32, 2, 0 }, { { 32, 4 }, 1, 32, 4, 1 },
        { { 16, 2 }, 0, 32, 2, 1 }, { { 64, 4 }, 0, 16, 8, 0 },
    };
    enum { STEPS = 10 };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (!profile_allows(cases[k].m) || (!cases[k].q8 && !TSR_WITH_F32)) continue;
        tm_model *fx = tm_new(cases[k].shared);
        golden g;
        assert_int_equal(golden_build(&g, &fx->ck, cases[k].q8 ? GOLDEN_Q8 : GOLDEN_F32,
                                      cases[k].G, SEQ), TSR_OK);
        tsr_kstate *st = tm_place(fx, cases[k].m, !cases[k].q8, cases[k].G, cases[k].kv_split);
        int exact = cases[k].m.cols == 1 && cases[k].kv_split == 1;
        uint32_t forced[STEPS + 1];
        for (int t = 0; t <= STEPS; t++) forced[t] = (uint32_t)((t * 37 + 1) % VOCAB);
        assert_int_equal(rig_cmd(st, TSR_OP_PREFILL, 0, (uint32_t[6]){ 1 }, forced, 1, NULL, 0,
                                 NULL), TSR_K_OK);
        for (int t = 0; t < STEPS; t++) {
            uint64_t fed = st->cnt.tokens_fed;
            int tok = decode_one(st, 0.0f, 0.0f, 0, 0);
            assert_int_equal(st->cnt.tokens_fed, fed + 1);
            assert_int_equal(st->cnt.last_pos, t);
            /* every region of a greedy pass is charged (trees only when
             * there is one), sampling only the id out and the cancel
             * words read after the step (the cancel word and the
             * sequence's, TSR_D_HOSTRD each), no card link (the whole
             * model on one device) */
            const tsr_kcounters *n = &st->cnt;
            for (int r = 0; r < TSR_RG_COUNT; r++) {
                uint64_t cy = n->cyc[r] - n->cyc_mark[r];
                if (r == TSR_RG_TREE) assert_true((cy > 0) == (cases[k].m.cols > 1));
                else if (r == TSR_RG_ATT_TREE) assert_true((cy > 0) == (cases[k].kv_split > 1));
                else if (r == TSR_RG_SAMPLE) assert_int_equal(cy, TSR_D_BUS + 2u * TSR_D_HOSTRD);
                else if (r == TSR_RG_LINK) assert_int_equal(cy, 0);
                else assert_true(cy > 0);
            }
            float got[VOCAB];
            read_logits(st, got);
            const float *want = golden_forward(&g, (int)forced[t], t);
            if (exact) assert_bits_equal(got, want, VOCAB, "logits");
            else assert_true(golden_nmse(got, want, VOCAB) < (cases[k].q8 ? 1e-3 : 1e-10));
            assert_int_equal(tok, (int)tsr_argmax(got, VOCAB));
            if (exact) assert_int_equal(tok, golden_argmax(want, VOCAB));
            /* at t = 5: a sampled token, twice from the same state and seed */
            if (t == 5) {
                uint32_t back[6] = { (uint32_t)t, forced[t] };
                int s1 = 0, s2 = 0;
                for (int rep = 0; rep < 2; rep++) {
                    assert_int_equal(rig_cmd(st, TSR_OP_TRUNCATE, 0, back, NULL, 0, NULL, 0, NULL),
                                     TSR_K_OK);
                    int s = decode_one(st, 0.9f, 0.8f, 1234, TSR_DEC_RESEED);
                    float l[VOCAB], cp[VOCAB];
                    int32_t ci[VOCAB];
                    uint64_t rng = 1234;
                    read_logits(st, l);
                    assert_int_equal(s, tsr_sample(l, VOCAB, 0.9f, 0.8f, &rng, cp, ci, NULL));
                    assert_true(st->cnt.cyc[TSR_RG_SAMPLE] - st->cnt.cyc_mark[TSR_RG_SAMPLE] >
                                TSR_D_BUS);
                    if (rep) s2 = s;
                    else s1 = s;
                }
                assert_int_equal(s1, s2);
            }
            uint32_t next[6] = { (uint32_t)t + 1, forced[t + 1] };
            assert_int_equal(rig_cmd(st, TSR_OP_TRUNCATE, 0, next, NULL, 0, NULL, 0, NULL),
                             TSR_K_OK);
        }
        rig_state_free(st);
        golden_free(&g);
        tm_free(fx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(reduce_sum_in_runc_order, tm_reseed),
        cmocka_unit_test_setup(rms_scale_in_runc_order, tm_reseed),
        cmocka_unit_test_setup(softmax_matches_runc, tm_reseed),
        cmocka_unit_test_setup(swiglu_matches_runc, tm_reseed),
        cmocka_unit_test_setup(rope_matches_runc, tm_reseed),
        cmocka_unit_test_setup(quantize_matches_runq, tm_reseed),
        cmocka_unit_test(round_q8_is_roundf),
        cmocka_unit_test(quantize_rows_bit_identical),
        cmocka_unit_test_setup(mesh_input_matches_runq, tm_reseed),
        cmocka_unit_test_setup(argmax_lowest_index_wins, tm_reseed),
        cmocka_unit_test_setup(mesh_gemv_matches_reference, tm_reseed),
        cmocka_unit_test_setup(mesh_embed_gathers_the_row, tm_reseed),
        cmocka_unit_test_setup(mesh_argmax_lowest_index_wins, tm_reseed),
        cmocka_unit_test_setup(simd_rows_bit_identical, tm_reseed),
        cmocka_unit_test_setup(simd_q4_rows_bit_identical, tm_reseed),
        cmocka_unit_test_setup(attention_matches_runc, tm_reseed),
        cmocka_unit_test_setup(att_rows_bit_identical, tm_reseed),
        cmocka_unit_test(expf_bit_identical),
        cmocka_unit_test_setup(swiglu_exp_bit_identical, tm_reseed),
        cmocka_unit_test_setup(att_scale_norm_bit_identical, tm_reseed),
        cmocka_unit_test_setup(sampler_matches_runc, tm_reseed),
        cmocka_unit_test_setup(sampler_deterministic_given_seed, tm_reseed),
        cmocka_unit_test_setup(gemv_charges_the_slowest_pe, tm_reseed),
        cmocka_unit_test_setup(attention_charges_the_busiest_pe, tm_reseed),
        cmocka_unit_test_setup(forward_matches_golden, tm_reseed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
