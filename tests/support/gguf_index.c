/* gguf_index.c - see gguf_index.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_index.h"

typedef struct cur { const uint8_t *p, *end; } cur;

static uint64_t take(cur *c, size_t n)
{
    assert_true((size_t)(c->end - c->p) >= n);
    uint64_t v = 0;
    memcpy(&v, c->p, n);
    c->p += n;
    return v;
}

/* Skip one value of type t (ggml's value types 0..12). */
static void skip_value(cur *c, uint32_t t)
{
    static const uint8_t sz[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    assert_true(t < 13);
    if (t == 8) { uint64_t n = take(c, 8); assert_true((uint64_t)(c->end - c->p) >= n); c->p += n; return; }
    if (t == 9) {
        uint32_t at = (uint32_t)take(c, 4);
        uint64_t n = take(c, 8);
        for (uint64_t i = 0; i < n; i++) skip_value(c, at);
        return;
    }
    take(c, sz[t]);
}

void gguf_index_open(const char *path, gguf_index *g)
{
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    g->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g->bytes = malloc(g->len);
    assert_non_null(g->bytes);
    assert_int_equal(fread(g->bytes, 1, g->len, f), g->len);
    fclose(f);
    cur c = { g->bytes, g->bytes + g->len };
    assert_memory_equal(c.p, "GGUF", 4);
    take(&c, 8);   /* magic, version */
    uint64_t nt = take(&c, 8), nkv = take(&c, 8), align = 32;
    for (uint64_t i = 0; i < nkv; i++) {
        uint64_t kl = take(&c, 8);
        const uint8_t *k = c.p;
        c.p += kl;
        uint32_t t = (uint32_t)take(&c, 4);
        if (kl == 17 && !memcmp(k, "general.alignment", 17) && t == 4) {
            align = take(&c, 4);
            continue;
        }
        skip_value(&c, t);
    }
    g->t = calloc(nt, sizeof *g->t);
    assert_non_null(g->t);
    uint64_t off[512];
    assert_true(nt <= 512);
    for (uint64_t i = 0; i < nt; i++) {
        gguf_tensor *t = &g->t[i];
        uint64_t nl = take(&c, 8);
        assert_true(nl < sizeof t->name);
        memcpy(t->name, c.p, nl);
        c.p += nl;
        uint32_t nd = (uint32_t)take(&c, 4);
        t->ne0 = take(&c, 8);
        t->ne1 = nd > 1 ? take(&c, 8) : 1;
        for (uint32_t d = 2; d < nd; d++) take(&c, 8);
        t->type = (uint32_t)take(&c, 4);
        off[i] = take(&c, 8);
    }
    size_t data = (size_t)(c.p - g->bytes);
    data = (data + align - 1) / align * align;
    for (uint64_t i = 0; i < nt; i++) g->t[i].data = g->bytes + data + off[i];
    g->n = (int)nt;
}

void gguf_index_close(gguf_index *g)
{
    free(g->bytes);
    free(g->t);
    memset(g, 0, sizeof *g);
}

const gguf_tensor *gguf_index_find(const gguf_index *g, const char *name)
{
    for (int i = 0; i < g->n; i++)
        if (!strcmp(g->t[i].name, name)) return &g->t[i];
    return NULL;
}

size_t gguf_index_u32_key(const gguf_index *g, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 24; i + 8 + kl + 4 + 4 <= g->len; i++) {
        uint64_t l;
        memcpy(&l, g->bytes + i, 8);
        uint32_t t;
        if (l != kl || memcmp(g->bytes + i + 8, key, kl)) continue;
        memcpy(&t, g->bytes + i + 8 + kl, 4);
        if (t == 4 || t == 5) return i + 8 + kl + 4;
    }
    return 0;
}
