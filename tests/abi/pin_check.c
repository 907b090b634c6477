/*
 * pin_check.c - the layouts of tessera.h (the one on the include path)
 * against tests/abi/pins.h: one line per field or size that differs, exit
 * status 1 if any does.  tests/test_abi.c builds it against the real
 * header (must pass) and against a copy with a field planted in front of
 * `reserved` (must fail, naming the struct).
 */
#include <stddef.h>
#include <stdio.h>

#include "tessera.h"
#include "pins.h"

int main(void)
{
    int bad = 0;
    if (sizeof(void *) != 8) {
        printf("not LP64: the pins are LP64's\n");
        return 2;
    }
#define X(T, F, OFF)                                                                    \
    if (offsetof(T, F) != (OFF)) {                                                   \
        printf("%s.%s at %zu, pinned at %d\n", #T, #F, offsetof(T, F), (int)(OFF)); \
        bad = 1;                                                                     \
    }
#define S(T, SZ)                                                                        \
    if (sizeof(T) != (SZ)) {                                                         \
        printf("%s is %zu bytes, pinned at %d\n", #T, sizeof(T), (int)(SZ));         \
        bad = 1;                                                                     \
    }
    TSR_ABI_PINS(X, S)
#undef X
#undef S
    if (!bad) printf("all pinned\n");
    return bad;
}
