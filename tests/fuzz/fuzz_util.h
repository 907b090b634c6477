/* fuzz_util.h - shared by the libFuzzer harnesses: hand an input to code
 * that reads a path.  One in-memory file (memfd) per process, rewritten
 * for each input, named through /proc/self/fd. */
#ifndef TSR_FUZZ_UTIL_H
#define TSR_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The path of a file that now holds data[0..n); NULL if it cannot be made. */
static inline const char *fuzz_file(const uint8_t *data, size_t n)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("tsr_fuzz", MFD_CLOEXEC);
        if (fd < 0) return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) return NULL;
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, data + done, n - done, (off_t)done);
        if (w <= 0) return NULL;
        done += (size_t)w;
    }
    return path;
}

/* A NUL-terminated copy of data[0..n) (free it). */
static inline char *fuzz_string(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    for (size_t i = 0; i < n; i++) s[i] = (char)data[i];
    s[n] = '\0';
    return s;
}

#endif
