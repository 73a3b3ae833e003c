/* The subcommand table and top-level help. */
#include "commands.h"

#include "utf8.h" /* rm_text_fprintf: the unknown command is quoted as typed */

#include <stdio.h>
#include <string.h>

/* Add each subcommand here (declared in its cmd_<name>.c). */
extern const rm_command rm_cmd_graph;
extern const rm_command rm_cmd_plan;
extern const rm_command rm_cmd_explain;
extern const rm_command rm_cmd_lesson;
extern const rm_command rm_cmd_maxbatch;
extern const rm_command rm_cmd_train;
extern const rm_command rm_cmd_profile;
const rm_command *const rm_commands[] = {
    &rm_cmd_graph,    &rm_cmd_plan,  &rm_cmd_explain, &rm_cmd_lesson,
    &rm_cmd_maxbatch, &rm_cmd_train, &rm_cmd_profile, NULL,
};
const int rm_command_count = (int)(sizeof rm_commands / sizeof rm_commands[0]) - 1;

static void print_help(FILE *f)
{
    fprintf(f, "remat - train deep networks under a memory budget by optimal tensor rematerialization\n\n"
               "usage: remat <command> [options]\n\ncommands:\n");
    for (int i = 0; i < rm_command_count; i++)
        fprintf(f, "  %-10s %s\n", rm_commands[i]->name, rm_commands[i]->summary);
    fprintf(f, "\n`remat <command> --help` explains a command's options. Every command that takes --model FILE (a\n"
               "config) takes --onnx FILE (a network exported from PyTorch) instead; docs/onnx.md.\n");
}

int rm_cli_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_help(stdout);
        return argc < 2 ? 1 : 0;
    }
    for (int i = 0; i < rm_command_count; i++) {
        if (strcmp(argv[1], rm_commands[i]->name)) continue;
        for (int a = 2; a < argc; a++)
            if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
                printf("%s\n", rm_commands[i]->usage);
                return 0;
            }
        return rm_commands[i]->run(argc - 1, argv + 1);
    }
    rm_text_fprintf(stderr, "remat: unknown command '%s'\n\n", argv[1]);
    print_help(stderr);
    return 1;
}
