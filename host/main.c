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
