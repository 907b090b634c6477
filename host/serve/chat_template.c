/* chat_template.c - chat messages into one prompt.
 *
 * The llama2.c models carry no chat template, so the server uses a plain
 * one (docs/server.md):
 *
 *     system / developer   CONTENT "\n\n"
 *     user                 "User: " CONTENT "\n"
 *     assistant            "Assistant: " CONTENT "\n"
 *     then                 "Assistant:"
 *
 * A content is a string, or an array of {"type": "text", "text": ...}
 * parts, joined.  A GGUF file's own template is a later step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve.h"

typedef struct strbuf {
    char  *p;
    size_t len, cap, max;
} strbuf;

static int put(strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n > b->max) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
    return 0;
}

/* Append a message's content; -1 with err filled when it is not text. */
static int put_content(strbuf *b, const json_t *c, char *err, size_t errlen)
{
    if (json_is_string(c)) {
        if (put(b, json_string_value(c)) == 0) return 0;
        snprintf(err, errlen, "the messages are too long");
        return -1;
    }
    if (!json_is_array(c)) {
        snprintf(err, errlen, "a message's 'content' must be a string or an array of text parts");
        return -1;
    }
    size_t i;
    const json_t *part;
    json_array_foreach(c, i, part) {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") ||
            !json_is_string(text)) {
            snprintf(err, errlen, "only text content parts ({\"type\": \"text\", \"text\": ...}) "
                                  "are supported");
            return -1;
        }
        if (put(b, json_string_value(text))) {
            snprintf(err, errlen, "the messages are too long");
            return -1;
        }
    }
    return 0;
}

char *srv_chat_prompt(const void *messages, size_t max_bytes, char *err, size_t errlen)
{
    const json_t *msgs = messages;
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
        snprintf(err, errlen, "'messages' must be a non-empty array");
        return NULL;
    }
    strbuf b = { .max = max_bytes };
    size_t i;
    const json_t *m;
    json_array_foreach(msgs, i, m) {
        const json_t *role = json_object_get(m, "role");
        const char *r = json_is_string(role) ? json_string_value(role) : "";
        const char *pre, *post;
        if (!strcmp(r, "system") || !strcmp(r, "developer")) { pre = ""; post = "\n\n"; }
        else if (!strcmp(r, "user"))      { pre = "User: "; post = "\n"; }
        else if (!strcmp(r, "assistant")) { pre = "Assistant: "; post = "\n"; }
        else {
            snprintf(err, errlen, "messages[%zu]: 'role' must be system, developer, user or "
                                  "assistant", i);
            free(b.p);
            return NULL;
        }
        if (put(&b, pre) || put_content(&b, json_object_get(m, "content"), err, errlen) ||
            put(&b, post)) {
            if (!err[0]) snprintf(err, errlen, "the messages are too long");
            free(b.p);
            return NULL;
        }
    }
    if (put(&b, "Assistant:")) {
        snprintf(err, errlen, "the messages are too long");
        free(b.p);
        return NULL;
    }
    return b.p;
}
