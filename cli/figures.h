/* SVG pictures of a schedule, for people: the R and S matrices as coloured
 * grids (rows = stages, columns = nodes), the memory timeline over the
 * operation sequence, and several strategies' timelines side by side. They
 * are what `remat plan --svg` writes and what the README shows. Plain SVG
 * 1.1, no scripts, no external fonts; each file starts with "<svg" and ends
 * with "</svg>".
 *
 * Layout. No font is embedded, so a viewer draws the text in whatever
 * Helvetica, Arial or sans-serif it has; the layout sizes everything from
 * the text it holds, measured as RM_FIGURE_CHAR_EM of the font size per
 * character (wider than those fonts' average glyph) and a line as its em box
 * (0.8 em above the baseline, 0.2 below). Under that measure every <text>
 * lies inside the viewBox and no two overlap, at any size of problem: long
 * titles and captions wrap, and the figure grows to hold them. */
#ifndef REMAT_FIGURES_H
#define REMAT_FIGURES_H

#include "report.h"
#include "schedule.h"

/* The width the layout gives each character, in ems. */
#define RM_FIGURE_CHAR_EM 0.62

/* Two n x n grids side by side, R ("computed in stage t") and S ("retained
 * into stage t"). Each meaningful cell (R: i <= t, S: i < t; n*n in all) is
 * one <rect class="cell-..."> (new, re for a recomputation, kept, empty); the
 * impossible upper triangles are one shape each. A strip beside each grid
 * marks the stage's kind (forward, loss, backward). title may be NULL.
 * Refused (RM_ERR_INVALID) above RM_FIGURE_RS_MAX_NODES nodes: 8 million
 * cells, a 500 MB file no viewer opens. */
#define RM_FIGURE_RS_MAX_NODES 2000
int rm_figure_rs_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e);

/* Total memory after every operation of a schedule's operation sequence,
 * from its report (scheduler/report.h: the timeline, the peak operation,
 * the recomputations):
 * the fixed bytes as a band at the bottom, the live activation bytes as an
 * area above it, the budget as a line (when p->budget > 0), recomputations
 * as ticks, the forward/backward boundary and the peak marked. When the
 * fixed bytes dwarf the activations the axis is broken (and says so) so the
 * activations stay readable. s must be valid. */
int rm_figure_memory_svg(const char *path, const rm_problem *p, const rm_schedule_report *r, const char *title,
                         rm_err *e);

/* One strategy's answer for rm_figure_compare_svg: its schedule's report,
 * or NULL when it found none (then why says so: "infeasible", "error"). */
typedef struct rm_figure_entry {
    const char *name; /* "chen_sqrtn" */
    const rm_schedule_report *r;
    const char *why;
} rm_figure_entry;

/* Small multiples: the memory timeline of each entry that has a schedule,
 * drawn as rm_figure_memory_svg draws it, in panels on shared axes (one y
 * scale, one x scale: operations up to the longest sequence; the budget
 * line in each), each titled with the strategy, its compute overhead over
 * checkpoint-all (facts->base_cost) and its peak; the entries without a
 * schedule are listed under the panels. Each panel is a <g class="panel">.
 * Every report must be of a schedule for p. */
int rm_figure_compare_svg(const char *path, const rm_problem *p, const rm_problem_report *facts,
                          const rm_figure_entry *v, int n, const char *title, rm_err *e);

#endif
