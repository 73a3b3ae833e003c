/* SVG pictures of a schedule, for people: the R and S matrices as coloured
 * grids (rows = stages, columns = nodes) and the memory timeline over the
 * operation sequence. They are what `remat plan --svg` writes and what the
 * README shows. Plain SVG 1.1, no scripts, no external fonts; each file
 * starts with "<svg" and ends with "</svg>". */
#ifndef REMAT_FIGURES_H
#define REMAT_FIGURES_H

#include "schedule.h"

/* Two n x n grids side by side, R ("computed in stage t") and S ("retained
 * into stage t"). Each meaningful cell (R: i <= t, S: i < t; n*n in all) is
 * one <rect class="cell-..."> (new, re for a recomputation, kept, empty); the
 * impossible upper triangles are one shape each. A strip beside each grid
 * marks the stage's kind (forward, loss, backward). title may be NULL.
 * Refused (RM_ERR_INVALID) above RM_FIGURE_RS_MAX_NODES nodes: 8 million
 * cells, a 500 MB file no viewer opens. */
#define RM_FIGURE_RS_MAX_NODES 2000
int rm_figure_rs_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e);

/* Total memory after every operation of the schedule's operation sequence:
 * the fixed bytes as a band at the bottom, the live activation bytes as an
 * area above it, the budget as a line (when p->budget > 0), recomputations
 * as ticks, the forward/backward boundary and the peak marked. When the
 * fixed bytes dwarf the activations the axis is broken (and says so) so the
 * activations stay readable. s must be valid. */
int rm_figure_memory_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e);

#endif
