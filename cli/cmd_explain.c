/* `remat explain`: solves a schedule and explains it in words, as a
 * teaching report: what the budget means next to the no-remat peak and the
 * lower bound, which values are dropped and recomputed, when and why (what
 * keeping each would have cost in memory), where the peak is and what is
 * resident there, and what the recomputations cost in total. The text
 * itself is explain.c's, shared with `remat lesson`. */
#include <stdio.h>
#include <string.h>

#include "cli_util.h"
#include "clock.h"
#include "commands.h"
#include "explain.h"
#include "schedule.h"
#include "strategy.h"

#define EXPLAIN_USAGE                                                                                                  \
    "usage: remat explain (--model FILE --batch N --budget B | --problem FILE [--budget B])\n"                         \
    "                     [--strategy NAME] [--costs FILE] [--time-limit S] [--node-limit N]\n"                        \
    "                     [--milp-engine E] [--quiet]\n"                                                               \
    "                     (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                              \
    "\n"                                                                                                               \
    "Solves a rematerialization schedule for the budget and explains it: what the budget means next to\n"              \
    "the peak of training without rematerialization and the smallest memory any schedule needs; which\n"               \
    "values are dropped after which stage and recomputed in which stage, for which consumer, and why\n"                \
    "(how high memory would have gone had each been kept); where the peak is and what is resident\n"                   \
    "there; and the total compute overhead.\n"                                                                         \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE     model config (models/*.cfg), traced at --batch N (1 to 2^30)\n" RM_CLI_MODEL_USAGE(            \
        "     ") "  --problem FILE   a problem file instead (docs/problem-format.md); its budget is the default\n"     \
                 "  --budget B       TOTAL device memory, fixed bytes included: 6GiB, 512MiB, 1.5e9, 16GB, 12000B, "   \
                 "or a\n"                                                                                              \
                 "                   percentage of the no-remat peak (80%); a number without a unit is bytes, at "     \
                 "least\n"                                                                                             \
                 "                   1000000; see `remat plan --help`\n"                                               \
                 "  --strategy NAME  any of `remat plan`'s strategies; default: best (every heuristic, then the "      \
                 "anneal and the MILP)\n"                                                                              \
                 "  --costs FILE     node costs in profiled seconds (`remat profile`, docs/cost-format.md)\n"          \
                 "  --time-limit S   wall-clock seconds for the solve, whatever the strategy (default 60; 0 = none)\n" \
                 "  --node-limit N   branch-and-bound nodes for best / milp (deterministic; default "                  \
                 "none)\n" RM_CLI_MILP_ENGINE_HELP(                                                                    \
                     "  ") "  --quiet          no progress on stderr\n"                                                \
                           "\n"                                                                                        \
                           "example: remat explain --model models/vgg16.cfg --batch 32 --budget 80%"

#define usage_error(...) rm_cli_usage_error("explain", EXPLAIN_USAGE, __VA_ARGS__)

static int explain_run(int argc, char **argv)
{
    rm_cli_model mdl;
    memset(&mdl, 0, sizeof mdl);
    const char *model = NULL, *batch = NULL, *problem = NULL, *budget = NULL, *strategy = NULL, *time_limit = NULL,
               *node_limit = NULL, *costs = NULL, *milp_engine = NULL;
    int quiet = 0;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &quiet),      RM_CLI_MODEL_OPTIONS(&mdl),
        RM_CLI_VALUE("--batch", &batch),           RM_CLI_VALUE("--problem", &problem),
        RM_CLI_VALUE("--budget", &budget),         RM_CLI_VALUE("--strategy", &strategy),
        RM_CLI_VALUE("--time-limit", &time_limit), RM_CLI_VALUE("--node-limit", &node_limit),
        RM_CLI_VALUE("--costs", &costs),           RM_CLI_VALUE("--milp-engine", &milp_engine),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "explain", EXPLAIN_USAGE) ||
        rm_cli_model_check(&mdl, "explain", EXPLAIN_USAGE))
        return 1;
    model = mdl.path;
    if (model && problem) return usage_error("give --model or --problem, not both");
    if (!model && !problem) return usage_error("--model FILE --batch N or --problem FILE is required");
    if (model && !batch) return usage_error("--batch N is required with --model");
    if (problem && batch) return usage_error("--batch goes with --model, not --problem");
    long batch_n = 0;
    char why[256];
    if (batch && rm_cli_parse_batch(&batch_n, batch, why, sizeof why)) return usage_error("%s", why);
    /* As in `remat plan`: a problem file's own budget is the default. */
    if (!budget && !problem) return usage_error("--budget B is required");
    rm_cli_budget bud = rm_cli_budget_of(0);
    if (budget && rm_cli_parse_budget(&bud, budget, why, sizeof why)) return usage_error("--budget: %s", why);
    double limit = 60;
    long nodes = 0;
    rm_milp_engine engine;
    if (rm_cli_parse_solver_limits(&limit, &nodes, time_limit, node_limit, why, sizeof why) ||
        rm_cli_parse_milp_engine(&engine, milp_engine, why, sizeof why))
        return usage_error("%s", why);
    const rm_strategy_info *st = rm_strategy_find(strategy ? strategy : "best");
    char what[512];
    if (!st) return usage_error("%s", rm_cli_unknown_strategy(what, sizeof what, strategy, 0));

    rm_cli_problem cp;
    int rc = rm_cli_problem_load_costs(&cp, "explain", &mdl, batch_n, problem, costs);
    if (rc) return rc;
    if (!budget) {
        if (!cp.file_budget) {
            rm_cli_problem_free(&cp);
            return usage_error("--budget B is required (the problem file sets none)");
        }
        bud = rm_cli_budget_of(cp.file_budget);
    }
    if ((rc = rm_cli_problem_set_budget(&cp, "explain", &bud))) {
        rm_cli_problem_free(&cp);
        return rc;
    }
    rm_explain_write_budget(stdout, &cp, &bud);
    fflush(stdout);

    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.facts = &cp.facts;
    o.time_limit_s = limit;
    o.node_limit = nodes;
    o.milp_engine = engine;
    rm_cli_progress pr = {st->name, rm_now()};
    if (!quiet) {
        o.log = rm_cli_progress_log;
        o.log_ctx = &pr;
        if (st->solve_opt && limit > 0)
            rm_text_fprintf(stderr, "remat explain: solving with %s (time limit %g s) ...\n", st->name, limit);
        else if (st->solve_opt)
            rm_text_fprintf(stderr, "remat explain: solving with %s (no time limit) ...\n", st->name);
    }
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_schedule_report rep; /* the judge's replay: what the text explains */
    rm_err e = {RM_OK, ""};
    rc = rm_strategy_run_report(&s, &stats, &rep, 0, NULL, st, cp.p, &o, &e);
    if (rc) {
        if (rc == RM_ERR_INFEASIBLE)
            rm_text_fprintf(stderr, "remat explain: %s found no schedule within the budget: %s\n", st->name, e.msg);
        else
            rm_text_fprintf(stderr, "remat explain: %s failed: %s\n", st->name, e.msg);
        rm_cli_problem_free(&cp);
        return rc == RM_ERR_INFEASIBLE ? 1 : 2;
    }
    rm_explain_write_schedule(stdout, &cp, s, &rep, st, &stats);
    rm_schedule_report_free(&rep);
    rm_schedule_free(s);
    rm_cli_problem_free(&cp);
    return rc;
}

const rm_command rm_cmd_explain = {
    .name = "explain",
    .summary = "solve a schedule and explain it: what is recomputed, where and why, where the peak is",
    .usage = EXPLAIN_USAGE,
    .run = explain_run,
};
