/*
 * chat_template.c - chat templates without a Jinja engine: a template's
 * family recognised by the text it contains, and conversations formatted
 * natively to the bytes the model's own template renders (tessera.h,
 * "Chat templates", has the contract; docs/server.md the table).
 *
 * Sources of the formats (the templates as the models ship them):
 *   chatml  Qwen/Qwen2.5-7B-Instruct            (../shared/vocab/, .jinja)
 *   llama3  meta-llama/Llama-3.2-3B-Instruct    (../shared/vocab/, .jinja)
 *   phi3    microsoft/Phi-3.5-mini-instruct     (../shared/vocab/, .jinja)
 *   llama2  meta-llama/Llama-2-7b-chat-hf       (tests/fixtures/chat/)
 *   gemma   google/gemma-3 instruct, text only  (tests/fixtures/chat/)
 * The recognising substrings are the ones llama.cpp's
 * llm_chat_detect_template looks for (src/llama-chat.cpp).
 *
 * Output goes through one bounded writer (snprintf's contract: the whole
 * length is counted, what fits is written), so one pass both measures and
 * formats.
 */
#include <stdint.h>
#include <string.h>

#include "abi.h"
#include "tessera.h"

/* ------------------------------------------------------------ families --- */

typedef enum { F_PLAIN, F_CHATML, F_LLAMA3, F_LLAMA2, F_LLAMA2_SYS, F_PHI3, F_GEMMA, F_COUNT } family;

static const char *const family_name[F_COUNT] = {
    "plain", "chatml", "llama3", "llama2", "llama2-sys", "phi3", "gemma",
};

const char *tsr_chat_template_list(void)
{
    return "plain, chatml, llama3, llama2, llama2-sys, phi3, gemma";
}

static int family_of(const char *name)
{
    if (!name) return -1;
    for (int f = 0; f < F_COUNT; f++)
        if (!strcmp(name, family_name[f])) return f;
    return -1;
}

const char *tsr_chat_template_find(const char *name)
{
    int f = family_of(name);
    return f < 0 ? NULL : family_name[f];
}

/* ---------------------------------------------------------- recognition --- */

static int has(const char *text, const char *s) { return strstr(text, s) != NULL; }

const char *tsr_chat_template_detect(const char *t)
{
    if (!t) return NULL;
    if (has(t, "<|im_start|>"))   /* Phi-4 marks its roles with <|im_sep|>: not ChatML */
        return has(t, "<|im_sep|>") ? NULL : family_name[F_CHATML];
    if (has(t, "[INST]")) {
        /* Mistral's templates share [INST] but not Llama 2's layout */
        if (has(t, "[SYSTEM_PROMPT]") || has(t, "[AVAILABLE_TOOLS]") ||
            has(t, "' [INST] ' + system_message"))
            return NULL;
        return family_name[has(t, "<<SYS>>") ? F_LLAMA2_SYS : F_LLAMA2];
    }
    if (has(t, "<|assistant|>") && has(t, "<|end|>")) return family_name[F_PHI3];
    if (has(t, "<start_of_turn>")) return family_name[F_GEMMA];
    if (has(t, "<|start_header_id|>") && has(t, "<|end_header_id|>")) return family_name[F_LLAMA3];
    return NULL;
}

/* ------------------------------------------------------------- details --- */

/* What a family's templates differ in, read from the template's text. */
typedef struct details {
    const char *dsys;        /* chatml: the default system message as the
                                template's string literal spells it (escapes
                                not yet undone), dsys_n bytes; NULL: none   */
    size_t      dsys_n;
    int         date_header; /* llama3: the "Cutting Knowledge Date" lines */
    const char *date;        /* llama3: date_string's default, date_n bytes */
    size_t      date_n;
    int         bos_between; /* llama2: "<s>" before each later [INST]     */
    int         strip;       /* llama2: contents stripped                  */
    int         eos_last;    /* phi3: eos_token text without a prompt      */
} details;

/* chatml: the first string literal that holds '<|im_start|>system' + a
 * newline + TEXT + '<|im_end|>' whole, TEXT not empty (Qwen2.5: in the
 * branch for a conversation without a system message). */
static void find_default_system(const char *t, details *d)
{
    static const char open[] = "<|im_start|>system";
    for (const char *p = strstr(t, open); p; p = strstr(p + 1, open)) {
        if (p == t || (p[-1] != '\'' && p[-1] != '"')) continue;
        char quote = p[-1];
        const char *q = p + sizeof open - 1;
        if (q[0] == '\\' && q[1] == 'n') q += 2;
        else if (q[0] == '\n') q += 1;
        else continue;
        /* the literal's end: the closing quote, stepping over escapes */
        const char *e = q;
        while (*e && *e != quote) e += (e[0] == '\\' && e[1]) ? 2 : 1;
        if (!*e) continue;
        const char *end = NULL;   /* the last <|im_end|> inside the literal */
        for (const char *m = strstr(q, "<|im_end|>"); m && m < e; m = strstr(m + 1, "<|im_end|>"))
            end = m;
        if (!end || end == q) continue;
        d->dsys = q;
        d->dsys_n = (size_t)(end - q);
        return;
    }
}

/* llama3: date_string's default, `set date_string = "26 Jul 2024"`. */
static void find_date(const char *t, details *d)
{
    d->date = "26 Jul 2024";
    d->date_n = 11;
    for (const char *p = strstr(t, "date_string = "); p; p = strstr(p + 1, "date_string = ")) {
        const char *q = p + 14;
        if (*q != '"' && *q != '\'') continue;
        const char *e = strchr(q + 1, *q);
        if (!e || e == q + 1 || e - q > 64 || memchr(q + 1, '\\', (size_t)(e - q - 1))) continue;
        d->date = q + 1;
        d->date_n = (size_t)(e - q - 1);
        return;
    }
}

static details read_details(int f, const char *t)
{
    details d = { 0 };
    if (!t) {   /* the family's reference template */
        d.bos_between = d.strip = d.eos_last = 1;
        return d;
    }
    if (f == F_CHATML) find_default_system(t, &d);
    if (f == F_LLAMA3 && has(t, "Cutting Knowledge Date")) {
        d.date_header = 1;
        find_date(t, &d);
    }
    d.bos_between = has(t, "bos_token + '[INST]") || has(t, "bos_token + \"[INST]");
    d.strip = has(t, ".strip()") || has(t, "trim");
    d.eos_last = has(t, "eos_token");
    return d;
}

/* -------------------------------------------------------------- writer --- */

typedef struct out {
    char  *buf;   // (cap,) the caller's
    size_t cap;
    size_t len;   // bytes of the whole text so far, written or not
} out;

static void put_n(out *o, const char *s, size_t n)
{
    if (o->cap && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void put(out *o, const char *s) { put_n(o, s, strlen(s)); }

/* A Jinja string literal's text with its escapes undone (\n \t \r \\ \'
 * \"; any other backslash stays, as Python's unicode-escape keeps it). */
static void put_literal(out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) { put_n(o, s + i, 1); continue; }
        char c = s[++i];
        const char *r = c == 'n' ? "\n" : c == 't' ? "\t" : c == 'r' ? "\r" :
                        c == '\\' ? "\\" : c == '\'' ? "'" : c == '"' ? "\"" : NULL;
        if (r) put(o, r);
        else put_n(o, s + i - 1, 2);
    }
}

/* ----------------------------------------------------------- white space --- */

/* The code point of the UTF-8 character at s (n > 0 bytes left), its byte
 * count in *k; a malformed byte is -1 with *k 1. */
static long decode(const unsigned char *s, size_t n, size_t *k)
{
    unsigned c = s[0];
    size_t m = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 4;
    *k = 1;
    if (m == 0) return c;
    if (m == 4 || m >= n) return -1;
    long v = c & (0x3f >> m);
    for (size_t i = 1; i <= m; i++) {
        if ((s[i] & 0xc0) != 0x80) return -1;
        v = (v << 6) | (s[i] & 0x3f);
    }
    *k = m + 1;
    return v;
}

/* Python's str.isspace(), what jinja's trim and str.strip() remove. */
static int py_space(long c)
{
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Bytes of white space at the front of s (n bytes). */
static size_t space_front(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, k;
    while (a < n && py_space(decode(u + a, n - a, &k))) a += k;
    return a;
}

/* Bytes of white space at the end of s (n bytes). */
static size_t space_back(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t b = n, k;
    while (b > 0) {
        size_t st = b - 1;   /* the last character's first byte */
        while (st > 0 && (u[st] & 0xc0) == 0x80 && b - st < 4) st--;
        long c = decode(u + st, b - st, &k);
        if (st + k != b) c = -1, st = b - 1;   /* malformed: that byte alone */
        if (!py_space(c)) break;
        b = st;
    }
    return n - b;
}

/* A turn's content made of pieces (seg, n of them), written whole or, with
 * strip, as Python's (seg[0] + ... + seg[n-1]).strip() (Llama 2 chat
 * strips '<<SYS>>...<</SYS>>' + the first message as one string). */
typedef struct seg { const char *p; size_t n; } seg;

static void put_segs(out *o, seg *s, int n, int strip)
{
    if (strip) {
        int i = 0, j = n - 1;
        size_t a;
        while (i < n && (a = space_front(s[i].p, s[i].n)) == s[i].n) i++;
        if (i == n) return;   /* all white space */
        s[i].p += a;
        s[i].n -= a;
        while (space_back(s[j].p, s[j].n) == s[j].n) j--;
        s[j].n -= space_back(s[j].p, s[j].n);
        s += i;
        n = j - i + 1;
    }
    for (int k = 0; k < n; k++) put_n(o, s[k].p, s[k].n);
}

static void put_trimmed(out *o, const char *text)
{
    seg s = { text, strlen(text) };
    put_segs(o, &s, 1, 1);
}

/* ----------------------------------------------------------- formatting --- */

enum { R_SYSTEM, R_USER, R_ASSISTANT };

static int role_of(const char *r)
{
    if (!strcmp(r, "system") || !strcmp(r, "developer")) return R_SYSTEM;
    if (!strcmp(r, "user")) return R_USER;
    if (!strcmp(r, "assistant")) return R_ASSISTANT;
    return -1;
}

typedef struct conv {
    const char *m;   // (n,) the caller's messages, stride bytes apart; roles checked
    size_t stride;   // the caller's sizeof(tsr_chat_msg) (tessera.h, Growing structs)
    int n;
} conv;

/* Message i: role and content sit within the bytes every version has. */
static const tsr_chat_msg *msg(const conv *c, int i)
{
    return (const tsr_chat_msg *)(const void *)(c->m + (size_t)i * c->stride);
}

static int role(const conv *c, int i) { return role_of(msg(c, i)->role); }

static void fmt_plain(out *o, const conv *c, int gen)
{
    static const char *const pre[] = { "", "User: ", "Assistant: " };
    static const char *const post[] = { "\n\n", "\n", "\n" };
    for (int i = 0; i < c->n; i++) {
        put(o, pre[role(c, i)]);
        put(o, msg(c, i)->content);
        put(o, post[role(c, i)]);
    }
    if (gen) put(o, "Assistant:");
}

static const char *const role_word[] = { "system", "user", "assistant" };

/* Qwen2.5: the first system message, or the template's default; then
 * every other message as its own turn. */
static void fmt_chatml(out *o, const conv *c, const details *d, int gen)
{
    if ((c->n == 0 || role(c, 0) != R_SYSTEM) && d->dsys) {
        put(o, "<|im_start|>system\n");
        put_literal(o, d->dsys, d->dsys_n);
        put(o, "<|im_end|>\n");
    }
    for (int i = 0; i < c->n; i++) {
        put(o, "<|im_start|>");
        put(o, role_word[role(c, i)]);
        put(o, "\n");
        put(o, msg(c, i)->content);
        put(o, "<|im_end|>\n");
    }
    if (gen) put(o, "<|im_start|>assistant\n");
}

/* Llama 3.2: a system turn always first (its header lines, then the
 * system message trimmed), the turns trimmed.  Llama 3.0: the turns only. */
static void fmt_llama3(out *o, const conv *c, const details *d, int gen)
{
    int i = 0;
    if (d->date_header) {
        put(o, "<|start_header_id|>system<|end_header_id|>\n\n"
               "Cutting Knowledge Date: December 2023\nToday Date: ");
        put_n(o, d->date, d->date_n);
        put(o, "\n\n");
        if (c->n > 0 && role(c, 0) == R_SYSTEM) put_trimmed(o, msg(c, i++)->content);
        put(o, "<|eot_id|>");
    }
    for (; i < c->n; i++) {
        put(o, "<|start_header_id|>");
        put(o, role_word[role(c, i)]);
        put(o, "<|end_header_id|>\n\n");
        put_trimmed(o, msg(c, i)->content);
        put(o, "<|eot_id|>");
    }
    if (gen) put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Llama 2 chat: [INST] user [/INST] assistant </s>, msgs[0]'s system text
 * opening the first turn; the opening BOS is the tokenizer's. */
static void fmt_llama2(out *o, const conv *c, const details *d, int sys_block)
{
    int i = 0;
    const char *sys = NULL;
    if (c->n > 0 && role(c, 0) == R_SYSTEM) sys = msg(c, i++)->content;
    for (int first = 1; i < c->n; i++, first = 0) {
        /* the content, after the system text on the first turn */
        seg s[4];
        int n = 0;
        if (first && sys && sys_block) {
            s[n++] = (seg){ "<<SYS>>\n", 8 };
            s[n++] = (seg){ sys, strlen(sys) };
            s[n++] = (seg){ "\n<</SYS>>\n\n", 11 };
        } else if (first && sys) {
            s[n++] = (seg){ sys, strlen(sys) };
            s[n++] = (seg){ "\n", 1 };
        }
        s[n++] = (seg){ msg(c, i)->content, strlen(msg(c, i)->content) };
        if (role(c, i) == R_ASSISTANT) {
            put(o, " ");
            put_segs(o, s, n, d->strip);
            put(o, " </s>");
        } else {
            if (o->len > 0 && d->bos_between) put(o, "<s>");
            put(o, "[INST] ");
            put_segs(o, s, n, d->strip);
            put(o, " [/INST]");
        }
    }
}

/* Phi-3.5: empty system messages are left out; without a generation
 * prompt the template ends with its eos_token. */
static void fmt_phi3(out *o, const conv *c, const details *d, int gen)
{
    static const char *const tag[] = { "<|system|>\n", "<|user|>\n", "<|assistant|>\n" };
    for (int i = 0; i < c->n; i++) {
        if (role(c, i) == R_SYSTEM && !msg(c, i)->content[0]) continue;
        put(o, tag[role(c, i)]);
        put(o, msg(c, i)->content);
        put(o, "<|end|>\n");
    }
    if (gen) put(o, "<|assistant|>\n");
    else if (d->eos_last) put(o, "<|endoftext|>");
}

/* Gemma 3: msgs[0]'s system text + "\n\n" opens the next turn; the
 * assistant is "model"; contents trimmed. */
static void fmt_gemma(out *o, const conv *c, int gen)
{
    int i = 0;
    const char *sys = NULL;
    if (c->n > 0 && role(c, 0) == R_SYSTEM) sys = msg(c, i++)->content;
    for (int first = 1; i < c->n; i++, first = 0) {
        put(o, "<start_of_turn>");
        put(o, role(c, i) == R_ASSISTANT ? "model" : "user");
        put(o, "\n");
        if (first && sys) { put(o, sys); put(o, "\n\n"); }
        put_trimmed(o, msg(c, i)->content);
        put(o, "<end_of_turn>\n");
    }
    if (gen) put(o, "<start_of_turn>model\n");
}

/* Each message of c: the size of the first (tessera.h, Growing
 * structs), a role of the four and a content, zero reserved words. */
static int conv_ok(const conv *c)
{
    for (int i = 0; i < c->n; i++) {
        tsr_chat_msg m;   /* the caller's size bytes of message i, checked */
        if (tsr_abi_size(&tsr_abi_chat_msg, msg(c, i)) != c->stride) return TSR_ERR_ARG;
        int rc = tsr_abi_read(&tsr_abi_chat_msg, msg(c, i), &m, NULL);
        if (rc) return rc;
        if (!m.role || !m.content || role_of(m.role) < 0) return TSR_ERR_ARG;
        if (m.reserved[0] || m.reserved[1]) return TSR_ERR_UNSUPPORTED;
    }
    return TSR_OK;
}

int tsr_chat_format(const char *fam, const char *tmpl, const tsr_chat_msg *msgs, int n_msgs,
                    int add_generation_prompt, char *buf, size_t cap, size_t *len)
{
    if (!len) return TSR_ERR_ARG;
    *len = 0;
    if (cap > 0 && buf) buf[0] = '\0';
    if (n_msgs < 0 || (n_msgs > 0 && !msgs) || (cap > 0 && !buf)) return TSR_ERR_ARG;
    int f = fam ? family_of(fam) : family_of(tsr_chat_template_detect(tmpl));
    if (!fam && f < 0) f = F_PLAIN;
    if (f < 0) return TSR_ERR_ARG;
    conv c = { (const char *)msgs, n_msgs > 0 ? tsr_abi_size(&tsr_abi_chat_msg, msgs) : 0,
               n_msgs };
    int rc = conv_ok(&c);
    if (rc) return rc;
    details d = read_details(f, tmpl);
    int gen = add_generation_prompt != 0;
    out o = { .buf = buf, .cap = cap };
    switch (f) {
    case F_PLAIN:      fmt_plain(&o, &c, gen); break;
    case F_CHATML:     fmt_chatml(&o, &c, &d, gen); break;
    case F_LLAMA3:     fmt_llama3(&o, &c, &d, gen); break;
    case F_LLAMA2:     fmt_llama2(&o, &c, &d, 0); break;
    case F_LLAMA2_SYS: fmt_llama2(&o, &c, &d, 1); break;
    case F_PHI3:       fmt_phi3(&o, &c, &d, gen); break;
    default:           fmt_gemma(&o, &c, gen); break;
    }
    if (cap) buf[o.len < cap ? o.len : cap - 1] = '\0';
    *len = o.len;
    return o.len < cap ? TSR_OK : TSR_ERR_RANGE;
}
