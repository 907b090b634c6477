/* chat_template.c - chat messages into one prompt, by the model's chat
 * template (tsr_chat_format; the families in docs/server.md).
 *
 * The server formats with the family srv_chat names: the model's own
 * (tsr_model_chat_template), or --chat-template's.  The llama2.c models
 * carry no template, so they get plain, tessera's own:
 *
 *     system / developer   CONTENT "\n\n"
 *     user                 "User: " CONTENT "\n"
 *     assistant            "Assistant: " CONTENT "\n"
 *     then                 "Assistant:"
 *
 * A content is a string, or an array of {"type": "text", "text": ...}
 * parts, joined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve.h"

/* A message's content as one malloc'd string; NULL with err filled when it
 * is not text (or there is no memory). */
static char *content_text(const json_t *c, char *err, size_t errlen)
{
    if (json_is_string(c)) {
        char *s = strdup(json_string_value(c));
        if (!s) snprintf(err, errlen, "out of memory");
        return s;
    }
    if (!json_is_array(c)) {
        snprintf(err, errlen, "a message's 'content' must be a string or an array of text parts");
        return NULL;
    }
    size_t i, n = 1;
    const json_t *part;
    json_array_foreach(c, i, part) {
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") ||
            !json_is_string(text)) {
            snprintf(err, errlen, "only text content parts ({\"type\": \"text\", \"text\": ...}) "
                                  "are supported");
            return NULL;
        }
        n += json_string_length(text);
    }
    char *s = malloc(n), *p = s;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_array_foreach(c, i, part) {
        const json_t *text = json_object_get(part, "text");
        memcpy(p, json_string_value(text), json_string_length(text));
        p += json_string_length(text);
    }
    *p = '\0';
    return s;
}

char *srv_chat_prompt(const void *messages, const srv_chat *chat, size_t max_bytes, char *err,
                      size_t errlen)
{
    const json_t *msgs = messages;
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
        snprintf(err, errlen, "'messages' must be a non-empty array");
        return NULL;
    }
    size_t n = json_array_size(msgs), i;
    if (n > INT32_MAX / 2) {
        snprintf(err, errlen, "the messages are too long");
        return NULL;
    }
    tsr_chat_msg *m = calloc(n, sizeof *m);
    char *out = NULL;
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    const json_t *jm;
    json_array_foreach(msgs, i, jm) {
        const json_t *role = json_object_get(jm, "role");
        const char *r = json_is_string(role) ? json_string_value(role) : "";
        if (strcmp(r, "system") && strcmp(r, "developer") && strcmp(r, "user") &&
            strcmp(r, "assistant")) {
            snprintf(err, errlen, "messages[%zu]: 'role' must be system, developer, user or "
                                  "assistant", i);
            goto out;
        }
        m[i].role = r;
        if (!(m[i].content = content_text(json_object_get(jm, "content"), err, errlen))) goto out;
    }
    size_t len = 0;
    int rc = tsr_chat_format(chat->family, chat->tmpl, m, (int)n, 1, NULL, 0, &len);
    if (rc != TSR_ERR_RANGE && rc != TSR_OK) {
        snprintf(err, errlen, "chat template %s: %s", chat->family, tsr_strerror(rc));
        goto out;
    }
    if (len > max_bytes) {
        snprintf(err, errlen, "the messages are too long");
        goto out;
    }
    if (!(out = malloc(len + 1))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (tsr_chat_format(chat->family, chat->tmpl, m, (int)n, 1, out, len + 1, &len) != TSR_OK) {
        snprintf(err, errlen, "chat template %s: the text changed length", chat->family);
        free(out);
        out = NULL;
    }
out:
    for (i = 0; i < n; i++) free((char *)m[i].content);
    free(m);
    return out;
}
