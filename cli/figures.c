/* SVG writers for a schedule (see figures.h): renderers of the scheduler's
 * reports (scheduler/report.h), beside the CLI's other renderers. Everything
 * drawn is the problem, R and S and the schedule report's memory timeline,
 * so a picture can never disagree with what the executor would do; every
 * position is computed from the text the figure holds (figures.h: Layout),
 * so a picture reads the same at 7 nodes and at 700. */
#include "figures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "simulate.h"
#include "utf8.h"

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

#define MARGIN 10.0 /* between the figure's edge and anything in it */
#define LEAD 1.3    /* baseline to baseline inside a block of text, in ems */
#define TITLE_SIZE 16.0
#define TITLE_MAX_W 960.0 /* a narrower figure widens for its title up to here; a longer title wraps */

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

static const char *bytes_str(char *buf, size_t len, double b)
{
    return bytes_fmt(buf, len, b, 0);
}

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

/* s[0..n) as XML 1.0 character data: the special characters escaped, and
 * what XML does not allow in a document (control characters, bytes that
 * are not UTF-8, U+FFFE) or what reorders the text around it (bidi
 * overrides) written as U+FFFD, the replacement character. Node names are
 * shown escaped before they get here (rm_name_show); this keeps any other
 * text, a path in a title, from making the file one that no XML parser
 * reads. */
static void xml_text_n(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = rm_utf8_next(s + i, n - i, &cp);
        if (k == 0 || rm_utf8_hidden(cp)) {
            fputs("\xEF\xBF\xBD", f);
            i += k ? (size_t)k : 1;
            continue;
        }
        switch (s[i]) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fwrite(s + i, 1, (size_t)k, f);
        }
        i += (size_t)k;
    }
}

static const char *tag_colour(rm_node_tag t)
{
    return t == RM_TAG_BACKWARD ? COL_BACKWARD : t == RM_TAG_LOSS ? COL_LOSS : COL_FORWARD;
}

/* ---- Text, measured (figures.h: Layout) ---- */

/* Characters of s[0..n): UTF-8 code points, not bytes. */
static size_t text_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

/* The width of s at size px. */
static double text_w(const char *s, double size)
{
    return RM_FIGURE_CHAR_EM * size * (double)text_chars(s, strlen(s));
}

/* The first line of s (which starts with no space) holding at most maxc
 * characters: broken at the last space that fits, or inside a word too long
 * for any line. Returns its length in bytes, trailing spaces dropped; *next:
 * where the following line starts. */
static size_t line_len(const char *s, size_t maxc, size_t *next)
{
    size_t i = 0, chars = 0, cut = 0;
    for (;;) {
        if (s[i] == '\0') {
            *next = i;
            return i;
        }
        if (s[i] == ' ') cut = i;
        if (chars == maxc) break;
        i++;
        while (((unsigned char)s[i] & 0xC0) == 0x80) i++;
        chars++;
    }
    if (cut == 0) cut = i; /* no space: cut the word */
    size_t len = cut;
    while (len > 0 && s[len - 1] == ' ') len--;
    while (s[cut] == ' ') cut++;
    *next = cut;
    return len;
}

/* s in lines of at most width px at size px, the first baseline at y, one
 * line every LEAD ems; anchor is "start", "middle" or "end"; attrs more
 * attributes or "". With f NULL nothing is written: the layout counts the
 * lines with the very call that draws them. Returns the number of lines. */
static int text_block(FILE *f, double x, double y, double width, double size, const char *anchor, const char *attrs,
                      const char *s)
{
    size_t maxc = (size_t)(width / (RM_FIGURE_CHAR_EM * size));
    if (maxc < 1) maxc = 1;
    while (*s == ' ') s++;
    int lines = 0;
    do {
        size_t next, len = line_len(s, maxc, &next);
        if (f) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\"", x, y + lines * LEAD * size, size);
            if (strcmp(anchor, "start")) fprintf(f, " text-anchor=\"%s\"", anchor);
            fprintf(f, "%s%s>", *attrs ? " " : "", attrs);
            xml_text_n(f, s, len);
            fputs("</text>\n", f);
        }
        lines++;
        s += next;
    } while (*s);
    return lines;
}

/* The baseline of the last of lines lines from y. */
static double block_last(double y, int lines, double size)
{
    return y + (lines - 1) * LEAD * size;
}

/* The SVG goes through a temporary file renamed into place
 * (base/atomic_file.h), so a full disk never leaves half a figure; the
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

/* The figure's width for content that needs *width px and its title: wide
 * enough for the title on one line up to TITLE_MAX_W. Returns the baseline
 * of the title's last line (0 without a title). */
static double title_fit(double *width, const char *title)
{
    if (!title || !*title) return 0;
    double want = text_w(title, TITLE_SIZE) + 2 * MARGIN;
    if (want > TITLE_MAX_W) want = TITLE_MAX_W;
    if (*width < want) *width = want;
    int lines = text_block(NULL, MARGIN, 24, *width - 2 * MARGIN, TITLE_SIZE, "start", "", title);
    return block_last(24, lines, TITLE_SIZE);
}

/* What every figure starts with: the <svg> element, an optional <style>
 * (written verbatim), a white background and the optional title, laid out
 * as title_fit said. */
static void svg_begin(FILE *f, double width, double height, const char *style, const char *title)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" " FONT
            ">\n",
            width, height, width, height);
    if (style) fputs(style, f);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    if (title && *title)
        text_block(f, MARGIN, 24, width - 2 * MARGIN, TITLE_SIZE, "start", "font-weight=\"bold\"", title);
}

/* ---- The R and S grids ---- */

#define RS_HEAD_SIZE 12.0
#define RS_TICK_SIZE 9.0
#define RS_LEGEND_SIZE 11.0
#define RS_CAPTION_SIZE 10.0
#define RS_GAP 40.0 /* between R's right edge (grid, ticks or heading) and S's stage strip */
static const char *const rs_heading[2] = {"R: computed in stage t", "S: kept into stage t"};
static const char rs_caption[] =
    "R: node i (column) computed in stage t (row); the diagonal is each node's first computation, an entry left "
    "of it a recomputation. S: node i's output kept in memory from stage t-1 into stage t. Rows are labelled with "
    "the node each stage computes; dashed line: the backward pass starts.";
static const struct {
    const char *colour, *text;
} rs_legend_items[] = {
    {COL_NEW, "computed (first time)"}, {COL_RE, "recomputed"},         {COL_KEPT, "kept (retained)"},
    {COL_EMPTY, "not in memory"},       {COL_FORWARD, "forward stage"}, {COL_LOSS, "loss stage"},
    {COL_BACKWARD, "backward stage"},
};

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
 * on its left, row labels left of R, the legend and the caption below. */
typedef struct {
    int n;
    double c;     /* cell size */
    int names;    /* row labels carry node names (cells big enough to read them) */
    double font;  /* row label size */
    int label_k;  /* a row label every label_k stages */
    int tick_k;   /* a column number every tick_k nodes */
    double strip; /* width of the stage strip */
    double grid;  /* n * c */
    double x_r, x_s, y0;
    double legend_y;  /* the top of the legend's first row */
    double caption_y; /* the caption's first baseline */
    double width, height;
} rs_layout;

/* Row t's label: "t name", or the stage number alone. */
static const char *rs_row_label(char *buf, size_t len, const rs_layout *g, const rm_problem *p, int t)
{
    char shown[RM_NAME_SHOW_LEN];
    if (g->names)
        snprintf(buf, len, "%d %s", t, rm_name_show(shown, sizeof shown, p->nodes[t].name));
    else
        snprintf(buf, len, "%d", t);
    return buf;
}

/* How far right of its grid's left edge a panel reaches: the grid, its
 * last column number or its heading. */
static double rs_panel_right(const rs_layout *g, int panel)
{
    char num[16];
    int last = (g->n - 1) / g->tick_k * g->tick_k;
    snprintf(num, sizeof num, "%d", last);
    double r = (last + 0.5) * g->c + text_w(num, RS_TICK_SIZE) / 2;
    if (r < g->grid) r = g->grid;
    double head = -g->strip - 4 + text_w(rs_heading[panel], RS_HEAD_SIZE);
    return head > r ? head : r;
}

/* The legend under the grids, its entries wrapped at the figure's width,
 * from row top y. With f NULL it is only laid out. Returns the top of its
 * last row. */
static double rs_legend(FILE *f, double width, double y)
{
    double lx = MARGIN, ly = y;
    for (size_t j = 0; j < sizeof rs_legend_items / sizeof rs_legend_items[0]; j++) {
        double w = 16 + text_w(rs_legend_items[j].text, RS_LEGEND_SIZE);
        if (lx > MARGIN && lx + w > width - MARGIN) {
            lx = MARGIN;
            ly += 20;
        }
        if (f)
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999\" "
                    "stroke-width=\"0.5\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\">%s</text>\n",
                    lx, ly, rs_legend_items[j].colour, lx + 16, ly + 10, RS_LEGEND_SIZE, rs_legend_items[j].text);
        lx += w + 18;
    }
    return ly;
}

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
    /* Names: one per row, within the row's height (a line is one em);
     * numbers alone: every k-th, 14 px apart. */
    g.font = g.names ? (c - 1 < 11 ? c - 1 : 11) : 10;
    g.label_k = g.names ? 1 : (int)ceil(14.0 / c);
    g.tick_k = (int)ceil(28.0 / c); /* column numbers at least 28 px apart */
    g.strip = 7;
    g.grid = n * c;
    double label_w = 0;
    for (int t = 0; t < n; t += g.label_k) {
        char buf[RM_NAME_SHOW_LEN + 16];
        double w = text_w(rs_row_label(buf, sizeof buf, &g, p, t), g.font);
        if (w > label_w) label_w = w;
    }
    g.x_r = MARGIN + label_w + 6 + g.strip; /* labels end 6 px left of the strip */
    g.x_s = g.x_r + rs_panel_right(&g, 0) + RS_GAP + g.strip + 2;
    g.width = g.x_s + rs_panel_right(&g, 1) + MARGIN;
    /* Room for the widest legend entry on a line of its own. */
    for (size_t j = 0; j < sizeof rs_legend_items / sizeof rs_legend_items[0]; j++) {
        double w = 16 + text_w(rs_legend_items[j].text, RS_LEGEND_SIZE) + 2 * MARGIN;
        if (w > g.width) g.width = w;
    }
    double title_y = title_fit(&g.width, title);
    /* The heading's baseline is 22 px above the grid, the column numbers'
     * 5 px. */
    g.y0 = title_y > 0 ? title_y + 50 : 54;
    g.legend_y = g.y0 + g.grid + 24;
    g.caption_y = rs_legend(NULL, g.width, g.legend_y) + 32;
    int lines = text_block(NULL, MARGIN, g.caption_y, g.width - 2 * MARGIN, RS_CAPTION_SIZE, "start", "", rs_caption);
    g.height = ceil(block_last(g.caption_y, lines, RS_CAPTION_SIZE) + 0.2 * RS_CAPTION_SIZE + MARGIN);
    g.width = ceil(g.width);
    return g;
}

/* One grid (panel 0: R, panel 1: S) with its heading, column numbers,
 * stage strip and the impossible upper triangle. */
static void rs_panel(FILE *f, const rs_layout *g, const rm_problem *p, const rm_schedule *s, int panel)
{
    int n = g->n;
    double c = g->c, x0 = panel ? g->x_s : g->x_r, y0 = g->y0;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" font-weight=\"bold\">%s</text>\n", x0 - g->strip - 4,
            y0 - 22, RS_HEAD_SIZE, rs_heading[panel]);
    for (int i = 0; i < n; i += g->tick_k)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"middle\" fill=\"#666\">%d</text>\n",
                x0 + (i + 0.5) * c, y0 - 5, RS_TICK_SIZE, i);
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
            fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n", cls, x0 + i * c,
                    y0 + t * c, c, c);
        }
    }
    fprintf(f, "</g>\n");
}

/* Row labels: stage number and the node it computes (every k-th stage
 * number alone when the cells are too small for names), centred on the row
 * (a line's em box is 0.8 em above the baseline, 0.2 below). */
static void rs_row_labels(FILE *f, const rs_layout *g, const rm_problem *p)
{
    for (int t = 0; t < g->n; t += g->label_k) {
        char buf[RM_NAME_SHOW_LEN + 16];
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"end\">", g->x_r - g->strip - 6,
                g->y0 + t * g->c + g->c / 2 + g->font * 0.3, g->font);
        const char *label = rs_row_label(buf, sizeof buf, g, p, t);
        xml_text_n(f, label, strlen(label));
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
    rs_legend(f, g.width, g.legend_y);
    text_block(f, MARGIN, g.caption_y, g.width - 2 * MARGIN, RS_CAPTION_SIZE, "start", "fill=\"#666\"", rs_caption);
    fprintf(f, "</svg>\n");
    return finish(&af, e);
}

/* ---- The memory timeline ---- */

/* A memory plot: total bytes (fixed + live activations) over operations
 * 0..nops, in the pw x ph box at (L, T). The y axis runs from y_lo (0, or
 * just under the fixed bytes when the axis is broken) to top_v. */
typedef struct {
    double L, T, pw, ph;
    double y_lo, top_v;
    int broken; /* the y axis starts above 0 */
    int nops;
    double fixed, budget; /* bytes */
} mem_plot;

#define MEM_SIZE 11.0      /* labels */
#define MEM_NOTE_SIZE 10.0 /* the captions under the plot */
#define MEM_TICKS_MAX 64

/* The y scale for peaks up to top_peak (fixed included), the budget and
 * p's fixed bytes; the box is left to the caller. */
static mem_plot mem_scale(const rm_problem *p, double top_peak)
{
    mem_plot m;
    memset(&m, 0, sizeof m);
    m.fixed = (double)p->fixed_bytes;
    m.budget = (double)p->budget;
    m.top_v = top_peak > m.budget ? top_peak : m.budget;
    if (m.top_v <= 0) m.top_v = 1;
    m.top_v *= 1.08;
    /* Break the axis when the fixed bytes would squash the activations. */
    if (m.fixed > 0.6 * m.top_v) {
        m.y_lo = m.fixed - 0.25 * (m.top_v - m.fixed);
        m.broken = 1;
    }
    return m;
}

/* The x of operation k (its left edge) and the y of v bytes. */
static double mem_x(const mem_plot *m, int k)
{
    return m->L + m->pw * (double)k / (double)(m->nops > 0 ? m->nops : 1);
}
static double mem_y(const mem_plot *m, double v)
{
    return m->T + m->ph * (1.0 - (v - m->y_lo) / (m->top_v - m->y_lo));
}

/* The y axis' round values (at most MEM_TICKS_MAX), into v. */
static int mem_ticks(const mem_plot *m, double *v)
{
    double step = nice_step((m->top_v - m->y_lo) / 5.0);
    int k = 0;
    for (double x = ceil(m->y_lo / step) * step; x <= m->top_v + 1e-9 * m->top_v && k < MEM_TICKS_MAX; x += step)
        v[k++] = x;
    return k;
}

/* The room the y axis' labels take left of the plot. */
static double mem_label_room(const mem_plot *m)
{
    double v[MEM_TICKS_MAX], w = 0;
    char a[32];
    int k = mem_ticks(m, v);
    for (int i = 0; i < k; i++) {
        double x = text_w(bytes_fmt(a, sizeof a, v[i], 1), MEM_SIZE);
        if (x > w) w = x;
    }
    return w + 6 > 12 ? w + 6 : 12; /* the zig-zag of a broken axis reaches 8 px out */
}

/* Grid lines (labelled when labels is set) at round values, then the grey
 * band of the fixed bytes. */
static void mem_grid_and_fixed(FILE *f, const mem_plot *m, int labels)
{
    char a[32];
    double v[MEM_TICKS_MAX];
    int k = mem_ticks(m, v);
    for (int i = 0; i < k; i++) {
        double y = mem_y(m, v[i]);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e6e6e6\"/>\n", m->L, y,
                m->L + m->pw, y);
        if (labels)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"end\">%s</text>\n", m->L - 6, y + 4,
                    MEM_SIZE, bytes_fmt(a, sizeof a, v[i], 1));
    }
    if (m->fixed > m->y_lo)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" COL_FIXED
                "\" fill-opacity=\"0.7\"/>\n",
                m->L, mem_y(m, m->fixed), m->pw, mem_y(m, m->y_lo) - mem_y(m, m->fixed));
}

/* Live activations, stacked on the fixed bytes: a step function, one step
 * per operation. */
static void mem_activations(FILE *f, const mem_plot *m, const rm_schedule_report *ser)
{
    double base = mem_y(m, m->fixed);
    fprintf(f, "<polygon fill=\"" COL_ACT "\" stroke=\"#3d85c6\" stroke-width=\"0.8\" points=\"%.1f,%.1f", mem_x(m, 0),
            base);
    for (int k = 0; k < ser->nops; k++) {
        double y = mem_y(m, m->fixed + (double)ser->mem[k]);
        fprintf(f, " %.2f,%.2f %.2f,%.2f", mem_x(m, k), y, mem_x(m, k + 1), y);
    }
    fprintf(f, " %.1f,%.1f\"/>\n", mem_x(m, ser->nops), base);
}

/* The forward / backward boundary: a dashed vertical line at the first
 * operation of a backward stage; with labels, each side named where the
 * name fits inside the plot. */
static void mem_pass_boundary(FILE *f, const mem_plot *m, const rm_schedule_report *ser, int labels)
{
    if (ser->backward_op <= 0) return;
    double x = mem_x(m, ser->backward_op);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-dasharray=\"4,3\"/>\n", x,
            m->T, x, m->T + m->ph);
    if (!labels) return;
    if (x - 4 - text_w("forward pass", MEM_SIZE) >= m->L)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" text-anchor=\"end\">forward pass</text>\n", x - 4,
                m->T + 12, MEM_SIZE);
    if (x + 4 + text_w("backward pass", MEM_SIZE) <= m->L + m->pw)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\">backward pass</text>\n", x + 4, m->T + 12, MEM_SIZE);
}

/* Recomputations as ticks under the plot, at least 2 px wide. */
static void mem_recompute_ticks(FILE *f, const mem_plot *m, const rm_schedule_report *ser)
{
    double w = m->pw / (m->nops > 0 ? m->nops : 1);
    if (w < 2) w = 2;
    fprintf(f, "<g fill=\"" COL_RE "\">\n");
    for (int k = 0; k < ser->nops; k++)
        if (rm_op_is_recompute(ser, &ser->ops[k]))
            fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"9\"/>\n", mem_x(m, k), m->T + m->ph + 3, w);
    fprintf(f, "</g>\n");
}

/* The budget as a dashed line, and the peak as a dot at the first compute
 * that reaches it. */
static void mem_budget_and_peak(FILE *f, const mem_plot *m, const rm_schedule_report *ser)
{
    if (m->budget > 0)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COL_BUDGET
                "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n",
                m->L, mem_y(m, m->budget), m->L + m->pw, mem_y(m, m->budget));
    if (ser->peak_op >= 0)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#000\"/>\n",
                (mem_x(m, ser->peak_op) + mem_x(m, ser->peak_op + 1)) / 2,
                mem_y(m, m->fixed + (double)ser->sim.peak_bytes));
}

/* The axes, with the zig-zag of a broken one. */
static void mem_axes(FILE *f, const mem_plot *m)
{
    double L = m->L, T = m->T, pw = m->pw, ph = m->ph;
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
}

/* ---- The memory figure: one timeline with its labels ---- */

#define MEM_W 960.0
#define MEM_PH 298.0

/* A label right of the plot: the budget, the peak, the fixed bytes. */
typedef struct {
    double y;
    char text[64];
    const char *fill;
} side_label;

/* The labels right of the plot, where their lines are, then moved apart
 * (in their order) until baselines are at least 14 px apart and none is
 * below the plot's bottom. Returns how many. */
static int mem_side_labels(side_label *lab, const mem_plot *m, const rm_schedule_report *ser)
{
    char a[32];
    int k = 0;
    if (m->budget > 0) {
        lab[k] = (side_label){mem_y(m, m->budget) + 4, "", COL_BUDGET};
        snprintf(lab[k++].text, sizeof lab[0].text, "budget %s", bytes_str(a, sizeof a, m->budget));
    }
    if (ser->peak_op >= 0) {
        double peak = m->fixed + (double)ser->sim.peak_bytes;
        lab[k] = (side_label){mem_y(m, peak) + 4, "", "#000"};
        snprintf(lab[k++].text, sizeof lab[0].text, "peak %s", bytes_str(a, sizeof a, peak));
    }
    if (m->fixed > 0) {
        lab[k] = (side_label){(mem_y(m, m->fixed) + mem_y(m, m->y_lo)) / 2 + 4, "", "#555"};
        snprintf(lab[k++].text, sizeof lab[0].text, "fixed %s%s", bytes_str(a, sizeof a, m->fixed),
                 m->broken ? " (axis cut)" : "");
    }
    for (int i = 1; i < k; i++) /* by height; at most three */
        for (int j = i; j > 0 && lab[j].y < lab[j - 1].y; j--) {
            side_label t = lab[j];
            lab[j] = lab[j - 1];
            lab[j - 1] = t;
        }
    const double gap = 14, bottom = m->T + m->ph + 4;
    for (int i = 1; i < k; i++)
        if (lab[i].y < lab[i - 1].y + gap) lab[i].y = lab[i - 1].y + gap;
    if (k && lab[k - 1].y > bottom) lab[k - 1].y = bottom;
    for (int i = k - 2; i >= 0; i--)
        if (lab[i].y > lab[i + 1].y - gap) lab[i].y = lab[i + 1].y - gap;
    return k;
}

/* The captions under the plot: what the operation sequence holds, where
 * the peak is, what the colours are. */
typedef struct {
    char ops[200], peak[RM_NAME_SHOW_LEN + 120], key[200];
    double y_ops, y_peak, y_key, bottom;
} mem_captions;

static void mem_captions_of(mem_captions *c, const mem_plot *m, const rm_problem *p, const rm_schedule_report *ser,
                            double width)
{
    char a[32];
    snprintf(c->ops, sizeof c->ops,
             "operation sequence: %d computes (%d of them recomputations, marked below the axis) and %d frees",
             ser->ncomputes, ser->nrecomputes, ser->nops - ser->ncomputes);
    c->peak[0] = '\0';
    char shown[RM_NAME_SHOW_LEN];
    if (ser->peak_op >= 0)
        snprintf(c->peak, sizeof c->peak, "peak (dot) while computing '%s', stage %d (operation %d)",
                 rm_name_show(shown, sizeof shown, p->nodes[ser->ops[ser->peak_op].node].name),
                 ser->ops[ser->peak_op].stage, ser->peak_op);
    snprintf(
        c->key, sizeof c->key,
        "grey: fixed bytes (all that training holds besides activations); blue: live activations; activation peak %s",
        bytes_str(a, sizeof a, (double)ser->sim.peak_bytes));
    double nw = width - MARGIN - (m->L + 4);
    c->y_ops = m->T + m->ph + 26;
    double y = block_last(c->y_ops, text_block(NULL, 0, c->y_ops, m->pw, MEM_SIZE, "middle", "", c->ops), MEM_SIZE);
    c->y_peak = y + 14;
    if (c->peak[0])
        y = block_last(c->y_peak, text_block(NULL, 0, c->y_peak, nw, MEM_NOTE_SIZE, "start", "", c->peak),
                       MEM_NOTE_SIZE);
    c->y_key = y + 14;
    y = block_last(c->y_key, text_block(NULL, 0, c->y_key, nw, MEM_NOTE_SIZE, "start", "", c->key), MEM_NOTE_SIZE);
    c->bottom = y + 0.2 * MEM_NOTE_SIZE;
}

static void mem_captions_draw(FILE *f, const mem_captions *c, const mem_plot *m, double width)
{
    double nw = width - MARGIN - (m->L + 4);
    text_block(f, m->L + m->pw / 2, c->y_ops, m->pw, MEM_SIZE, "middle", "", c->ops);
    if (c->peak[0]) text_block(f, m->L + 4, c->y_peak, nw, MEM_NOTE_SIZE, "start", "fill=\"#444\"", c->peak);
    text_block(f, m->L + 4, c->y_key, nw, MEM_NOTE_SIZE, "start", "fill=\"#444\"", c->key);
}

int rm_figure_memory_svg(const char *path, const rm_problem *p, const rm_schedule_report *r, const char *title,
                         rm_err *e)
{
    if (!p || !r || p->n < 1) return rm_errorf(e, RM_ERR_INVALID, "figure: no problem or schedule");
    if (r->n != p->n)
        return rm_errorf(e, RM_ERR_INVALID, "figure: the schedule has %d stages, the problem %d nodes", r->n, p->n);
    const rm_schedule_report *ser = r;
    int rc;
    mem_plot m = mem_scale(p, (double)p->fixed_bytes + (double)ser->sim.peak_bytes);
    m.nops = ser->nops;
    double width = MEM_W;
    double title_y = title_fit(&width, title);
    m.T = title_y > 0 ? title_y + 40 : 40;
    m.ph = MEM_PH;
    m.L = MARGIN + mem_label_room(&m);
    /* The side labels' places depend on T and ph only; their widths set the
     * room right of the plot. */
    side_label lab[3];
    int nlab = mem_side_labels(lab, &m, ser);
    double right = 0;
    for (int i = 0; i < nlab; i++)
        if (text_w(lab[i].text, MEM_SIZE) > right) right = text_w(lab[i].text, MEM_SIZE);
    m.pw = width - m.L - (6 + right + MARGIN);
    mem_captions cap;
    mem_captions_of(&cap, &m, p, ser, width);
    double height = ceil(cap.bottom + MARGIN);

    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) return rc;
    FILE *f = af.f;
    svg_begin(f, width, height, NULL, title);
    mem_grid_and_fixed(f, &m, 1);
    mem_activations(f, &m, ser);
    mem_pass_boundary(f, &m, ser, 1);
    mem_recompute_ticks(f, &m, ser);
    mem_budget_and_peak(f, &m, ser);
    mem_axes(f, &m);
    for (int i = 0; i < nlab; i++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%g\" fill=\"%s\">", m.L + m.pw + 6, lab[i].y, MEM_SIZE,
                lab[i].fill);
        xml_text_n(f, lab[i].text, strlen(lab[i].text));
        fprintf(f, "</text>\n");
    }
    mem_captions_draw(f, &cap, &m, width);
    fprintf(f, "</svg>\n");
    return finish(&af, e);
}

/* ---- Several timelines side by side ---- */

#define CMP_COLS 3
#define CMP_PW 270.0
#define CMP_PH 140.0
#define CMP_GAP 34.0
#define CMP_MIN_W 640.0

/* The note under the panels: the shared axes, the colours, and who found
 * nothing. malloc'ed; NULL when out of memory. */
static char *compare_note(const mem_plot *m, const rm_figure_entry *v, int n, int nfit)
{
    char c[32], d[32];
    size_t len = 600;
    for (int i = 0; i < n; i++)
        if (!v[i].r) len += strlen(v[i].name) + (v[i].why ? strlen(v[i].why) : 0) + 8;
    char *s = malloc(len);
    if (!s) return NULL;
    size_t o = 0;
    s[0] = '\0';
    if (nfit) {
        o += (size_t)snprintf(s, len,
                              "Shared axes: every panel has the y scale labelled on the left%s and the same x scale, "
                              "operations 0 to %d (the longest sequence). ",
                              m->broken ? " (cut above 0)" : "", m->nops);
        if (m->budget > 0)
            o +=
                (size_t)snprintf(s + o, len - o, "Red dashed line: the budget %s. ", bytes_str(c, sizeof c, m->budget));
        o += (size_t)snprintf(s + o, len - o,
                              "Grey: fixed bytes %s; blue: live activations; orange ticks: recomputations; dot: "
                              "the peak.",
                              bytes_str(d, sizeof d, m->fixed));
    }
    if (nfit < n) {
        o +=
            (size_t)snprintf(s + o, len - o, "%s%s: ", nfit ? " " : "",
                             nfit ? "No schedule within the budget" : "No strategy found a schedule within the budget");
        for (int i = 0, k = 0; i < n; i++)
            if (!v[i].r)
                o += (size_t)snprintf(s + o, len - o, "%s%s%s%s%s", k++ ? ", " : "", v[i].name, v[i].why ? " (" : "",
                                      v[i].why ? v[i].why : "", v[i].why ? ")" : "");
        snprintf(s + o, len - o, ".");
    }
    return s;
}

int rm_figure_compare_svg(const char *path, const rm_problem *p, const rm_problem_report *facts,
                          const rm_figure_entry *v, int n, const char *title, rm_err *e)
{
    if (!p || !facts || p->n < 1 || n < 0 || (n > 0 && !v))
        return rm_errorf(e, RM_ERR_INVALID, "figure: no problem or entries");
    char *head = calloc((size_t)(n > 0 ? n : 1), 128);
    char *note = NULL;
    int rc = head ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "figure: out of memory");
    double top = 0;
    int nfit = 0, nops = 0;
    for (int i = 0; i < n && !rc; i++) {
        const rm_schedule_report *r = v[i].r;
        if (!r) continue;
        if (r->n != p->n) {
            rc = rm_errorf(e, RM_ERR_INVALID, "figure: %s: the schedule has %d stages, the problem %d nodes", v[i].name,
                           r->n, p->n);
            break;
        }
        double peak = (double)p->fixed_bytes + (double)r->sim.peak_bytes;
        if (peak > top) top = peak;
        if (r->nops > nops) nops = r->nops;
        nfit++;
    }
    if (rc) goto out;

    /* Shared axes: one scale, one label column left of the first column. */
    mem_plot m = mem_scale(p, top);
    m.nops = nops;
    m.pw = CMP_PW;
    m.ph = CMP_PH;
    int cols = nfit < CMP_COLS ? (nfit > 0 ? nfit : 1) : CMP_COLS, rows = (nfit + cols - 1) / cols;
    double x0 = MARGIN + mem_label_room(&m);
    double width = x0 + cols * CMP_PW + (cols - 1) * CMP_GAP + MARGIN;
    if (width < CMP_MIN_W) width = CMP_MIN_W; /* the note under one panel wraps less */
    double title_y = title_fit(&width, title);
    /* Each panel's heading: the strategy in bold, then its overhead and
     * peak; every row leaves room for the most lines one takes. */
    double base = facts->base_cost;
    int l1 = 1, l2 = 1;
    for (int i = 0; i < n; i++) {
        if (!v[i].r) continue;
        char a[32];
        snprintf(head + (size_t)i * 128, 128, "%+.2f%% compute, peak %s", rm_overhead_pct(v[i].r->sim.cost, base),
                 bytes_str(a, sizeof a, (double)p->fixed_bytes + (double)v[i].r->sim.peak_bytes));
        int l = text_block(NULL, 0, 0, CMP_PW, MEM_SIZE, "start", "", v[i].name);
        if (l > l1) l1 = l;
        l = text_block(NULL, 0, 0, CMP_PW, MEM_NOTE_SIZE, "start", "", head + (size_t)i * 128);
        if (l > l2) l2 = l;
    }
    /* A row: the heading, 12 px, the plot, its recomputation ticks. Offsets
     * from the row's top: */
    double name_dy = MEM_SIZE, stats_dy = block_last(name_dy, l1, MEM_SIZE) + 13;
    double head_h = block_last(stats_dy, l2, MEM_NOTE_SIZE) + 12, row_h = head_h + CMP_PH + 26;
    double row_top = title_y > 0 ? title_y + 20 : MARGIN;
    note = compare_note(&m, v, n, nfit);
    if (!note) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "figure: out of memory");
        goto out;
    }
    double note_y = row_top + rows * row_h + (rows ? 4 : 10);
    int note_lines = 0;
    if (*note) note_lines = text_block(NULL, MARGIN, note_y, width - 2 * MARGIN, MEM_NOTE_SIZE, "start", "", note);
    double height = ceil(block_last(note_y, note_lines, MEM_NOTE_SIZE) + 0.2 * MEM_NOTE_SIZE + MARGIN);

    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) goto out;
    FILE *f = af.f;
    svg_begin(f, width, height, NULL, title);
    for (int i = 0, k = 0; i < n; i++) {
        if (!v[i].r) continue;
        int col = k % cols, row = k / cols;
        k++;
        m.L = x0 + col * (CMP_PW + CMP_GAP);
        m.T = row_top + row * row_h + head_h;
        double y = row_top + row * row_h;
        fprintf(f, "<g class=\"panel\">\n");
        text_block(f, m.L, y + name_dy, CMP_PW, MEM_SIZE, "start", "font-weight=\"bold\"", v[i].name);
        text_block(f, m.L, y + stats_dy, CMP_PW, MEM_NOTE_SIZE, "start", "fill=\"#444\"", head + (size_t)i * 128);
        mem_grid_and_fixed(f, &m, col == 0);
        mem_activations(f, &m, v[i].r);
        mem_pass_boundary(f, &m, v[i].r, 0);
        mem_recompute_ticks(f, &m, v[i].r);
        mem_budget_and_peak(f, &m, v[i].r);
        mem_axes(f, &m);
        fprintf(f, "</g>\n");
    }
    if (*note) text_block(f, MARGIN, note_y, width - 2 * MARGIN, MEM_NOTE_SIZE, "start", "fill=\"#444\"", note);
    fprintf(f, "</svg>\n");
    rc = finish(&af, e);
out:
    free(head);
    free(note);
    return rc;
}
