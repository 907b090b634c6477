/* main.c - the tessera program: subcommand dispatch and shared helpers. */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: tessera <command> [options]\n"
    "\n"
    "LLM decoding with the whole model in on-chip SRAM across a mesh of PEs.\n"
    "\n"
    "commands:\n"
    "  run     decode a prompt on a device (the emulator by default)\n"
    "  chat    interactive: each line typed continues one sequence on the device\n"
    "  serve   HTTP (OpenAI-compatible) and WebSocket server with a playground page\n"
    "  info    print a model file's header, parameter count and bytes per tensor group\n"
    "  synth   write a llama2.c checkpoint with deterministic pseudo-random weights\n"
    "  bench   measure decode/prefill tokens/s, time to first token, load GB/s, peak RSS\n"
    "  plan    fit, BRAM/URAM/DSP and projected tokens/s of a model on an FPGA part\n"
    "  help    this text\n"
    "\n"
    "'tessera <command> --help' describes a command's options (a long option takes\n"
    "its value as --name VALUE or --name=VALUE); 'tessera --version' prints the\n"
    "version.\n";

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("tessera: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_flush_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The last "--name=value" cli_opt split: a value the loop then meets as
 * an argument was given to an option that takes none. */
static const char *split_name, *split_value;

void cli_unknown(const char *cmd, const char *arg)
{
    if (arg == split_value)
        cli_error("%s: option %s takes no value (see tessera %s --help)", cmd, split_name, cmd);
    else if (arg[0] == '-')
        cli_error("%s: unknown option '%s' (see tessera %s --help)", cmd, arg, cmd);
    else
        cli_error("%s: unexpected argument '%s': values follow their option, as in -m MODEL "
                  "(see tessera %s --help)", cmd, arg, cmd);
}

const char *cli_opt(int *argc, char **argv, int i)
{
    char *a = argv[i], *eq;
    if (a[0] == '-' && a[1] == '-' && a[2] != '\0' && a[2] != '=' && (eq = strchr(a, '='))) {
        memmove(argv + i + 2, argv + i + 1, (size_t)(*argc - i - 1) * sizeof *argv);
        *eq = '\0';
        argv[i + 1] = eq + 1;
        ++*argc;
        split_name = a;
        split_value = eq + 1;
    }
    return argv[i];
}

const char *cli_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_error("option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_weights(const char *opt, const char *val, int *f32, int *format)
{
    *f32 = 0;
    if (!strcmp(val, "file")) *format = TSR_WEIGHTS_FILE;
    else if (!strcmp(val, "q8")) *format = TSR_WEIGHTS_Q8;
    else if (!strcmp(val, "q4")) *format = TSR_WEIGHTS_Q4;
    else if (!strcmp(val, "f32")) { *f32 = 1; *format = TSR_WEIGHTS_FILE; }
    else {
        cli_error("option %s: '%s' is not file, q8, q4 or f32", opt, val);
        return -1;
    }
    return 0;
}

int cli_kv(const char *opt, const char *val, const char **kv)
{
    if (strcmp(val, "f32") && strcmp(val, "f16") && strcmp(val, "int8")) {
        cli_error("option %s: '%s' is not f32, f16 or int8", opt, val);
        return -1;
    }
    *kv = val;
    return 0;
}

int cli_int(const char *opt, const char *val, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || *end || end == val || v < lo || v > hi) {
        cli_error("option %s: '%s' is not an integer in %d..%d", opt, val, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int cli_float(const char *opt, const char *val, float lo, float hi, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(val, &end);
    if (errno || *end || end == val || !(v >= lo && v <= hi)) {
        cli_error("option %s: '%s' is not a number in %g..%g", opt, val, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_u64(const char *opt, const char *val, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end || end == val || val[0] == '-') {
        cli_error("option %s: '%s' is not a non-negative integer", opt, val);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

const char *cli_s(long long n) { return n == 1 ? "" : "s"; }

int cli_read_prompt(const char *cmd, const char *path, char **out)
{
    int from_stdin = !strcmp(path, "-");
    FILE *f = from_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        cli_error("%s: cannot open the prompt file %s: %s", cmd, path, strerror(errno));
        return -1;
    }
    /* A bound, so that -f /dev/zero or an endless pipe cannot take all the
     * memory: 64 MiB is 4 bytes a position of the longest context --ctx
     * allows (2^24), and far past any model's */
    const size_t max = (size_t)1 << 26;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got > 0;) {
        if (len > max) {   /* one byte past the bound: reads stop at max + 1 */
            free(buf);
            if (!from_stdin) fclose(f);
            cli_error("%s: the prompt from %s is over %zu MiB, the most tessera reads", cmd,
                      from_stdin ? "stdin" : path, max >> 20);
            return -1;
        }
        if (len + 1 == cap) {
            char *p = realloc(buf, cap = cap * 2 > max + 2 ? max + 2 : cap * 2);
            if (!p) { free(buf); buf = NULL; break; }
            buf = p;
        }
        got = fread(buf + len, 1, cap - 1 - len, f);
        len += got;
    }
    int failed = !buf || ferror(f);
    int err = errno;
    if (!from_stdin) fclose(f);
    if (failed) {
        free(buf);
        cli_error("%s: cannot read the prompt from %s: %s", cmd, from_stdin ? "stdin" : path,
                  buf ? strerror(err) : "out of memory");
        return -1;
    }
    if (len > 0 && buf[len - 1] == '\n') len--;
    if (len > 0 && buf[len - 1] == '\r') len--;
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        cli_error("%s: the prompt from %s holds a NUL byte", cmd, from_stdin ? "stdin" : path);
        return -1;
    }
    *out = buf;
    return 0;
}

void cli_log_to_stderr(int level, const char *msg, void *user)
{
    (void)user;
    if (level <= TSR_LOG_WARN) fprintf(stderr, "tessera: %s\n", msg);
}

int cli_chat_template(const char *cmd, const char *name, const char **out)
{
    if ((*out = tsr_chat_template_find(name))) return 0;
    cli_error("%s: --chat-template '%s' is not a chat template family (one of: %s)", cmd, name,
              tsr_chat_template_list());
    return -1;
}

/* --- the device spec from --backend/--part/--pes/--threads/--xclbin --- */
int cli_device_spec(const char *cmd, char *buf, size_t cap, const char *backend,
                    const char *part, int pes, int threads, const char *xclbin)
{
    int n = snprintf(buf, cap, "%s", backend);
    const char *sep = strchr(backend, ':') ? "," : ":";
    if (part && n >= 0 && (size_t)n < cap) { n += snprintf(buf + n, cap - (size_t)n, "%spart=%s", sep, part); sep = ","; }
    if (pes && n >= 0 && (size_t)n < cap) { n += snprintf(buf + n, cap - (size_t)n, "%spes=%d", sep, pes); sep = ","; }
    if (threads && n >= 0 && (size_t)n < cap) { n += snprintf(buf + n, cap - (size_t)n, "%sthreads=%d", sep, threads); sep = ","; }
    if (xclbin && n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "%sxclbin=%s", sep, xclbin);
    if (n < 0 || (size_t)n >= cap) {
        cli_error("%s: device spec too long", cmd);
        return -1;
    }
    return 0;
}

int cli_spec_split(const char *cmd, char *buf, size_t cap, int cards, const char *stages)
{
    size_t n = strlen(buf);
    const char *sep = strchr(buf, ':') ? "," : ":";
    if (cards > 1 && n < cap) {
        n += (size_t)snprintf(buf + n, cap - n, "%scards=%d", sep, cards);
        sep = ",";
    }
    if (stages && n < cap) {
        n += (size_t)snprintf(buf + n, cap - n, "%sstages=", sep);
        for (const char *p = stages; *p && n + 1 < cap; p++) buf[n++] = *p == ',' ? '/' : *p;
        if (n < cap) buf[n] = '\0';
    }
    if (n >= cap - 1) {
        cli_error("%s: device spec too long", cmd);
        return -1;
    }
    return 0;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))   return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "info"))  return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "synth")) return cmd_synth(argc - 2, argv + 2);
    if (!strcmp(cmd, "chat"))  return cmd_chat(argc - 2, argv + 2);
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 2, argv + 2);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan"))  return cmd_plan(argc - 2, argv + 2);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2) {
            char *h[] = { "--help", NULL };
            if (!strcmp(argv[2], "run"))   return cmd_run(1, h);
            if (!strcmp(argv[2], "info"))  return cmd_info(1, h);
            if (!strcmp(argv[2], "synth")) return cmd_synth(1, h);
            if (!strcmp(argv[2], "chat"))  return cmd_chat(1, h);
            if (!strcmp(argv[2], "serve")) return cmd_serve(1, h);
            if (!strcmp(argv[2], "bench")) return cmd_bench(1, h);
            if (!strcmp(argv[2], "plan"))  return cmd_plan(1, h);
            cli_error("help: unknown command '%s' (valid: run, chat, serve, info, synth, bench, plan)", argv[2]);
            return 2;
        }
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tessera %s\n", tsr_version());
        return 0;
    }
    cli_error("unknown command '%s' (valid: run, chat, serve, info, synth, bench, plan, help)", cmd);
    return 2;
}

/* Launched by mpirun with n ranks: n (Open MPI's environment), else 1;
 * *rank gets this process's. */
static int mpi_launched(int *rank)
{
    const char *n = getenv("OMPI_COMM_WORLD_SIZE"), *r = getenv("OMPI_COMM_WORLD_RANK");
    *rank = r ? atoi(r) : 0;
    return n ? atoi(n) : 1;
}

int main(int argc, char **argv)
{
    /* under mpirun: a stage's rank serves its device and exits; rank 0 is
     * the program (docs/architecture.md, "Pipeline stages and links") */
    int rank = 0;
    /* a stage's rank ends when rank 0 releases it (tsr_mpi_end, also after
     * Ctrl-C or SIGTERM of a server, which mpirun passes to every rank) or
     * when mpirun kills the job: the signals that ask rank 0 to stop must
     * not end it first, under rank 0's feet */
    if (mpi_launched(&rank) > 1 && rank > 0) {
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
    }
    int served = tsr_mpi_rank_serve();
    if (served >= 0) return served;
    if (!tsr_mpi_available() && mpi_launched(&rank) > 1) {
        if (rank == 0)
            cli_error("this tessera was built without MPI, so it cannot split a model over "
                      "mpirun's ranks: install Open MPI (Debian: apt-get install libopenmpi-dev "
                      "openmpi-bin), then make MPI=1 BUILD=build-mpi and run build-mpi/tessera; "
                      "--cards N without mpirun splits it over N emulated devices in this "
                      "process");
        return 2;
    }
    /* argv with room for cli_opt's splits: at most one per argument */
    char **args = calloc((size_t)argc * 2u + 1u, sizeof *args);
    if (!args) {
        cli_error("out of memory");
        return 1;
    }
    memcpy(args, argv, (size_t)argc * sizeof *argv);
    int rc = dispatch(argc, args);
    free(args);
    tsr_mpi_end();
    return rc;
}
