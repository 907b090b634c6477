/* cli.h - the tessera program's subcommands and their shared helpers.
 * host/ talks to the library only through the public header tessera.h. */
#ifndef TSR_CLI_H
#define TSR_CLI_H

#include <stdint.h>

#include "tessera.h"

/* Each subcommand takes argv after the subcommand name; returns the exit
 * status (0 ok, 1 runtime failure, 2 usage error). */
int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plan(int argc, char **argv);    /* host/cmd_plan.c */

/* Flush stdout; on a write error (a full disk, a closed pipe) print it and
 * return -1. */
int cli_flush_stdout(void);

/* Print "tessera: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse an int / float / u64 option value; on a bad value print an error
 * naming the option and return -1. */
int cli_int(const char *opt, const char *val, int lo, int hi, int *out);
int cli_float(const char *opt, const char *val, float lo, float hi, float *out);
int cli_u64(const char *opt, const char *val, uint64_t *out);

/* Parse --weights q8|f32 into *f32 (0 or 1); -1 after an error. */
int cli_weights(const char *opt, const char *val, int *f32);

/* The value of option argv[*i] (advancing *i), or NULL after printing an
 * error when it is missing. */
const char *cli_value(int argc, char **argv, int *i);

#endif
