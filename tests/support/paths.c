/* paths.c - where the tests find the shared model files (test_util.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static char shared[4096];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_shared(void)
{
    const char *env = getenv("TSR_SHARED");
    snprintf(shared, sizeof shared, "%s", env && *env ? env : TSR_SOURCE_DIR "/../shared");
    size_t n = strlen(shared);
    while (n > 1 && shared[n - 1] == '/') shared[--n] = '\0';
    setenv("TSR_SHARED", shared, 1);   /* for the shell commands tests run */
}

/* At start, so that a shell command run before any C path sees it. */
__attribute__((constructor)) static void export_shared(void) { pthread_once(&once, find_shared); }

const char *tsr_test_shared(void)
{
    pthread_once(&once, find_shared);
    return shared;
}

/* Interned paths: a few dozen distinct names per program, kept until exit. */
typedef struct entry { char *rel, *path; struct entry *next; } entry;
static entry *paths;
static pthread_mutex_t paths_mu = PTHREAD_MUTEX_INITIALIZER;

const char *tsr_test_path(const char *rel)
{
    const char *dir = tsr_test_shared();
    pthread_mutex_lock(&paths_mu);
    entry *e = paths;
    while (e && strcmp(e->rel, rel) != 0) e = e->next;
    if (!e && (e = calloc(1, sizeof *e))) {
        size_t n = strlen(dir) + 1 + strlen(rel) + 1;
        e->rel = strdup(rel);
        e->path = malloc(n);
        if (e->rel && e->path) {
            snprintf(e->path, n, "%s/%s", dir, rel);
            e->next = paths;
            paths = e;
        } else {
            free(e->rel); free(e->path); free(e);
            e = NULL;
        }
    }
    pthread_mutex_unlock(&paths_mu);
    if (!e) { fputs("tsr_test_path: out of memory\n", stderr); abort(); }
    return e->path;
}
