/* bigstack.c - run a function on a thread with a large stack.
 *
 * Debian builds civetweb with 100 KB thread stacks (USE_STACK_SIZE), and
 * jansson parses and frees nested JSON recursively, up to its 2048 levels:
 * a body of a thousand '[' overflows a civetweb thread.  So everything
 * that touches a client's JSON tree (parse, check, free) runs here, on a
 * thread of its own with room for jansson's limit (glibc caches the
 * stacks, so a call costs a thread start, tens of microseconds). */
#include <pthread.h>

#include "serve.h"

#define BIG_STACK (8u << 20)   /* bytes: 2048 levels with ASan's redzones, and spare */

typedef struct job {
    void (*fn)(void *);
    void *arg;
} job;

static void *trampoline(void *p)
{
    job *j = p;
    j->fn(j->arg);
    return NULL;
}

/* A document's nesting is at most its count of '[' and '{' bytes: below
 * this many, jansson fits in civetweb's stack and no thread is needed
 * (at well under 200 bytes of stack a level). */
#define SHALLOW 128

int srv_json_shallow(const char *text, size_t len)
{
    size_t open = 0;
    for (size_t i = 0; i < len && open < SHALLOW; i++) open += text[i] == '[' || text[i] == '{';
    return open < SHALLOW;
}

int srv_on_big_stack(void (*fn)(void *), void *arg)
{
    job j = { fn, arg };
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0) return -1;
    int rc = pthread_attr_setstacksize(&attr, BIG_STACK);
    if (rc == 0) rc = pthread_create(&t, &attr, trampoline, &j);
    pthread_attr_destroy(&attr);
    if (rc != 0) return -1;
    pthread_join(t, NULL);
    return 0;
}
