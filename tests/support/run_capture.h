/* run_capture.h - run a shell command from a test and capture its output. */
#ifndef TSR_RUN_CAPTURE_H
#define TSR_RUN_CAPTURE_H

#include <stddef.h>

/* Run cmd through the shell; out and err (cap bytes each) get its stdout and
 * stderr, NUL-terminated and truncated to cap - 1 bytes.  Returns the exit
 * status, or -1 when it did not exit normally.  Fails the calling CMocka
 * test if the temporary files cannot be made or read. */
int run_capture(const char *cmd, char *out, char *err, size_t cap);

/* Newlines in s. */
int count_lines(const char *s);

/* Lines of s (the last may lack its newline) that contain needle. */
int lines_containing(const char *s, const char *needle);

#endif
