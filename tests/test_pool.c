/*
 * test_pool.c - the emulator's worker pool (emu/pool.c) on its own: many
 * short steps back to back whose item counts change from step to step (a
 * block's end moves, as the kernel's mesh steps over TSR_PES and
 * TSR_ATT_PES do), each item must run exactly once, with its own step's
 * fn and ctx, before tsr_emu_pool_run returns.  In TSAN_TESTS: a late
 * worker that runs an item of the next step, or reads its fn or ctx, is a
 * ThreadSanitizer report as well as a count here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "tsr_emu.h"

#define MAX_ITEMS 64u

/* One step's ctx; two of them alternate, and each has its own fn. */
typedef struct step {
    uint32_t live;               /* 1 while tsr_emu_pool_run runs it      */
    uint32_t n;                  /* items                                 */
    uint32_t hits[MAX_ITEMS];    /* (n,) runs of each item                */
    uint32_t bad;                /* items run outside the step            */
} step;

static void count(step *s, uint32_t item)
{
    if (!__atomic_load_n(&s->live, __ATOMIC_RELAXED) || item >= s->n)
        __atomic_add_fetch(&s->bad, 1u, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&s->hits[item], 1u, __ATOMIC_RELAXED);
}

static void item_even(void *ctx, uint32_t item) { count(ctx, item); }
static void item_odd(void *ctx, uint32_t item) { count(ctx, item); }

/* The item counts cycle through small and large steps, so the end of
 * every block both grows and shrinks between consecutive steps. */
static uint32_t items_of(uint32_t k)
{
    static const uint32_t n[] = { 2, 64, 3, 40, 64, 5, 17, 64, 8, 33 };
    return n[k % (sizeof n / sizeof n[0])];
}

static void run_steps(uint32_t workers, uint32_t steps)
{
    tsr_emu_pool *pool = NULL;
    assert_int_equal(tsr_emu_pool_create(workers, 1, &pool), 0);
    static step s[2];
    memset(s, 0, sizeof s);
    uint32_t bad = 0, wrong = 0;
    for (uint32_t k = 0; k < steps; k++) {
        step *st = &s[k & 1u];
        st->n = items_of(k);
        memset(st->hits, 0, sizeof st->hits);
        __atomic_store_n(&st->live, 1u, __ATOMIC_RELAXED);
        tsr_emu_pool_run(pool, st->n, workers, k & 1u ? item_odd : item_even, st);
        __atomic_store_n(&st->live, 0u, __ATOMIC_RELAXED);
        for (uint32_t i = 0; i < MAX_ITEMS; i++)
            wrong += __atomic_load_n(&st->hits[i], __ATOMIC_RELAXED) != (i < st->n ? 1u : 0u);
    }
    tsr_emu_pool_destroy(pool);
    bad = s[0].bad + s[1].bad;
    print_message("%u workers, %u steps: %u items run outside their step, %u miscounted\n",
                  workers, steps, bad, wrong);
    assert_int_equal(bad, 0);
    assert_int_equal(wrong, 0);
}

/* ------------------------------------------------------------- tests --- */

/* Two workers (the machine's CPUs or fewer: they spin between steps). */
static void steps_two_workers(void **state)
{
    (void)state;
    run_steps(2, 200000);
}

/* More workers than most machines' CPUs: no spinning, futex sleeps, and
 * workers the OS runs late. */
static void steps_oversubscribed(void **state)
{
    (void)state;
    run_steps(6, 50000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(steps_two_workers),
        cmocka_unit_test(steps_oversubscribed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
