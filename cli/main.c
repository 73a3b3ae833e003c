/* The remat executable: everything lives in the CLI library. */
#include "commands.h"

int main(int argc, char **argv)
{
    return rm_cli_main(argc, argv);
}
