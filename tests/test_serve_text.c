/*
 * test_serve_text.c - the server's pure parts, without a server: token
 * pieces into UTF-8 text with stop strings (host/serve/textout.c), the
 * chat template (chat_template.c) and request checking (request.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve/serve.h"

/* Push pieces (NULL-terminated), collecting what is released after each. */
static void feed(textout *t, const char *const *pieces, char *seen, size_t cap)
{
    size_t n = 0;
    for (; *pieces; pieces++) {
        assert_int_equal(textout_push(t, *pieces, strlen(*pieces)), 0);
        const char *p;
        size_t k = textout_take(t, &p);
        assert_true(n + k < cap);
        memcpy(seen + n, p, k);
        n += k;
        seen[n++] = '|';          /* marks where each push ended */
    }
    seen[n] = '\0';
}

/* -------------------------------------------------------------- textout --- */

static void pieces_pass_through(void **state)
{
    (void)state;
    textout t;
    textout_init(&t, NULL, 0);
    char seen[256];
    const char *p[] = { "Once", " upon", " a", " time", NULL };
    feed(&t, p, seen, sizeof seen);
    assert_string_equal(seen, "Once| upon| a| time|");
    textout_free(&t);
}

/* The one printer of tessera run and chat: each push writes the whole
 * characters ready, a lone control byte is dropped, a character split over
 * pieces comes out whole, and the end writes what was held (U+FFFD for a
 * character cut short).  No piece (BOS, EOS) writes nothing. */
static void print_follows_the_one_rule(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    textout t;
    textout_init(&t, NULL, 0);
    const char *p[] = { "Hi", "\x07", "\x01", " caf", "\xC3", "\xA9", "\n", " \xE2", "\x82", NULL };
    size_t after[9];
    for (int i = 0; p[i]; i++) {
        assert_int_equal(textout_print(&t, f, p[i], strlen(p[i])), 0);
        after[i] = len;   /* open_memstream: len is what fflush wrote */
    }
    assert_int_equal(textout_print(&t, f, NULL, 0), 0);
    assert_int_equal(after[0], 2);                      /* "Hi" at once        */
    assert_int_equal(after[2], 2);                      /* the controls: none  */
    assert_int_equal(after[4], 6);                      /* "\xC3" waits        */
    assert_int_equal(after[5], 8);                      /* then "\xC3\xA9"     */
    textout_print_end(&t, f);
    fclose(f);
    assert_string_equal(buf, "Hi caf\xC3\xA9\n \xEF\xBF\xBD");
    free(buf);
    textout_free(&t);
}

/* Byte-fallback tokens give one byte each: a character is released when
 * whole, never half. */
static void utf8_is_assembled(void **state)
{
    (void)state;
    textout t;
    textout_init(&t, NULL, 0);
    char seen[256];
    const char *p[] = { "caf", "\xC3", "\xA9", " \xE2", "\x82", "\xAC", "!", NULL };
    feed(&t, p, seen, sizeof seen);
    assert_string_equal(seen, "caf||\xC3\xA9| ||\xE2\x82\xAC|!|");
    textout_free(&t);
}

/* Bytes that cannot form a character become U+FFFD, so JSON stays valid. */
static void bad_bytes_become_replacement(void **state)
{
    (void)state;
    textout t;
    textout_init(&t, NULL, 0);
    char seen[256];
    /* a stray continuation, a lead byte cut off by ASCII, an overlong
     * lead (C0), a surrogate (ED A0), and a lead byte at the end */
    const char *p[] = { "\x80", "\xC3" "a", "\xC0", "\xED\xA0", "b", "\xE2", NULL };
    feed(&t, p, seen, sizeof seen);
    assert_string_equal(seen, "\xEF\xBF\xBD|" "\xEF\xBF\xBD" "a|" "\xEF\xBF\xBD|"
                              "\xEF\xBF\xBD\xEF\xBF\xBD|" "b|" "|");
    const char *tail;
    size_t n = textout_finish(&t, &tail);
    assert_int_equal(n, 3);
    assert_memory_equal(tail, "\xEF\xBF\xBD", 3);
    textout_free(&t);
}

/* A lone control byte is dropped, as tessera run drops it; a newline is
 * text. */
static void control_bytes_are_dropped(void **state)
{
    (void)state;
    textout t;
    textout_init(&t, NULL, 0);
    char seen[256];
    const char *p[] = { "a", "\x01", "\n", "\x7f", "b", NULL };
    feed(&t, p, seen, sizeof seen);
    assert_string_equal(seen, "a||\n||b|");
    textout_free(&t);
}

/* Text that may start a stop string waits; the match cuts the text. */
static void stop_strings_hold_then_cut(void **state)
{
    (void)state;
    char *stop[] = { "the end", "!!" };
    textout t;
    textout_init(&t, stop, 2);
    char seen[256];
    const char *p[] = { "and", " the", " en", "ormous", " dog", " the", " end", " more", NULL };
    feed(&t, p, seen, sizeof seen);
    assert_string_equal(seen, "and| ||the enormous| dog| |||");
    assert_true(t.stopped);
    const char *tail;
    assert_int_equal(textout_finish(&t, &tail), 0);
    assert_string_equal(t.buf, "and the enormous dog ");
    textout_free(&t);

    /* a false start is released at the end of the turn */
    textout_init(&t, stop, 2);
    const char *q[] = { "wow", "!", NULL };
    feed(&t, q, seen, sizeof seen);
    assert_string_equal(seen, "wow||");
    assert_int_equal(textout_finish(&t, &tail), 1);
    assert_string_equal(tail, "!");
    assert_false(t.stopped);
    textout_free(&t);
}

/* ------------------------------------------------------- chat template --- */

static const srv_chat plain = { .family = "plain" };

static void chat_template_is_as_documented(void **state)
{
    (void)state;
    json_error_t je;
    json_t *m = json_loads("[{\"role\": \"system\", \"content\": \"Be brief.\"},"
                           " {\"role\": \"user\", \"content\": \"Hi\"},"
                           " {\"role\": \"assistant\", \"content\": [{\"type\": \"text\", \"text\": \"Hel\"},"
                           "                                          {\"type\": \"text\", \"text\": \"lo\"}]},"
                           " {\"role\": \"user\", \"content\": \"A story\"}]", 0, &je);
    assert_non_null(m);
    char err[200] = "";
    char *p = srv_chat_prompt(m, &plain, 1 << 20, err, sizeof err);
    assert_non_null(p);
    assert_string_equal(p, "Be brief.\n\nUser: Hi\nAssistant: Hello\nUser: A story\nAssistant:");
    free(p);
    assert_null(srv_chat_prompt(m, &plain, 20, err, sizeof err));          /* too long */
    assert_non_null(strstr(err, "too long"));
    json_decref(m);
    m = json_loads("[{\"role\": \"wizard\", \"content\": \"x\"}]", 0, &je);
    assert_null(srv_chat_prompt(m, &plain, 1 << 20, err, sizeof err));
    assert_non_null(strstr(err, "messages[0]: 'role'"));
    json_decref(m);
}

/* ------------------------------------------------------------- requests --- */

static const srv_limits lim = { .max_body = 1 << 20, .max_tokens = 256, .ctx = 512 };

static void request_fields_are_read(void **state)
{
    (void)state;
    const char *body = "{\"model\": \"m\", \"prompt\": [\"Once\"], \"max_tokens\": 7, "
                       "\"temperature\": 0.5, \"top_p\": 0.9, \"seed\": 42, \"stop\": [\"a\", \"b\"], "
                       "\"stream\": true, \"stream_options\": {\"include_usage\": true}, "
                       "\"user\": \"u\", \"n\": 1, \"echo\": false, \"frequency_penalty\": 0, "
                       "\"some_future_field\": {\"x\": 1}}";
    srv_http_req r;
    char err[300];
    const char *param;
    assert_int_equal(srv_parse_completion(body, strlen(body), &lim, NULL, &r, err, sizeof err, &param), 0);
    assert_string_equal(r.cmd->text, "Once");
    assert_int_equal(r.cmd->gen.max_tokens, 7);
    assert_true(r.cmd->gen.temperature == 0.5f);
    assert_true(r.cmd->gen.top_p == 0.9f);
    assert_int_equal(r.cmd->gen.seed, 42);
    assert_int_equal(r.cmd->gen.n_stop, 2);
    assert_string_equal(r.cmd->gen.stop[1], "b");
    assert_true(r.stream && r.include_usage);
    assert_string_equal(r.model, "m");
    srv_cmd_free(r.cmd);

    /* OpenAI's defaults: 16 tokens for completions, --max-tokens for chat;
     * tessera's one sampling rule: 0.8 and a random seed (each its own) */
    assert_int_equal(srv_parse_completion("{}", 2, &lim, NULL, &r, err, sizeof err, &param), 0);
    assert_int_equal(r.cmd->gen.max_tokens, 16);
    assert_int_equal(r.cmd->gen.cut_to, 0);
    assert_true(r.cmd->gen.temperature == 0.8f);
    assert_true(r.cmd->gen.top_p == 1.0f);
    assert_string_equal(r.cmd->text, "");
    uint64_t seed = r.cmd->gen.seed;
    assert_true(seed != 0 && seed < (1ull << 53));
    srv_cmd_free(r.cmd);
    assert_int_equal(srv_parse_completion("{}", 2, &lim, NULL, &r, err, sizeof err, &param), 0);
    assert_true(r.cmd->gen.seed != seed);
    srv_cmd_free(r.cmd);
    /* more than --max-tokens (256 here): cut to it, and said */
    assert_int_equal(srv_parse_completion("{\"max_tokens\": 100000}", 22, &lim, NULL, &r, err,
                                          sizeof err, &param), 0);
    assert_int_equal(r.cmd->gen.max_tokens, 256);
    assert_int_equal(r.cmd->gen.cut_to, 256);
    srv_cmd_free(r.cmd);
    const char *chat = "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], "
                       "\"max_completion_tokens\": 9}";
    assert_int_equal(srv_parse_completion(chat, strlen(chat), &lim, &plain, &r, err, sizeof err, &param), 0);
    assert_string_equal(r.cmd->text, "User: Hi\nAssistant:");
    assert_int_equal(r.cmd->gen.max_tokens, 9);
    srv_cmd_free(r.cmd);
}

/* Each bad body is refused, naming the field when there is one. */
static void bad_requests_name_the_field(void **state)
{
    (void)state;
    static const struct { const char *body, *param, *msg; } bad[] = {
        { "{\"max_tokens\": \"7\"}",     "max_tokens",  "integer of at least 1" },
        { "{\"max_tokens\": -1}",        "max_tokens",  "integer" },
        { "{\"max_tokens\": 0}",         "max_tokens",  "at least 1 (one over the server's --max-tokens, 256, is cut to it)" },
        { "{\"max_completion_tokens\": 0}", "max_completion_tokens", "integer of at least 1" },
        { "{\"max_tokens\": 1.5}",       "max_tokens",  "integer" },
        { "{\"temperature\": 2.5}",      "temperature", "0..2" },
        { "{\"temperature\": \"hot\"}",  "temperature", "number" },
        { "{\"top_p\": 0}",              "top_p",       "(0, 1]" },
        { "{\"seed\": 1.5}",             "seed",        "integer" },
        { "{\"stop\": 5}",               "stop",        "string" },
        { "{\"stop\": [\"\"]}",          "stop",        "1..256 bytes" },
        { "{\"stop\": [\"a\",\"b\",\"c\",\"d\",\"e\"]}", "stop", "at most 4" },
        { "{\"stream\": \"yes\"}",       "stream",      "true or false" },
        { "{\"prompt\": 5}",             "prompt",      "string" },
        { "{\"prompt\": [\"a\", \"b\"]}", "prompt",     "string" },
        { "{\"n\": 3}",                  "n",           "'n': 1" },
        { "{\"logprobs\": 2}",           "logprobs",    "not supported" },
        { "{\"model\": 7}",              "model",       "string" },
        { "[1, 2]",                      NULL,          "JSON object" },
        { "{\"prompt\": \"a\"",          NULL,          "invalid JSON" },
        { "{\"a\": 1, \"a\": 2}",        NULL,          "invalid JSON" },
        { "{\"seed\": 99999999999999999999999}", NULL,  "invalid JSON" },
        { "{\"prompt\": \"\xff\"}",      NULL,          "invalid JSON" },
        { "{\"prompt\": \"a\\u0000b\"}", NULL,          "invalid JSON" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        srv_http_req r;
        char err[300];
        const char *param = "unset";
        int rc = srv_parse_completion(bad[i].body, strlen(bad[i].body), &lim, NULL, &r, err,
                                      sizeof err, &param);
        if (rc != -1 || !strstr(err, bad[i].msg) ||
            (bad[i].param ? !param || strcmp(param, bad[i].param) : param != NULL))
            fail_msg("%s: rc %d, param %s, err '%s'", bad[i].body, rc, param ? param : "NULL", err);
        assert_null(r.cmd);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pieces_pass_through),
        cmocka_unit_test(utf8_is_assembled),
        cmocka_unit_test(bad_bytes_become_replacement),
        cmocka_unit_test(control_bytes_are_dropped),
        cmocka_unit_test(print_follows_the_one_rule),
        cmocka_unit_test(stop_strings_hold_then_cut),
        cmocka_unit_test(chat_template_is_as_documented),
        cmocka_unit_test(request_fields_are_read),
        cmocka_unit_test(bad_requests_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
