/* serve_proc.c - run `tessera serve` from a test on a free loopback port. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve_proc.h"

int serve_start(serve_proc *p, const char *bin, const char *args)
{
    memset(p, 0, sizeof *p);
    snprintf(p->errpath, sizeof p->errpath, "/tmp/tsr_serve_err_XXXXXX");
    int fe = mkstemp(p->errpath), fd[2];
    if (fe < 0 || pipe(fd) != 0) return -1;
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "exec %s serve %s --port 0", bin, args);
    p->pid = fork();
    if (p->pid < 0) return -1;
    if (p->pid == 0) {
        dup2(fd[1], 1);
        dup2(fe, 2);
        close(fd[0]);
        close(fd[1]);
        close(fe);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    close(fe);
    p->out = fd[0];
    char line[512];
    size_t n = 0;
    time_t until = time(NULL) + 60;
    while (time(NULL) < until && n + 1 < sizeof line) {
        struct pollfd pf = { .fd = p->out, .events = POLLIN };
        if (poll(&pf, 1, 200) <= 0) continue;
        ssize_t got = read(p->out, line + n, sizeof line - 1 - n);
        if (got <= 0) break;                       /* it exited */
        n += (size_t)got;
        line[n] = '\0';
        const char *at = strstr(line, "http://127.0.0.1:");
        if (at && strchr(at, '\n')) {
            p->port = atoi(at + strlen("http://127.0.0.1:"));
            snprintf(p->url, sizeof p->url, "http://127.0.0.1:%d", p->port);
            return 0;
        }
    }
    serve_stop(p);
    return -1;
}

int serve_stop(serve_proc *p)
{
    if (p->pid <= 0) return -1;
    kill(p->pid, SIGTERM);
    int st = 0, by_itself = 0;
    for (int i = 0; i < 3000; i++) {               /* 30 s */
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) { by_itself = 1; break; }
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (!by_itself) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
    }
    if (p->out > 0) close(p->out);
    p->pid = 0;
    return by_itself && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
