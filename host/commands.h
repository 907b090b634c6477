/* commands.h - the tessera program's subcommands (host/cmd_*.c), which
 * main.c dispatches to.  Each takes argv after the subcommand's name (with
 * room for 2 argc entries: cli_parse splits "--name=value" in place) and
 * returns the exit status (0 ok, 1 runtime failure, 2 usage error; plan and
 * run add their own, see their help). */
#ifndef TSR_COMMANDS_H
#define TSR_COMMANDS_H

int cmd_run(int argc, char **argv);     /* host/cmd_run.c */
int cmd_info(int argc, char **argv);    /* host/cmd_info.c */
int cmd_synth(int argc, char **argv);   /* host/cmd_synth.c */
int cmd_chat(int argc, char **argv);    /* host/cmd_chat.c */
int cmd_bench(int argc, char **argv);   /* host/cmd_bench.c */
int cmd_plan(int argc, char **argv);    /* host/cmd_plan.c */
int cmd_serve(int argc, char **argv);   /* host/cmd_serve.c, host/serve/ */

#endif
