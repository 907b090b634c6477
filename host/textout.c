/* textout.c - token pieces into the text a reader sees (textout.h).
 *
 * A piece is raw bytes: a whole word from the vocabulary, or one byte of a
 * byte-fallback token ("<0xE2>").  JSON needs valid UTF-8, so bytes are
 * assembled into characters here (RFC 3629's table of well-formed
 * sequences); a byte that cannot be part of one becomes U+FFFD.  A lone
 * control byte is dropped, as tessera run (after llama2.c's safe_printf)
 * drops it.  Text that may be the start of a stop string is held back
 * until the next piece decides. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "textout.h"

static const char replacement[] = "\xEF\xBF\xBD";   /* U+FFFD */

void textout_init(textout *t, char *const *stop, int n_stop)
{
    memset(t, 0, sizeof *t);
    t->stop = stop;
    t->n_stop = n_stop;
}

void textout_free(textout *t)
{
    free(t->buf);
    memset(t, 0, sizeof *t);
}

static int append(textout *t, const void *p, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n + 1) cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) return -1;
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return 0;
}

/* ------------------------------------------------------------ UTF-8 --- */

/* Bytes that follow lead byte b (0 for ASCII, -1 for a byte that cannot
 * lead). */
static int utf8_need(unsigned char b)
{
    if (b < 0x80) return 0;
    if (b >= 0xC2 && b <= 0xDF) return 1;
    if (b >= 0xE0 && b <= 0xEF) return 2;
    if (b >= 0xF0 && b <= 0xF4) return 3;
    return -1;
}

/* May b be the next byte after part (RFC 3629 section 4: the second byte
 * after E0, ED, F0 and F4 has a narrower range)? */
static int utf8_continues(const unsigned char *part, int part_len, unsigned char b)
{
    if (b < 0x80 || b > 0xBF) return 0;
    if (part_len != 1) return 1;
    switch (part[0]) {
    case 0xE0: return b >= 0xA0;
    case 0xED: return b <= 0x9F;
    case 0xF0: return b >= 0x90;
    case 0xF4: return b <= 0x8F;
    default:   return 1;
    }
}

static int push_byte(textout *t, unsigned char b)
{
    if (t->part_len > 0) {
        if (utf8_continues(t->part, t->part_len, b)) {
            t->part[t->part_len++] = b;
            if (t->part_len < t->part_need + 1) return 0;
            int rc = append(t, t->part, (size_t)t->part_len);
            t->part_len = 0;
            return rc;
        }
        t->part_len = 0;                       /* a cut-off character */
        if (append(t, replacement, 3)) return -1;
    }
    int need = utf8_need(b);
    if (need < 0) return append(t, replacement, 3);
    if (need == 0) return append(t, &b, 1);
    t->part[0] = b;
    t->part_len = 1;
    t->part_need = need;
    return 0;
}

/* ------------------------------------------------------- stop strings --- */

/* Cut the text at the first stop string that starts at or after the
 * released part. */
static void find_stop(textout *t)
{
    size_t best = t->len;
    for (int i = 0; i < t->n_stop; i++) {
        const char *hit = strstr(t->buf + t->sent, t->stop[i]);
        if (hit && (size_t)(hit - t->buf) < best) best = (size_t)(hit - t->buf);
    }
    if (best < t->len) {
        t->len = best;
        t->buf[best] = '\0';
        t->stopped = 1;
    }
}

/* Bytes at the end of the text that are a proper prefix of a stop string:
 * they must wait for the next piece. */
static size_t held_for_stop(const textout *t)
{
    size_t held = 0, avail = t->len - t->sent;
    for (int i = 0; i < t->n_stop; i++) {
        size_t sl = strlen(t->stop[i]);
        if (sl == 0) continue;
        for (size_t k = sl - 1 < avail ? sl - 1 : avail; k > held; k--)
            if (!memcmp(t->buf + t->len - k, t->stop[i], k)) {
                held = k;
                break;
            }
    }
    return held;
}

/* ------------------------------------------------------------- pieces --- */

int textout_push(textout *t, const char *piece, size_t n)
{
    if (t->stopped || !piece || n == 0) return 0;
    unsigned char b0 = (unsigned char)piece[0];
    if (n == 1 && b0 < 0x80 && !isprint(b0) && !isspace(b0)) return 0;
    for (size_t i = 0; i < n; i++)
        if (push_byte(t, (unsigned char)piece[i])) return -1;
    if (t->n_stop) find_stop(t);
    return 0;
}

size_t textout_take(textout *t, const char **p)
{
    size_t end = t->stopped ? t->len : t->len - held_for_stop(t);
    *p = t->buf ? t->buf + t->sent : "";
    size_t n = end > t->sent ? end - t->sent : 0;
    t->sent += n;
    return n;
}

size_t textout_finish(textout *t, const char **p)
{
    if (t->part_len > 0 && !t->stopped) {
        t->part_len = 0;
        if (append(t, replacement, 3) == 0 && t->n_stop) find_stop(t);
    }
    *p = t->buf ? t->buf + t->sent : "";
    size_t n = t->len - t->sent;
    t->sent = t->len;
    return n;
}

/* ------------------------------------------- printing tokens (run, chat) --- */

const char *textout_token(tsr_model *m, int prev, int token, int bos, int eos, size_t *n)
{
    *n = 0;
    if (token == bos || token == eos) return NULL;
    const char *p = tsr_model_token_text(m, prev, token, n);
    if (!p || !*n) {
        *n = 0;
        return NULL;
    }
    return p;
}

int textout_print(textout *t, FILE *out, const char *piece, size_t n)
{
    if (!piece || !n) return 0;
    if (textout_push(t, piece, n)) return -1;
    const char *p;
    size_t k = textout_take(t, &p);
    if (k) fwrite(p, 1, k, out);
    fflush(out);
    return 0;
}

void textout_print_end(textout *t, FILE *out)
{
    const char *p;
    size_t k = textout_finish(t, &p);
    if (k) fwrite(p, 1, k, out);
}
