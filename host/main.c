/* main.c - the tessera program: subcommand dispatch (the commands are
 * host/cmd_*.c, their options and helpers host/cli.c). */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

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
    "  synth   write a llama2.c checkpoint or a GGUF file with pseudo-random weights\n"
    "  bench   measure decode/prefill tokens/s, time to first token, load GB/s, peak RSS\n"
    "  plan    fit, BRAM/URAM/DSP and projected tokens/s of a model on an FPGA part\n"
    "  help    this text\n"
    "\n"
    "'tessera <command> --help' describes a command's options (a long option takes\n"
    "its value as --name VALUE or --name=VALUE); 'tessera --version' prints the\n"
    "version.\n";

/* The commands, in the order usage and the errors list them. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    { "run", cmd_run },     { "chat", cmd_chat },   { "serve", cmd_serve }, { "info", cmd_info },
    { "synth", cmd_synth }, { "bench", cmd_bench }, { "plan", cmd_plan },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* The command named name, or NULL. */
static int (*command(const char *name))(int, char **)
{
    for (size_t k = 0; k < N_COMMANDS; k++)
        if (!strcmp(commands[k].name, name)) return commands[k].fn;
    return NULL;
}

/* An unknown command: one line, with the nearest name when it looks like
 * a typo of one (what the option parser does for options). */
static int unknown_command(const char *what, const char *name, int with_help)
{
    const char *words[N_COMMANDS + 1];
    for (size_t k = 0; k < N_COMMANDS; k++) words[k] = commands[k].name;
    words[N_COMMANDS] = "help";
    const char *near = cli_nearest_word(name, words, N_COMMANDS + (with_help ? 1u : 0u));
    if (near)
        cli_error("%sunknown command '%s'; did you mean '%s'? (valid: run, chat, serve, info, "
                  "synth, bench, plan%s)", what, name, near, with_help ? ", help" : "");
    else
        cli_error("%sunknown command '%s' (valid: run, chat, serve, info, synth, bench, plan%s)",
                  what, name, with_help ? ", help" : "");
    return 2;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    int (*fn)(int, char **) = command(cmd);
    if (fn) return fn(argc - 2, argv + 2);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc > 2) {
            char *h[] = { "--help", NULL };
            int (*hf)(int, char **) = command(argv[2]);
            if (hf) return hf(1, h);
            return unknown_command("help: ", argv[2], 0);
        }
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tessera %s\n", tsr_version());
        return 0;
    }
    return unknown_command("", cmd, 1);
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
