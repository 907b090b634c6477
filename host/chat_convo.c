/* chat_convo.c - tessera chat's conversation (chat_convo.h).
 *
 * Each turn formats the whole conversation with the model's chat template
 * (tsr_chat_format) and appends to the sequence only what it does not
 * hold yet: the text after the reply, which closes the assistant's turn
 * and opens the user's, and the generation prompt.  The KV cache of
 * everything before stays on the device. */
#include <stdlib.h>
#include <string.h>

#include "chat_convo.h"

int convo_add(chat_convo *c, const char *role, const char *content)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        tsr_chat_msg *m = realloc(c->msgs, (size_t)cap * sizeof *m);
        if (!m) return -1;
        c->msgs = m;
        c->cap = cap;
    }
    char *s = strdup(content);
    if (!s) return -1;
    c->msgs[c->n++] = (tsr_chat_msg){ .role = role, .content = s };
    return 0;
}

void convo_drop_last(chat_convo *c)
{
    if (c->n > 0) free((char *)c->msgs[--c->n].content);
}

void convo_clear(chat_convo *c)
{
    while (c->n > 0) convo_drop_last(c);
    free(c->held);
    c->held = NULL;
    c->held_len = 0;
    c->mark = 0;
}

void convo_free(chat_convo *c)
{
    convo_clear(c);
    free(c->msgs);
    c->msgs = NULL;
    c->cap = 0;
}

char *convo_text(const chat_convo *c, size_t *len)
{
    size_t n = 0;
    if (tsr_chat_format(c->family, c->tmpl, c->msgs, c->n, 1, NULL, 0, &n) != TSR_ERR_RANGE)
        return NULL;
    char *t = malloc(n + 1);
    if (t && tsr_chat_format(c->family, c->tmpl, c->msgs, c->n, 1, t, n + 1, len) != TSR_OK) {
        free(t);
        t = NULL;
    }
    return t;
}

void convo_delta(const chat_convo *c, const char *t, size_t t_len, int seq_len, int last_is_stop,
                 size_t *from, int *keep)
{
    *from = 0;
    *keep = 0;
    if (!c->held || c->held_len > t_len || memcmp(t, c->held, c->held_len)) return;
    *from = c->held_len;
    *keep = c->mark;
    const tsr_chat_msg *r = c->n >= 2 ? &c->msgs[c->n - 2] : NULL;   /* the reply */
    if (!r || strcmp(r->role, "assistant")) return;
    size_t rl = strlen(r->content);
    if (rl <= t_len - c->held_len && !memcmp(t + c->held_len, r->content, rl)) {
        *from += rl;
        *keep = seq_len - (last_is_stop ? 1 : 0);
    }
}

void convo_hold(chat_convo *c, char *t, size_t t_len, int mark)
{
    free(c->held);
    c->held = t;
    c->held_len = t_len;
    c->mark = mark;
}
