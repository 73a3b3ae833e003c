/* The subcommands of the remat CLI. Each takes the arguments after its name
 * and returns a process exit code (0 success, 1 bad usage or input, 2 internal
 * failure). Output goes to stdout, errors to stderr. */
#ifndef REMAT_COMMANDS_H
#define REMAT_COMMANDS_H

typedef struct rm_command {
    const char *name;
    const char *summary; /* one line for `remat --help` */
    const char *usage;   /* full help for `remat NAME --help` */
    int (*run)(int argc, char **argv);
} rm_command;

extern const rm_command *const rm_commands[];
extern const int rm_command_count;

/* Runs argv[1] as a subcommand; prints help for none or --help. */
int rm_cli_main(int argc, char **argv);

#endif
