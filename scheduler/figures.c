/* SVG writers for a schedule (see figures.h). Everything is computed from
 * the problem, R and S and the simulator's memory timeline, so a picture can
 * never disagree with what the executor would do. */
#include "figures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "simulate.h"

/* Colours: the forward/backward/loss ones match `remat graph --dot`. */
#define COL_FORWARD "#9fc5e8"
#define COL_LOSS "#ffd966"
#define COL_BACKWARD "#ea9999"
#define COL_NEW "#3d85c6"  /* first computation: the diagonal of R */
#define COL_RE "#e69138"   /* recomputation */
#define COL_KEPT "#6aa84f" /* retained (S) */
#define COL_EMPTY "#f3f3f3"
#define COL_UPPER "#ffffff"
#define COL_FIXED "#b7b7b7"
#define COL_ACT "#6fa8dc"
#define COL_BUDGET "#cc0000"
#define FONT "font-family=\"Helvetica,Arial,sans-serif\""

/* Binary units for labels. cli/cli_util.c has the CLI's twin of this;
 * the scheduler must not depend on train/. */
static const char *bytes_fmt(char *buf, size_t len, double b, int round)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        u++;
    }
    if (round)
        snprintf(buf, len, "%.4g %s", b, units[u]); /* axis ticks: 2.5 MiB, not 2.50 MiB */
    else
        snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", b, units[u]);
    return buf;
}

static const char *bytes_str(char *buf, size_t len, double b) { return bytes_fmt(buf, len, b, 0); }

/* A round tick step at least raw: 1, 2 or 5 times a power of ten of a
 * binary unit (256 KiB is not round, but 200 KiB, 500 MiB and 1 GiB are),
 * never a step like 1000 MiB that would label ticks 1.953 GiB. */
static double nice_step(double raw)
{
    static const double steps[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1024};
    double unit = 1;
    while (raw >= 1024.0 * unit && unit < 1099511627776.0) unit *= 1024.0;
    double m = raw / unit;
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        if (steps[k] >= m) return steps[k] * unit;
    return 1024.0 * unit;
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *tag_colour(rm_node_tag t)
{
    return t == RM_TAG_BACKWARD ? COL_BACKWARD : t == RM_TAG_LOSS ? COL_LOSS : COL_FORWARD;
}

/* The SVG goes through a temporary file renamed into place
 * (engine/atomic_file.h), so a full disk never leaves half a figure; the
 * commit checks every fprintf through ferror. */
static int finish(rm_atomic_file *af, rm_err *e)
{
    int rc = rm_atomic_commit(af, e);
    if (rc) rm_err_context(e, "writing the SVG");
    return rc;
}

static int check_args(const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    if (!p || !s || p->n < 1) return rm_errorf(e, RM_ERR_INVALID, "figure: no problem or schedule");
    if (s->n != p->n)
        return rm_errorf(e, RM_ERR_INVALID, "figure: the schedule has %d stages, the problem %d nodes", s->n, p->n);
    return RM_OK;
}

/* What both figures start with: the <svg> element, an optional <style>
 * (written verbatim), a white background and the optional title. */
static void svg_begin(FILE *f, double width, double height, const char *style, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" " FONT
            ">\n",
            width, height, width, height);
    if (style) fputs(style, f);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    if (title) {
        fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">");
        xml_text(f, title);
        fprintf(f, "</text>\n");
    }
}

/* ---- The R and S grids ---- */

/* The impossible upper triangle of a grid as one staircase polygon: row t
 * has no cells from column t+d on (d = 1 for R, whose diagonal is used; 0
 * for S). */
static void upper_polygon(FILE *f, double x0, double y0, double c, int n, int d)
{
    int r = n - 1 - d; /* last row with impossible cells */
    if (r < 0) return;
    fprintf(f, "<polygon fill=\"" COL_UPPER "\" stroke=\"#dddddd\" stroke-width=\"0.5\" points=\"");
    fprintf(f, "%.1f,%.1f %.1f,%.1f %.1f,%.1f", x0 + d * c, y0, x0 + n * c, y0, x0 + n * c, y0 + (r + 1) * c);
    for (int t = r; t >= 0; t--)
        fprintf(f, " %.1f,%.1f %.1f,%.1f", x0 + (t + d) * c, y0 + (t + 1) * c, x0 + (t + d) * c, y0 + t * c);
    fprintf(f, "\"/>\n");
}

/* Where everything of the R/S figure goes: two n x n grids of c-px cells
 * side by side (R at x_r, S at x_s, both from y0), each with a stage strip
 * on its left, row labels left of R, the legend below. */
typedef struct {
    int n;
    double c;     /* cell size */
    int names;    /* row labels carry node names (cells big enough to read them) */
    double font;  /* row label size */
    double strip; /* width of the stage strip */
    double grid;  /* n * c */
    double x_r, x_s, y0;
    double width, height;
} rs_layout;

static rs_layout rs_layout_of(const rm_problem *p, const char *title)
{
    rs_layout g;
    int n = g.n = p->n;
    /* Cells between 3 and 18 px: a 23-node graph gets big friendly cells,
     * a 367-node ResNet-50 still fits a wide screen. */
    double c = floor(640.0 / n);
    if (c > 18) c = 18;
    if (c < 3) c = 3;
    g.c = c;
    g.names = c >= 8; /* row labels only where they are legible */
    g.font = g.names ? (c - 1 < 11 ? c - 1 : 11) : 10;
    size_t maxlen = 0;
    for (int t = 0; t < n; t++) {
        size_t l = strlen(p->nodes[t].name);
        if (l > maxlen) maxlen = l;
    }
    double label_w = g.names ? 34 + 0.58 * g.font * (double)maxlen : 40;
    double gap = 46;
    g.strip = 7;
    g.grid = n * c;
    g.x_r = label_w + g.strip + 4;
    g.x_s = g.x_r + g.grid + gap + g.strip + 4;
    g.y0 = title ? 74 : 54;
    g.width = g.x_s + g.grid + 20;
    g.height = g.y0 + g.grid + 86;
    return g;
}

/* One grid (panel 0: R, panel 1: S) with its heading, column ticks, stage
 * strip and the impossible upper triangle. */
static void rs_panel(FILE *f, const rs_layout *g, const rm_problem *p, const rm_schedule *s, int panel)
{
    int n = g->n;
    double c = g->c, x0 = panel ? g->x_s : g->x_r, y0 = g->y0;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\">%s</text>\n", x0 - g->strip - 4,
            y0 - 22,
            panel ? "S: value i kept in memory from stage t-1 into stage t"
                  : "R: node i computed in stage t (diagonal: first time)");
    /* Column ticks every k nodes, at least ~28 px apart. */
    int k = (int)ceil(28.0 / c);
    if (k < 1) k = 1;
    for (int i = 0; i < n; i += k)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\" fill=\"#666\">%d</text>\n",
                x0 + (i + 0.5) * c, y0 - 5, i);
    /* The stage strip: what kind of node stage t computes. */
    for (int t = 0; t < n; t++)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x0 - g->strip - 2,
                y0 + t * c, g->strip, c, tag_colour(p->nodes[t].tag));
    upper_polygon(f, x0, y0, c, n, panel ? 0 : 1);
    fprintf(f, "<g stroke=\"white\" stroke-width=\"%s\">\n", c >= 6 ? "0.6" : "0.2");
    for (int t = 0; t < n; t++) {
        int lim = panel ? t : t + 1;
        for (int i = 0; i < lim; i++) {
            const char *cls;
            if (panel)
                cls = rm_schedule_S(s, t, i) ? "cell-kept" : "cell-empty";
            else if (rm_schedule_R(s, t, i))
                cls = i == t ? "cell-new" : "cell-re";
            else
                cls = "cell-empty";
            fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", cls,
                    x0 + i * c, y0 + t * c, c, c);
        }
    }
    fprintf(f, "</g>\n");
}

/* Row labels: stage number and the node it computes (every k-th stage
 * number alone when the cells are too small for names). */
static void rs_row_labels(FILE *f, const rs_layout *g, const rm_problem *p)
{
    double c = g->c;
    int k = g->names ? 1 : (int)ceil(14.0 / c);
    for (int t = 0; t < g->n; t += k) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"end\">", g->x_r - g->strip - 6,
                g->y0 + t * c + c / 2 + g->font * 0.35, g->font);
        if (g->names) {
            fprintf(f, "%d ", t);
            xml_text(f, p->nodes[t].name);
        } else {
            fprintf(f, "%d", t);
        }
        fprintf(f, "</text>\n");
    }
}

/* Where the forward pass ends: a dashed line across both grids above the
 * first backward stage. */
static void rs_backward_line(FILE *f, const rs_layout *g, const rm_problem *p)
{
    int n = g->n, b0 = n;
    for (int t = 0; t < n; t++)
        if (p->nodes[t].tag == RM_TAG_BACKWARD) {
            b0 = t;
            break;
        }
    if (b0 > 0 && b0 < n)
        for (int panel = 0; panel < 2; panel++) {
            double x0 = panel ? g->x_s : g->x_r;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-width=\"1\" "
                    "stroke-dasharray=\"4,3\"/>\n",
                    x0 - g->strip - 2, g->y0 + b0 * g->c, x0 + g->grid, g->y0 + b0 * g->c);
        }
}

/* The legend under the grids, wrapped at the figure's width, and the
 * caption that says how to read rows and columns. */
static void rs_legend(FILE *f, const rs_layout *g)
{
    struct {
        const char *colour, *text;
    } legend[] = {
        {COL_NEW, "computed (first time)"}, {COL_RE, "recomputed"},         {COL_KEPT, "kept (retained)"},
        {COL_EMPTY, "not in memory"},       {COL_FORWARD, "forward stage"}, {COL_LOSS, "loss stage"},
        {COL_BACKWARD, "backward stage"},
    };
    double lx = 10, ly = g->y0 + g->grid + 24;
    for (size_t j = 0; j < sizeof legend / sizeof legend[0]; j++) {
        if (lx + 150 > g->width && lx > 10) {
            lx = 10;
            ly += 20;
        }
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999\" "
                "stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                lx, ly, legend[j].colour, lx + 16, ly + 10, legend[j].text);
        lx += 150;
    }
    fprintf(f,
            "<text x=\"10\" y=\"%.1f\" font-size=\"10\" fill=\"#666\">rows: stages t, labelled with the node "
            "each computes; columns: nodes i. Row t of R is what stage t computes, row t of S what it finds "
            "in memory; dashed line: the backward pass starts</text>\n",
            ly + 32);
}

int rm_figure_rs_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e)
{
    int rc = check_args(p, s, e);
    if (rc) return rc;
    if (p->n > RM_FIGURE_RS_MAX_NODES)
        return rm_errorf(e, RM_ERR_INVALID, "figure: R and S are drawn for at most %d nodes, not %d (%d^2 cells)",
                         RM_FIGURE_RS_MAX_NODES, p->n, p->n);
    rs_layout g = rs_layout_of(p, title);
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) return rc;
    FILE *f = af.f;
    svg_begin(f, g.width, g.height,
              "<style>.cell-new{fill:" COL_NEW "}.cell-re{fill:" COL_RE "}.cell-kept{fill:" COL_KEPT
              "}.cell-empty{fill:" COL_EMPTY "}</style>\n",
              title);
    for (int panel = 0; panel < 2; panel++) rs_panel(f, &g, p, s, panel);
    rs_row_labels(f, &g, p);
    rs_backward_line(f, &g, p);
    rs_legend(f, &g);
    fprintf(f, "</svg>\n");
    return finish(&af, e);
}

/* ---- The memory timeline ---- */

/* The memory plot: total bytes (fixed + live activations) over the
 * operation sequence, in a pw x ph box at (L, T) of a W x H figure. The
 * y axis runs from y_lo (0, or just under the fixed bytes when the axis is
 * broken) to top_v. */
typedef struct {
    double W, H, L, R, T, B, pw, ph;
    double y_lo, top_v;
    int broken; /* the y axis starts above 0 */
    int nops;
    double fixed, peak, budget; /* bytes */
} mem_plot;

static mem_plot mem_plot_of(const rm_problem *p, const rm_sim_result *sim, int nops, const char *title)
{
    mem_plot m;
    m.nops = nops;
    m.fixed = (double)p->fixed_bytes;
    m.peak = m.fixed + (double)sim->peak_bytes;
    m.budget = (double)p->budget;
    m.top_v = m.peak > m.budget ? m.peak : m.budget;
    if (m.top_v <= 0) m.top_v = 1;
    m.top_v *= 1.08;
    /* Break the axis when the fixed bytes would squash the activations. */
    m.y_lo = 0;
    m.broken = 0;
    if (m.fixed > 0.6 * m.top_v) {
        m.y_lo = m.fixed - 0.25 * (m.top_v - m.fixed);
        m.broken = 1;
    }
    m.W = 960, m.H = 440, m.L = 96, m.R = 170, m.T = title ? 64 : 40, m.B = 78;
    m.pw = m.W - m.L - m.R, m.ph = m.H - m.T - m.B;
    return m;
}

/* The x of operation k (its left edge) and the y of v bytes. */
static double mem_x(const mem_plot *m, int k) { return m->L + m->pw * (double)k / (double)(m->nops > 0 ? m->nops : 1); }
static double mem_y(const mem_plot *m, double v) { return m->T + m->ph * (1.0 - (v - m->y_lo) / (m->top_v - m->y_lo)); }

/* Grid lines and y labels at round values, then the grey band of the fixed
 * bytes. */
static void mem_grid_and_fixed(FILE *f, const mem_plot *m)
{
    char a[32];
    double step = nice_step((m->top_v - m->y_lo) / 5.0);
    for (double v = ceil(m->y_lo / step) * step; v <= m->top_v + 1e-9 * m->top_v; v += step) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/><text x=\"%.1f\" "
                "y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                m->L, mem_y(m, v), m->L + m->pw, mem_y(m, v), m->L - 6, mem_y(m, v) + 4, bytes_fmt(a, sizeof a, v, 1));
    }
    if (m->fixed > m->y_lo)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" COL_FIXED
                "\" fill-opacity=\"0.7\"/>\n",
                m->L, mem_y(m, m->fixed), m->pw, mem_y(m, m->y_lo) - mem_y(m, m->fixed));
}

/* Live activations, stacked on the fixed bytes: a step function, one step
 * per operation. */
static void mem_activations(FILE *f, const mem_plot *m, const size_t *mem)
{
    double base = mem_y(m, m->fixed);
    fprintf(f, "<polygon fill=\"" COL_ACT "\" stroke=\"#3d85c6\" stroke-width=\"0.8\" points=\"%.1f,%.1f",
            mem_x(m, 0), base);
    for (int k = 0; k < m->nops; k++) {
        double y = mem_y(m, m->fixed + (double)mem[k]);
        fprintf(f, " %.2f,%.2f %.2f,%.2f", mem_x(m, k), y, mem_x(m, k + 1), y);
    }
    fprintf(f, " %.1f,%.1f\"/>\n", mem_x(m, m->nops), base);
}

/* The forward / backward boundary: a dashed vertical line at the first
 * operation of a backward stage, labelled on both sides. */
static void mem_pass_boundary(FILE *f, const mem_plot *m, const rm_problem *p, const rm_op *ops)
{
    int b0 = -1;
    for (int k = 0; k < m->nops; k++)
        if (p->nodes[ops[k].stage].tag == RM_TAG_BACKWARD) {
            b0 = k;
            break;
        }
    if (b0 <= 0) return;
    double x = mem_x(m, b0);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-dasharray=\"4,3\"/>\n", x,
            m->T, x, m->T + m->ph);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">forward pass</text>\n", x - 4,
            m->T + 12);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">backward pass</text>\n", x + 4, m->T + 12);
}

/* Recomputations as ticks under the plot (at least 2 px wide); counts the
 * computes and recomputations for the caption. */
static void mem_recompute_ticks(FILE *f, const mem_plot *m, const rm_op *ops, int *ncomp, int *nre)
{
    *ncomp = *nre = 0;
    fprintf(f, "<g fill=\"" COL_RE "\">\n");
    for (int k = 0; k < m->nops; k++) {
        if (ops[k].kind != RM_OP_COMPUTE) continue;
        (*ncomp)++;
        if (ops[k].node == ops[k].stage) continue;
        (*nre)++;
        double w = m->pw / m->nops < 2 ? 2 : m->pw / m->nops;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"9\"/>\n", mem_x(m, k), m->T + m->ph + 3, w);
    }
    fprintf(f, "</g>\n");
}

/* The budget line and the peak (a dot at the first compute that reaches
 * it), each labelled right of the plot. */
static void mem_budget_and_peak(FILE *f, const mem_plot *m, const rm_problem *p, const rm_op *ops, const size_t *mem,
                                size_t peak_bytes)
{
    char a[32];
    double budget = m->budget;
    if (budget > 0) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_BUDGET
                "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n",
                m->L, mem_y(m, budget), m->L + m->pw, mem_y(m, budget));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"" COL_BUDGET "\">budget %s</text>\n",
                m->L + m->pw + 6, mem_y(m, budget) + 4, bytes_str(a, sizeof a, budget));
    }
    int kp = -1;
    for (int k = 0; k < m->nops; k++)
        if (ops[k].kind == RM_OP_COMPUTE && mem[k] == peak_bytes) {
            kp = k;
            break;
        }
    if (kp < 0) return;
    double yp = mem_y(m, m->peak);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/>\n", (mem_x(m, kp) + mem_x(m, kp + 1)) / 2, yp);
    /* Next to the budget label, the peak label goes on the other side of
     * the budget line, a line's height away. */
    double ly = yp + 4;
    if (budget > 0 && fabs(yp - mem_y(m, budget)) < 14)
        ly = yp >= mem_y(m, budget) ? mem_y(m, budget) + 18 : mem_y(m, budget) - 10;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">peak %s</text>\n", m->L + m->pw + 6, ly,
            bytes_str(a, sizeof a, m->peak));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#444\">peak (dot) while computing '", m->L + 4,
            m->T + m->ph + 40);
    xml_text(f, p->nodes[ops[kp].node].name);
    fprintf(f, "', stage %d (operation %d)</text>\n", ops[kp].stage, kp);
}

/* The fixed bytes' label, the zig-zag of a broken axis, the axes and the
 * captions. */
static void mem_axes_and_captions(FILE *f, const mem_plot *m, int ncomp, int nre, size_t peak_bytes)
{
    char a[32], b[32];
    double L = m->L, T = m->T, pw = m->pw, ph = m->ph;
    if (m->fixed > 0) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">fixed %s%s</text>\n", L + pw + 6,
                (mem_y(m, m->fixed) + mem_y(m, m->y_lo > 0 ? m->y_lo : 0)) / 2 + 4, bytes_str(a, sizeof a, m->fixed),
                m->broken ? " (axis cut)" : "");
    }
    if (m->broken) {
        double yb = mem_y(m, m->y_lo) - 6;
        fprintf(f,
                "<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"1.2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f "
                "%.1f,%.1f\"/>\n",
                L - 8, yb + 4, L - 3, yb - 2, L + 3, yb + 6, L + 8, yb);
    }
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/><line x1=\"%.1f\" y1=\"%.1f\" "
            "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n",
            L, T, L, T + ph, L, T + ph, L + pw, T + ph);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">operation sequence: %d computes "
            "(%d of them recomputations, marked below the axis) and %d frees</text>\n",
            L + pw / 2, T + ph + 26, ncomp, nre, m->nops - ncomp);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#444\">grey: fixed bytes (weights, gradients, "
            "optimizer state); blue: live activations; activation peak %s</text>\n",
            L + 4, T + ph + 54, bytes_str(b, sizeof b, (double)peak_bytes));
}

int rm_figure_memory_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e)
{
    int rc = check_args(p, s, e);
    if (rc) return rc;
    rm_op *ops = NULL;
    int nops = 0;
    if ((rc = rm_schedule_ops(&ops, &nops, p, s, e))) return rc;
    size_t *mem = malloc((size_t)(nops > 0 ? nops : 1) * sizeof *mem);
    if (!mem) {
        free(ops);
        return rm_errorf(e, RM_ERR_NOMEM, "figure: out of memory");
    }
    rm_sim_result sim;
    if ((rc = rm_simulate_ops(&sim, mem, p, s, ops, nops, e))) goto out;
    mem_plot m = mem_plot_of(p, &sim, nops, title);
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) goto out;
    FILE *f = af.f;
    svg_begin(f, m.W, m.H, NULL, title);
    mem_grid_and_fixed(f, &m);
    mem_activations(f, &m, mem);
    mem_pass_boundary(f, &m, p, ops);
    int ncomp, nre;
    mem_recompute_ticks(f, &m, ops, &ncomp, &nre);
    mem_budget_and_peak(f, &m, p, ops, mem, sim.peak_bytes);
    mem_axes_and_captions(f, &m, ncomp, nre, sim.peak_bytes);
    fprintf(f, "</svg>\n");
    rc = finish(&af, e);
out:
    free(mem);
    free(ops);
    return rc;
}
