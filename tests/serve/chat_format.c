/* chat_format.c - tsr_chat_format from the command line, for the suites
 * that hold it against the models' own Jinja templates (tests/serve/
 * test_chat_template.py renders them with jinja2).
 *
 *   chat_format [--template FILE] [--family NAME] [--no-generation-prompt]
 *               [--detect]
 *     stdin   the messages: a JSON array of {"role": ..., "content": ...}
 *     stdout  the formatted text, as it is (no newline added); with
 *             --detect, the family tsr_chat_template_detect gives FILE's
 *             text ("none" when it gives none), and nothing else
 * Exit 0, or 1 with the status on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <tessera.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    size_t got;
    while (s && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) { free(s); s = NULL; }
            else s = t;
        }
    }
    fclose(f);
    if (s) s[n] = '\0';
    return s;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *family = NULL;
    int gen = 1, detect = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--template") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--family") && i + 1 < argc) family = argv[++i];
        else if (!strcmp(argv[i], "--no-generation-prompt")) gen = 0;
        else if (!strcmp(argv[i], "--detect")) detect = 1;
        else { fprintf(stderr, "chat_format: bad argument %s\n", argv[i]); return 1; }
    }
    char *tmpl = file ? slurp(file) : NULL;
    if (file && !tmpl) { fprintf(stderr, "chat_format: cannot read %s\n", file); return 1; }
    if (detect) {
        const char *f = tsr_chat_template_detect(tmpl);
        fputs(f ? f : "none", stdout);
        free(tmpl);
        return 0;
    }
    json_error_t je;
    json_t *a = json_loadf(stdin, 0, &je);
    if (!json_is_array(a)) { fprintf(stderr, "chat_format: stdin: %s\n", je.text); return 1; }
    size_t n = json_array_size(a);
    tsr_chat_msg *m = calloc(n ? n : 1, sizeof *m);
    for (size_t i = 0; m && i < n; i++) {
        m[i].role = json_string_value(json_object_get(json_array_get(a, i), "role"));
        m[i].content = json_string_value(json_object_get(json_array_get(a, i), "content"));
    }
    size_t len = 0;
    int rc = m ? tsr_chat_format(family, tmpl, m, (int)n, gen, NULL, 0, &len) : TSR_ERR_NOMEM;
    char *buf = rc == TSR_ERR_RANGE ? malloc(len + 1) : NULL;
    if (buf) rc = tsr_chat_format(family, tmpl, m, (int)n, gen, buf, len + 1, &len);
    if (rc == TSR_OK) fwrite(buf, 1, len, stdout);
    else fprintf(stderr, "chat_format: %s\n", tsr_strerror(rc));
    free(buf);
    free(m);
    free(tmpl);
    json_decref(a);
    return rc == TSR_OK ? 0 : 1;
}
