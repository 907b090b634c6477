/* chat_convo.h - tessera chat's conversation: the messages so far, and
 * what of their formatted text the sequence on the device already holds,
 * so that each turn appends only the new part (chat_convo.c). */
#ifndef TSR_CHAT_CONVO_H
#define TSR_CHAT_CONVO_H

#include <stddef.h>

#include "tessera.h"

typedef struct chat_convo {
    const char   *family;   /* tsr_chat_format's family (static)            */
    const char   *tmpl;     /* the model's template text, or NULL; not owned */
    tsr_chat_msg *msgs;     /* (cap,) n of them; contents owned              */
    int           n, cap;
    char         *held;     /* the formatted text up to the end of the last
                               prompt appended (owned; NULL: none)           */
    size_t        held_len;
    int           mark;     /* the sequence's length after that prompt      */
} chat_convo;

/* Add a message (content copied).  Returns 0, or -1 out of memory. */
int  convo_add(chat_convo *c, const char *role, const char *content);
/* Drop the last message (a line that was skipped). */
void convo_drop_last(chat_convo *c);
/* A new conversation: no messages, nothing held. */
void convo_clear(chat_convo *c);
void convo_free(chat_convo *c);

/* The conversation formatted, with the generation prompt: a malloc'd
 * string (*len bytes), or NULL out of memory. */
char *convo_text(const chat_convo *c, size_t *len);

/* How to bring a sequence that holds the last prompt (c->held, c->mark
 * tokens) and the reply generated after it (the last message, an
 * assistant one) to the text t (t_len bytes): the bytes of t it holds
 * already (*from; append the rest) and the tokens to keep (*keep: the
 * caller truncates to it, or resets when it is 0).  The reply is kept
 * when t continues it as it was generated (a stop token after it is
 * dropped: t closes the turn in text, drop_stop says so); otherwise the
 * sequence goes back to c->mark and the reply is prefilled as t has it. */
void convo_delta(const chat_convo *c, const char *t, size_t t_len, int seq_len, int last_is_stop,
                 size_t *from, int *keep);

/* Remember t as the text held, after appending it (the sequence is then
 * mark tokens long).  Takes t. */
void convo_hold(chat_convo *c, char *t, size_t t_len, int mark);

#endif
