/* serve_proc.h - run `tessera serve` from a test on a free loopback port. */
#ifndef TSR_SERVE_PROC_H
#define TSR_SERVE_PROC_H

#include <sys/types.h>

typedef struct serve_proc {
    pid_t pid;
    int   out;          /* the server's stdout (a pipe)            */
    int   port;
    char  url[64];      /* "http://127.0.0.1:PORT"                  */
    char  errpath[64];  /* where its stderr goes                    */
} serve_proc;

/* Start "tessera serve ARGS --port 0" (tessera at bin) and wait, at most
 * 60 s, for the line that names the port.  Returns 0, or -1 when it exited
 * or never said (then p->errpath holds its stderr). */
int serve_start(serve_proc *p, const char *bin, const char *args);

/* SIGTERM; wait at most 30 s (then SIGKILL).  Returns the exit status, or
 * -1 when it did not exit by itself.  p->errpath stays for the caller
 * to read and unlink. */
int serve_stop(serve_proc *p);

#endif
