/*
 * test_chat_template.c - chat templates: the family recognised from the
 * models' own templates (the .jinja files in ../shared/vocab, read at run time), the
 * conversations formatted to the bytes those templates render, the GGUF
 * key read into the model, and tessera chat / serve's --chat-template.
 *
 * The expected strings are what jinja2 3.1 renders from each template (as
 * Hugging Face transformers sets jinja2 up: trim_blocks, lstrip_blocks; no
 * strftime_now) for the same messages, minus the opening BOS text the
 * Llama and Gemma templates emit (the tokenizer adds BOS).  They are
 * frozen here; tests/serve/test_chat_template.py renders the templates
 * live and compares them with tsr_chat_format on more conversations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_write.h"
#include "run_capture.h"
#include "tessera.h"
#include "test_util.h"

#define VOCAB(name)   tsr_test_path("vocab/" name)
#define FIXTURE(name) TSR_SOURCE_DIR "/tests/fixtures/chat/" name
#define QWEN   VOCAB("Qwen-Qwen2.5-7B-Instruct.jinja")
#define LLAMA3 VOCAB("meta-llama-Llama-3.2-3B-Instruct.jinja")
#define PHI35  VOCAB("microsoft-Phi-3.5-mini-instruct.jinja")
/* Llama 2 chat's template (meta-llama/Llama-2-7b-chat-hf) and Gemma 3's
 * (google/gemma-3 instruct models), the latter cut to text messages */
#define LLAMA2 FIXTURE("llama2-chat.jinja")
#define GEMMA  FIXTURE("gemma.jinja")

static char out[1 << 16], err[1 << 16];

/* ------------------------------------------------------------ helpers --- */

/* The whole file, NUL-terminated (malloc'd); fails the test when absent. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) print_error("cannot read %s (the shared folder: TSR_SHARED)\n", path);
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* A system message, two user turns with one assistant reply between. */
static const tsr_chat_msg conv4[] = {
    { .role = "system",    .content = "You are a terse assistant." },
    { .role = "user",      .content = "Hello!" },
    { .role = "assistant", .content = "Hi. How can I help?" },
    { .role = "user",      .content = "Name three colours." },
};

/* tsr_chat_format into a static buffer, which it returns. */
static const char *format(const char *family, const char *tmpl, const tsr_chat_msg *m, int n,
                          int gen)
{
    static char buf[1 << 14];
    size_t len = 0;
    int rc = tsr_chat_format(family, tmpl, m, n, gen, buf, sizeof buf, &len);
    assert_int_equal(rc, TSR_OK);
    assert_int_equal(strlen(buf), len);
    return buf;
}

/* ---------------------------------------------- the models' templates --- */

static void qwen25_is_chatml(void **state)
{
    (void)state;
    char *t = slurp(QWEN);
    assert_string_equal(tsr_chat_template_detect(t), "chatml");
    assert_string_equal(format(NULL, t, conv4, 4, 1),
        "<|im_start|>system\nYou are a terse assistant.<|im_end|>\n"
        "<|im_start|>user\nHello!<|im_end|>\n"
        "<|im_start|>assistant\nHi. How can I help?<|im_end|>\n"
        "<|im_start|>user\nName three colours.<|im_end|>\n"
        "<|im_start|>assistant\n");
    /* no system message: the template's own, and contents untrimmed */
    const tsr_chat_msg u[] = { { .role = "user", .content = "  Hello!\n" } };
    assert_string_equal(format("chatml", t, u, 1, 1),
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\n  Hello!\n<|im_end|>\n<|im_start|>assistant\n");
    /* ChatML without Qwen's text has no default system message */
    assert_string_equal(format("chatml", NULL, u, 1, 0),
                        "<|im_start|>user\n  Hello!\n<|im_end|>\n");
    free(t);
}

static void llama32_is_llama3_with_its_date_header(void **state)
{
    (void)state;
    char *t = slurp(LLAMA3);
    assert_string_equal(tsr_chat_template_detect(t), "llama3");
    /* jinja2 renders "<|begin_of_text|>" first: the tokenizer's BOS */
    assert_string_equal(format(NULL, t, conv4, 4, 1),
        "<|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
        "You are a terse assistant.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHi. How can I help?<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nName three colours.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
    /* no system message: the header alone; contents trimmed */
    const tsr_chat_msg u[] = { { .role = "user", .content = "  Hello!\n" } };
    assert_string_equal(format("llama3", t, u, 1, 1),
        "<|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
    /* Llama 3.0's (no template text): the turns only */
    assert_string_equal(format("llama3", NULL, u, 1, 0),
                        "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>");
    free(t);
}

static void phi35_is_phi3(void **state)
{
    (void)state;
    char *t = slurp(PHI35);
    assert_string_equal(tsr_chat_template_detect(t), "phi3");
    assert_string_equal(format(NULL, t, conv4, 4, 1),
        "<|system|>\nYou are a terse assistant.<|end|>\n<|user|>\nHello!<|end|>\n"
        "<|assistant|>\nHi. How can I help?<|end|>\n<|user|>\nName three colours.<|end|>\n"
        "<|assistant|>\n");
    /* without the prompt the template ends with eos_token; an empty system
     * message is left out */
    const tsr_chat_msg m[] = { { .role = "system", .content = "" },
                               { .role = "user", .content = "x" } };
    assert_string_equal(format("phi3", t, m, 2, 0), "<|user|>\nx<|end|>\n<|endoftext|>");
    free(t);
}

/* Llama 2 chat's template: the system text in <<SYS>> inside the first
 * turn, BOS text before each later [INST], contents stripped. */
static void llama2_chat_is_llama2_sys(void **state)
{
    (void)state;
    char *t = slurp(LLAMA2);
    assert_string_equal(tsr_chat_template_detect(t), "llama2-sys");
    assert_string_equal(format(NULL, t, conv4, 4, 1),
        "[INST] <<SYS>>\nYou are a terse assistant.\n<</SYS>>\n\nHello! [/INST] Hi. How can I "
        "help? </s><s>[INST] Name three colours. [/INST]");
    /* a blank first message: the whole "<<SYS>>...\n\n" + "   " stripped */
    const tsr_chat_msg m[] = { { .role = "system", .content = "   " },
                               { .role = "user", .content = "   " } };
    assert_string_equal(format(NULL, t, m, 2, 1), "[INST] <<SYS>>\n   \n<</SYS>> [/INST]");
    free(t);
    /* A short Llama-2-style snippet without <<SYS>>, bos_token or strip()
     * (what a community fine-tune's template looks like): the system
     * text as a line of the first turn, nothing between turns. */
    const char *plain_inst = "{% for m in messages %}{% if m['role'] == 'user' %}"
                             "{{ '[INST] ' + m['content'] + ' [/INST]' }}{% else %}"
                             "{{ ' ' + m['content'] + ' </s>' }}{% endif %}{% endfor %}";
    assert_string_equal(tsr_chat_template_detect(plain_inst), "llama2");
    assert_string_equal(format(NULL, plain_inst, conv4, 4, 1),
        "[INST] You are a terse assistant.\nHello! [/INST] Hi. How can I help? </s>"
        "[INST] Name three colours. [/INST]");
}

/* Gemma 3's template: the assistant is "model", the system text opens the
 * first turn. */
static void gemma3_is_gemma(void **state)
{
    (void)state;
    char *t = slurp(GEMMA);
    assert_string_equal(tsr_chat_template_detect(t), "gemma");
    assert_string_equal(format(NULL, t, conv4, 4, 1),
        "<start_of_turn>user\nYou are a terse assistant.\n\nHello!<end_of_turn>\n"
        "<start_of_turn>model\nHi. How can I help?<end_of_turn>\n"
        "<start_of_turn>user\nName three colours.<end_of_turn>\n<start_of_turn>model\n");
    free(t);
    /* the short snippet Gemma 1 and 2 share (their templates refuse a
     * system message; the turns are the same) */
    const char *g2 = "{{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + "
                     "message['role'] + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
                     "{% endfor %}";
    assert_string_equal(tsr_chat_template_detect(g2), "gemma");
    assert_string_equal(format(NULL, g2, conv4 + 1, 1, 0), "<start_of_turn>user\nHello!<end_of_turn>\n");
}

/* ---------------------------------------------------- the other cases --- */

/* Phi-4 (ChatML words, <|im_sep|>), Mistral v7 and anything else are of no
 * family: NULL, and tsr_chat_format with no family formats them plain. */
static void unrecognised_falls_back_to_plain(void **state)
{
    (void)state;
    assert_null(tsr_chat_template_detect("{{ '<|im_start|>' + m['role'] + '<|im_sep|>' }}"));
    assert_null(tsr_chat_template_detect("{{ '[SYSTEM_PROMPT]' }}{{ '[INST]' }}"));
    assert_null(tsr_chat_template_detect("{% for m in messages %}{{ m.content }}{% endfor %}"));
    assert_null(tsr_chat_template_detect(NULL));
    assert_string_equal(format(NULL, "{{ messages }}", conv4, 4, 1),
                        "You are a terse assistant.\n\nUser: Hello!\nAssistant: Hi. How can I "
                        "help?\nUser: Name three colours.\nAssistant:");
}

/* plain is the server's template of before, byte for byte; developer is a
 * system message in every family */
static void plain_and_developer(void **state)
{
    (void)state;
    const tsr_chat_msg m[] = { { .role = "developer", .content = "Be brief." },
                               { .role = "user", .content = "Hi" } };
    assert_string_equal(format("plain", NULL, m, 2, 1), "Be brief.\n\nUser: Hi\nAssistant:");
    assert_string_equal(format("plain", NULL, m, 2, 0), "Be brief.\n\nUser: Hi\n");
    assert_string_equal(format("chatml", NULL, m, 2, 0),
                        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
    assert_string_equal(tsr_chat_template_list(),
                        "plain, chatml, llama3, llama2, llama2-sys, phi3, gemma");
    assert_string_equal(tsr_chat_template_find("llama2-sys"), "llama2-sys");
    assert_null(tsr_chat_template_find("Llama3"));
    assert_null(tsr_chat_template_find(NULL));
}

/* The caller's buffer: the length always, the text when it fits, a
 * truncated NUL-terminated prefix with TSR_ERR_RANGE when not; refusals. */
static void buffer_and_errors(void **state)
{
    (void)state;
    size_t len = 99;
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, 4, 1, NULL, 0, &len), TSR_ERR_RANGE);
    assert_int_equal(len, strlen(format("plain", NULL, conv4, 4, 1)));
    char small[8];
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, 4, 1, small, sizeof small, &len),
                     TSR_ERR_RANGE);
    assert_string_equal(small, "You are");
    char exact[128];
    size_t need = len;
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, 4, 1, exact, need, &len), TSR_ERR_RANGE);
    assert_int_equal(strlen(exact), need - 1);
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, 4, 1, exact, need + 1, &len), TSR_OK);
    assert_int_equal(tsr_chat_format("plain", NULL, NULL, 0, 1, exact, sizeof exact, &len), TSR_OK);
    assert_string_equal(exact, "Assistant:");

    assert_int_equal(tsr_chat_format("llama4", NULL, conv4, 4, 1, exact, sizeof exact, &len),
                     TSR_ERR_ARG);
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, 4, 1, exact, sizeof exact, NULL),
                     TSR_ERR_ARG);
    assert_int_equal(tsr_chat_format("plain", NULL, conv4, -1, 1, exact, sizeof exact, &len),
                     TSR_ERR_ARG);
    assert_int_equal(tsr_chat_format("plain", NULL, NULL, 1, 1, exact, sizeof exact, &len),
                     TSR_ERR_ARG);
    tsr_chat_msg bad[] = { { .role = "tool", .content = "x" } };
    assert_int_equal(tsr_chat_format("plain", NULL, bad, 1, 1, exact, sizeof exact, &len),
                     TSR_ERR_ARG);
    bad[0].role = "user";
    bad[0].content = NULL;
    assert_int_equal(tsr_chat_format("plain", NULL, bad, 1, 1, exact, sizeof exact, &len),
                     TSR_ERR_ARG);
    bad[0].content = "x";
    bad[0].reserved[1] = 1;
    assert_int_equal(tsr_chat_format("plain", NULL, bad, 1, 1, exact, sizeof exact, &len),
                     TSR_ERR_UNSUPPORTED);
}

/* ------------------------------------------------------- from a model --- */

typedef struct logged { char lines[4][512]; int n; } logged;

static void keep_log(int level, const char *msg, void *user)
{
    logged *l = user;
    if (level <= TSR_LOG_WARN && l->n < 4) snprintf(l->lines[l->n++], sizeof l->lines[0], "%s", msg);
}

/* Load the tiny GGUF with tokenizer.chat_template = tmpl (NULL: none). */
static tsr_model *load_tiny(tsr_device *dev, const char *tmpl, logged *log)
{
    tsr_gbuf b = { 0 };
    tsr_gguf_spec sp = { .chat_template = tmpl };
    tsr_gguf_build(&b, &sp);
    char path[] = "/tmp/tsr_chat_tmpl_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    free(b.p);
    tsr_device_set_log(dev, keep_log, log);
    tsr_model_opts o = { .n_seqs = 1 };
    tsr_model *m = NULL;
    int rc = tsr_model_load(dev, path, &o, &m);
    unlink(path);
    if (rc) print_error("%s\n", tsr_device_errmsg(dev));
    assert_int_equal(rc, TSR_OK);
    return m;
}

static void gguf_template_reaches_the_model(void **state)
{
    (void)state;
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=2,threads=1", &dev), TSR_OK);
    char *qwen = slurp(QWEN);
    logged log = { 0 };
    tsr_model *m = load_tiny(dev, qwen, &log);
    const char *text = NULL;
    assert_string_equal(tsr_model_chat_template(m, &text), "chatml");
    assert_string_equal(text, qwen);
    assert_int_equal(log.n, 0);
    tsr_model_close(m);

    /* unrecognised: plain, and one warning line through the log hook */
    m = load_tiny(dev, "{{ messages }}", &log);
    assert_string_equal(tsr_model_chat_template(m, &text), "plain");
    assert_string_equal(text, "{{ messages }}");
    assert_int_equal(log.n, 1);
    assert_non_null(strstr(log.lines[0], "chat template not recognised (none of plain, chatml, "
                                         "llama3, llama2, llama2-sys, phi3, gemma): chats are "
                                         "formatted with plain"));
    tsr_model_close(m);

    /* none: plain, no text, nothing logged */
    log.n = 0;
    m = load_tiny(dev, NULL, &log);
    text = "x";
    assert_string_equal(tsr_model_chat_template(m, &text), "plain");
    assert_null(text);
    assert_int_equal(log.n, 0);
    tsr_device_close(dev);   /* the model's host side goes with it */
    assert_null(tsr_model_chat_template(m, &text));
    assert_null(text);
    tsr_model_close(m);
    assert_null(tsr_model_chat_template(NULL, NULL));
    free(qwen);
}

/* A NUL byte inside the template is a malformed file. */
static void gguf_template_with_nul_is_refused(void **state)
{
    (void)state;
    tsr_gbuf b = { 0 };
    tsr_gguf_spec sp = { .chat_template = "{{ a }}\0{{ b }}", .chat_template_len = 15 };
    tsr_gguf_build(&b, &sp);
    tsr_device *dev = NULL;
    assert_int_equal(tsr_device_open("emu:pes=2,threads=1", &dev), TSR_OK);
    tsr_model_opts o = { .n_seqs = 1 };
    tsr_model *m = NULL;
    assert_int_equal(tsr_model_load_memory(dev, b.p, b.n, &o, &m), TSR_ERR_FORMAT);
    assert_non_null(strstr(tsr_device_errmsg(dev), "tokenizer.chat_template holds a NUL byte"));
    tsr_device_close(dev);
    free(b.p);
}

/* ------------------------------------------------- --chat-template, CLI --- */

#define S260K " -m " SH_MODEL("stories260K.bin") " -z " SH_MODEL("tok512.bin")

/* tessera chat --chat-template chatml on a model without a template: the
 * line goes in as a ChatML user turn, so the reply is what tessera run
 * continues the formatted text with (greedy). */
static void chat_override_formats_the_line(void **state)
{
    (void)state;
    assert_int_equal(run_capture("printf 'Hi\\n' | " TESSERA_BIN " chat" S260K
                                 " --chat-template chatml -n 16 -t 0", out, err, sizeof out), 0);
    static char reply[sizeof out];
    memcpy(reply, out, sizeof out);
    assert_true(strlen(reply) > 1);
    reply[strlen(reply) - 1] = '\0';   /* chat's newline after the reply */
    /* tessera run from stdin (its one trailing newline dropped) prints
     * the prompt, then what it generates */
    static const char prompt[] = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    assert_int_equal(run_capture("printf '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>"
                                 "assistant\\n\\n' | " TESSERA_BIN " run" S260K
                                 " -t 0 -n 200 -p -", out, err, sizeof out), 0);
    assert_memory_equal(out, prompt, strlen(prompt));
    assert_memory_equal(out + strlen(prompt), reply, strlen(reply));
    /* the same line without the option: the typed text, continued */
    assert_int_equal(run_capture("printf 'Hi\\n' | " TESSERA_BIN " chat" S260K " -n 16 -t 0",
                                 out, err, sizeof out), 0);
    assert_true(strcmp(out, reply) != 0);
}

static void bad_name_is_one_line(void **state)
{
    (void)state;
    const char *want = "--chat-template 'chat-ml' is not a chat template family (one of: plain, "
                       "chatml, llama3, llama2, llama2-sys, phi3, gemma)\n";
    assert_int_equal(run_capture(TESSERA_BIN " chat" S260K " --chat-template chat-ml", out, err,
                                 sizeof out), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, want));
    assert_int_equal(run_capture(TESSERA_BIN " serve" S260K " --chat-template chat-ml", out, err,
                                 sizeof out), 2);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, want));
    /* and both --help texts name the option and the families */
    assert_int_equal(run_capture(TESSERA_BIN " chat --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "--chat-template NAME"));
    assert_non_null(strstr(out, "plain, chatml, llama3, llama2, llama2-sys, phi3, gemma"));
    assert_int_equal(run_capture(TESSERA_BIN " serve --help", out, err, sizeof out), 0);
    assert_non_null(strstr(out, "--chat-template NAME"));
    assert_non_null(strstr(out, "chatml, llama3, llama2, llama2-sys, phi3, gemma"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qwen25_is_chatml),
        cmocka_unit_test(llama32_is_llama3_with_its_date_header),
        cmocka_unit_test(phi35_is_phi3),
        cmocka_unit_test(llama2_chat_is_llama2_sys),
        cmocka_unit_test(gemma3_is_gemma),
        cmocka_unit_test(unrecognised_falls_back_to_plain),
        cmocka_unit_test(plain_and_developer),
        cmocka_unit_test(buffer_and_errors),
        cmocka_unit_test(gguf_template_reaches_the_model),
        cmocka_unit_test(gguf_template_with_nul_is_refused),
        cmocka_unit_test(chat_override_formats_the_line),
        cmocka_unit_test(bad_name_is_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
