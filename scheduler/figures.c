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

int rm_figure_rs_svg(const char *path, const rm_problem *p, const rm_schedule *s, const char *title, rm_err *e)
{
    int rc = check_args(p, s, e);
    if (rc) return rc;
    int n = p->n;
    /* Cells between 3 and 18 px: a 23-node graph gets big friendly cells,
     * a 367-node ResNet-50 still fits a wide screen. */
    double c = floor(640.0 / n);
    if (c > 18) c = 18;
    if (c < 3) c = 3;
    int names = c >= 8; /* row labels only where they are legible */
    double font = names ? (c - 1 < 11 ? c - 1 : 11) : 10;
    size_t maxlen = 0;
    for (int t = 0; t < n; t++) {
        size_t l = strlen(p->nodes[t].name);
        if (l > maxlen) maxlen = l;
    }
    double label_w = names ? 34 + 0.58 * font * (double)maxlen : 40;
    double strip = 7, gap = 46;
    double grid = n * c;
    double x_r = label_w + strip + 4, x_s = x_r + grid + gap + strip + 4;
    double top = title ? 74 : 54, y0 = top;
    double width = x_s + grid + 20, height = y0 + grid + 86;

    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) return rc;
    FILE *f = af.f;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" " FONT
            ">\n",
            width, height, width, height);
    fprintf(f, "<style>.cell-new{fill:" COL_NEW "}.cell-re{fill:" COL_RE "}.cell-kept{fill:" COL_KEPT
               "}.cell-empty{fill:" COL_EMPTY "}</style>\n");
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    if (title) {
        fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">");
        xml_text(f, title);
        fprintf(f, "</text>\n");
    }

    for (int panel = 0; panel < 2; panel++) {
        double x0 = panel ? x_s : x_r;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\">%s</text>\n", x0 - strip - 4,
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
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x0 - strip - 2,
                    y0 + t * c, strip, c, tag_colour(p->nodes[t].tag));
        upper_polygon(f, x0, y0, c, n, panel ? 0 : 1);
        fprintf(f, "<g stroke=\"white\" stroke-width=\"%s\">\n", c >= 6 ? "0.6" : "0.2");
        for (int t = 0; t < n; t++) {
            int lim = panel ? t : t + 1;
            for (int i = 0; i < lim; i++) {
                const char *cls;
                if (panel)
                    cls = rm_S_at(s, t, i) ? "cell-kept" : "cell-empty";
                else if (rm_R_at(s, t, i))
                    cls = i == t ? "cell-new" : "cell-re";
                else
                    cls = "cell-empty";
                fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", cls,
                        x0 + i * c, y0 + t * c, c, c);
            }
        }
        fprintf(f, "</g>\n");
    }

    /* Row labels: stage number and the node it computes. */
    int k = names ? 1 : (int)ceil(14.0 / c);
    for (int t = 0; t < n; t += k) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\" text-anchor=\"end\">", x_r - strip - 6,
                y0 + t * c + c / 2 + font * 0.35, font);
        if (names) {
            fprintf(f, "%d ", t);
            xml_text(f, p->nodes[t].name);
        } else {
            fprintf(f, "%d", t);
        }
        fprintf(f, "</text>\n");
    }

    /* Where the forward pass ends, on both grids. */
    int b0 = n;
    for (int t = 0; t < n; t++)
        if (p->nodes[t].tag == RM_TAG_BACKWARD) {
            b0 = t;
            break;
        }
    if (b0 > 0 && b0 < n)
        for (int panel = 0; panel < 2; panel++) {
            double x0 = panel ? x_s : x_r;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-width=\"1\" "
                    "stroke-dasharray=\"4,3\"/>\n",
                    x0 - strip - 2, y0 + b0 * c, x0 + grid, y0 + b0 * c);
        }

    /* Legend. */
    struct {
        const char *colour, *text;
    } legend[] = {
        {COL_NEW, "computed (first time)"}, {COL_RE, "recomputed"},         {COL_KEPT, "kept (retained)"},
        {COL_EMPTY, "not in memory"},       {COL_FORWARD, "forward stage"}, {COL_LOSS, "loss stage"},
        {COL_BACKWARD, "backward stage"},
    };
    double lx = 10, ly = y0 + grid + 24;
    for (size_t j = 0; j < sizeof legend / sizeof legend[0]; j++) {
        if (lx + 150 > width && lx > 10) {
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
    fprintf(f, "</svg>\n");
    return finish(&af, e);
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

    double fixed = (double)p->fixed_bytes, peak = fixed + (double)sim.peak_bytes;
    double budget = (double)p->budget;
    double top_v = peak > budget ? peak : budget;
    if (top_v <= 0) top_v = 1;
    top_v *= 1.08;
    /* Break the axis when the fixed bytes would squash the activations. */
    double y_lo = 0;
    int broken = 0;
    if (fixed > 0.6 * top_v) {
        y_lo = fixed - 0.25 * (top_v - fixed);
        broken = 1;
    }
    double W = 960, H = 440, L = 96, R = 170, T = title ? 64 : 40, B = 78;
    double pw = W - L - R, ph = H - T - B;
#define X(k) (L + pw * (double)(k) / (double)(nops > 0 ? nops : 1))
#define Y(v) (T + ph * (1.0 - ((v)-y_lo) / (top_v - y_lo)))

    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) goto out;
    FILE *f = af.f;
    char a[32], b[32];
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" " FONT
            ">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    if (title) {
        fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">");
        xml_text(f, title);
        fprintf(f, "</text>\n");
    }
    /* Grid lines and y labels at round values. */
    double step = nice_step((top_v - y_lo) / 5.0);
    for (double v = ceil(y_lo / step) * step; v <= top_v + 1e-9 * top_v; v += step) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/><text x=\"%.1f\" "
                "y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>\n",
                L, Y(v), L + pw, Y(v), L - 6, Y(v) + 4, bytes_fmt(a, sizeof a, v, 1));
    }
    /* Fixed band. */
    if (fixed > y_lo)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" COL_FIXED
                "\" fill-opacity=\"0.7\"/>\n",
                L, Y(fixed), pw, Y(y_lo) - Y(fixed));
    /* Live activations, stacked on the fixed bytes: a step function, one
     * step per operation. */
    fprintf(f, "<polygon fill=\"" COL_ACT "\" stroke=\"#3d85c6\" stroke-width=\"0.8\" points=\"%.1f,%.1f", X(0),
            Y(fixed));
    for (int k = 0; k < nops; k++)
        fprintf(f, " %.2f,%.2f %.2f,%.2f", X(k), Y(fixed + (double)mem[k]), X(k + 1), Y(fixed + (double)mem[k]));
    fprintf(f, " %.1f,%.1f\"/>\n", X(nops), Y(fixed));
    /* Forward / backward boundary. */
    int b0 = -1;
    for (int k = 0; k < nops; k++)
        if (p->nodes[ops[k].stage].tag == RM_TAG_BACKWARD) {
            b0 = k;
            break;
        }
    if (b0 > 0) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-dasharray=\"4,3\"/>\n",
                X(b0), T, X(b0), T + ph);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">forward pass</text>\n", X(b0) - 4,
                T + 12);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">backward pass</text>\n", X(b0) + 4, T + 12);
    }
    /* Recomputations: ticks under the plot. */
    int nre = 0, ncomp = 0;
    fprintf(f, "<g fill=\"" COL_RE "\">\n");
    for (int k = 0; k < nops; k++) {
        if (ops[k].kind != RM_OP_COMPUTE) continue;
        ncomp++;
        if (ops[k].node == ops[k].stage) continue;
        nre++;
        double w = pw / nops < 2 ? 2 : pw / nops;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"9\"/>\n", X(k), T + ph + 3, w);
    }
    fprintf(f, "</g>\n");
    /* Budget. */
    if (budget > 0) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_BUDGET
                "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n",
                L, Y(budget), L + pw, Y(budget));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"" COL_BUDGET "\">budget %s</text>\n",
                L + pw + 6, Y(budget) + 4, bytes_str(a, sizeof a, budget));
    }
    /* Peak. */
    int kp = -1;
    for (int k = 0; k < nops; k++)
        if (ops[k].kind == RM_OP_COMPUTE && mem[k] == sim.peak_bytes) {
            kp = k;
            break;
        }
    if (kp >= 0) {
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/>\n", (X(kp) + X(kp + 1)) / 2, Y(peak));
        /* Next to the budget label, the peak label goes on the other side
         * of the budget line, a line's height away. */
        double ly = Y(peak) + 4;
        if (budget > 0 && fabs(Y(peak) - Y(budget)) < 14) ly = Y(peak) >= Y(budget) ? Y(budget) + 18 : Y(budget) - 10;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">peak %s</text>\n", L + pw + 6, ly,
                bytes_str(a, sizeof a, peak));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#444\">peak (dot) while computing '", L + 4,
                T + ph + 40);
        xml_text(f, p->nodes[ops[kp].node].name);
        fprintf(f, "', stage %d (operation %d)</text>\n", ops[kp].stage, kp);
    }
    /* Fixed label, and the axis break. */
    if (fixed > 0) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">fixed %s%s</text>\n", L + pw + 6,
                (Y(fixed) + Y(y_lo > 0 ? y_lo : 0)) / 2 + 4, bytes_str(a, sizeof a, fixed),
                broken ? " (axis cut)" : "");
    }
    if (broken) {
        double yb = Y(y_lo) - 6;
        fprintf(f,
                "<polyline fill=\"none\" stroke=\"#000\" stroke-width=\"1.2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f "
                "%.1f,%.1f\"/>\n",
                L - 8, yb + 4, L - 3, yb - 2, L + 3, yb + 6, L + 8, yb);
    }
    /* Axes and captions. */
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/><line x1=\"%.1f\" y1=\"%.1f\" "
            "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n",
            L, T, L, T + ph, L, T + ph, L + pw, T + ph);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">operation sequence: %d computes "
            "(%d of them recomputations, marked below the axis) and %d frees</text>\n",
            L + pw / 2, T + ph + 26, ncomp, nre, nops - ncomp);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#444\">grey: fixed bytes (weights, gradients, "
            "optimizer state); blue: live activations; activation peak %s</text>\n",
            L + 4, T + ph + 54, bytes_str(b, sizeof b, (double)sim.peak_bytes));
    fprintf(f, "</svg>\n");
#undef X
#undef Y
    rc = finish(&af, e);
out:
    free(mem);
    free(ops);
    return rc;
}
