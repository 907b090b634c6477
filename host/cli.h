/* cli.h - the tessera program's subcommands and their shared helpers.
 * host/ talks to the library only through the public header tessera.h. */
#ifndef TSR_CLI_H
#define TSR_CLI_H

#include <stddef.h>
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
int cmd_serve(int argc, char **argv);   /* host/cmd_serve.c, host/serve/ */

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

/* Parse --weights file|q8|q4|f32 into *f32 (1 for f32) and *format
 * (TSR_WEIGHTS_*); -1 after an error. */
int cli_weights(const char *opt, const char *val, int *f32, int *format);

/* Parse --kv f32|f16|int8 into *kv (the same string); -1 after an error. */
int cli_kv(const char *opt, const char *val, const char **kv);

/* Help text for --weights, --group-size and --kv, the same in every
 * command that loads a model. */
#define CLI_WEIGHTS_HELP \
    "      --weights W       on-chip weights: file (default: the file's own, Q8_0 at\n" \
    "                        its group size or Q4_0 as int4; fp32 files as Q8_0),\n" \
    "                        q8 (Q8_0), q4 (Q4_0, GGUF's rule, group 32), f32\n" \
    "      --group-size N    quantization group (default: the file's; 32 for fp32\n" \
    "                        files); another than the file's re-quantizes, with a notice\n" \
    "      --kv P            KV cache precision: f32 (default), f16 (IEEE half), int8\n" \
    "                        (one fp32 scale per head vector per position)\n"

/* Option argv[i] of a command's argument loop: a "--name=value" argument
 * is split in place into "--name" and "value" (the rest of argv moves up
 * one, *argc grows by one; argv has room: main gives every command an
 * array of 2 argc entries), so each option takes "--name value" and
 * "--name=value" alike.  Only arguments the loop reads as options are
 * split: a value, which cli_value takes, is never looked at, so "-p
 * --a=b" keeps its prompt. */
const char *cli_opt(int *argc, char **argv, int i);

/* The value of option argv[*i] (advancing *i), or NULL after printing an
 * error when it is missing. */
const char *cli_value(int argc, char **argv, int *i);

/* Print that command cmd does not take arg: an unknown option, or (not
 * starting with '-') a value without its option, e.g. a model path
 * without -m.  The caller returns 2. */
void cli_unknown(const char *cmd, const char *arg);

/* The library's log hook for the commands: warnings and errors to stderr
 * as "tessera: <msg>" lines (set with tsr_device_set_log). */
void cli_log_to_stderr(int level, const char *msg, void *user);

/* Write the device spec "BACKEND[:key=val,...]" into buf (cap bytes): the
 * --backend value refined by part= (NULL: none), pes= and threads= (0:
 * none) and xclbin= (NULL: none).  Returns 0, or -1 after printing an error
 * naming cmd when it does not fit. */
int cli_device_spec(const char *cmd, char *buf, size_t cap, const char *backend,
                    const char *part, int pes, int threads, const char *xclbin);

/* Append a model split over devices to the spec in buf (cap bytes):
 * cards=N when cards > 1, stages=A-B/C-D/... from --stages' "A-B,C-D,..."
 * (NULL: none; the spec's keys are ','-separated, so its ranges take '/').
 * Returns 0, or -1 after printing an error naming cmd when it does not fit. */
int cli_spec_split(const char *cmd, char *buf, size_t cap, int cards, const char *stages);

/* The options' help lines for --cards and --stages (run, bench). */
#define CLI_SPLIT_HELP \
    "      --cards N         split the model's layers over N (2..16) emulated devices in\n" \
    "                        pipeline stages, as `tessera plan --cards N --profile generic`\n" \
    "                        proposes (the same tokens); under mpirun -np N, one a rank\n" \
    "      --stages A-B,...  the split by hand: two or more contiguous layer ranges from 0,\n" \
    "                        one a device\n"

/* Read a whole prompt from path ("-": stdin) into *out (NUL-terminated,
 * malloc'd; one trailing newline dropped).  Returns 0, or -1 after
 * printing an error naming cmd. */
int cli_read_prompt(const char *cmd, const char *path, char **out);

/* --chat-template NAME: *out gets the library's name for the family
 * (tsr_chat_template_find).  Returns 0, or -1 after printing one line
 * naming cmd and listing the families. */
int cli_chat_template(const char *cmd, const char *name, const char **out);

/* "s" unless n is 1: printf("%d token%s", n, cli_s(n)). */
const char *cli_s(long long n);

/* Help text for --part, the same in every command: the list is the parts
 * table's (tsr_part_list(), printed through the usage's one %s). */
#define CLI_PART_HELP \
    "      --part NAME       emulate the on-chip capacity of a part, one of\n" \
    "                        %s\n" \
    "                        (parts whose block counts hw/parts.def lacks are refused)\n"

/* Help text for --ctx, the same in every command. */
#define CLI_CTX_HELP \
    "      --ctx N           context length on the device (default: the model's;\n" \
    "                        --seq-len N is the same)\n"

/* Help text for --pes, the same in every command: the option takes what a
 * device spec can say; the emulator's kernel profile sets the real cap and
 * the device refuses more when it opens. */
#define CLI_PES_HELP \
    "      --pes N           processing elements in the mesh (default 16; the\n" \
    "                        emulator's kernel profile caps it: 1..64 for the\n" \
    "                        generic profile, checked when the device opens)\n"

#endif
