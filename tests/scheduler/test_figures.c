/* The SVG figures read well at every size (issue 14): every <text> lies
 * inside the viewBox and no two overlap, measured as figures.h promises
 * (each character 0.62 em wide, a line its em box), for the two-layer
 * example, the README's figures, a ResNet-50, and generated problems from 1
 * to 301 nodes with names of 1 to 63 characters, with and without a broken
 * axis and titles of every length. Also the comparison figure of `plan
 * --strategy all --svg`: one panel per strategy that found a schedule, the
 * others listed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "figures.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

#define TWO_LAYER REMAT_SOURCE_DIR "/docs/examples/two-layer.txt"

/* The measure the tests hold the figures to; the layout's own may only be
 * wider. */
#define EM 0.62

TestSuite(figures, .init = cf_setup, .fini = cf_teardown);

typedef struct {
    double x0, y0, x1, y1;
    char text[96];
} text_box;

/* The value of attribute name (" x=", not "cx=") in the start tag tag..end, or dflt. */
static double attr_num(const char *tag, const char *end, const char *name, double dflt)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *a = strstr(tag, key);
    if (!a || a > end) return dflt;
    return strtod(a + strlen(key), NULL);
}

static int attr_is(const char *tag, const char *end, const char *name, const char *value)
{
    char key[64];
    snprintf(key, sizeof key, " %s=\"%s\"", name, value);
    const char *a = strstr(tag, key);
    return a && a < end;
}

/* The boxes of every <text> of svg, and the viewBox's size. Free *out. */
static int text_boxes(const char *svg, text_box **out, double *w, double *h)
{
    const char *vb = strstr(svg, "viewBox=\"0 0 ");
    cr_assert_not_null(vb, "no viewBox");
    cr_assert_eq(sscanf(vb, "viewBox=\"0 0 %lf %lf\"", w, h), 2);
    int n = 0, cap = 64;
    text_box *b = malloc((size_t)cap * sizeof *b);
    cr_assert_not_null(b);
    for (const char *t = strstr(svg, "<text "); t; t = strstr(t + 1, "<text ")) {
        const char *end = strchr(t, '>'), *close = strstr(t, "</text>");
        cr_assert(end && close && end < close, "an unclosed <text>");
        double x = attr_num(t, end, "x", 0), y = attr_num(t, end, "y", 0), size = attr_num(t, end, "font-size", 0);
        cr_assert_gt(size, 0, "a <text> without a font size");
        /* Characters: an entity is one, UTF-8 continuation bytes none. */
        size_t chars = 0;
        char text[96];
        size_t k = 0;
        for (const char *c = end + 1; c < close; c++) {
            char ch = *c;
            if (ch == '&')
                c = strchr(c, ';'); /* shown as '&' in messages */
            else if (((unsigned char)ch & 0xC0) == 0x80)
                continue;
            if (k + 1 < sizeof text) text[k++] = ch;
            chars++;
        }
        text[k] = '\0';
        double tw = EM * size * (double)chars;
        double x0 = attr_is(t, end, "text-anchor", "middle") ? x - tw / 2
                    : attr_is(t, end, "text-anchor", "end")  ? x - tw
                                                             : x;
        if (n == cap) {
            cap *= 2;
            b = realloc(b, (size_t)cap * sizeof *b);
            cr_assert_not_null(b);
        }
        b[n] = (text_box){x0, y - 0.8 * size, x0 + tw, y + 0.2 * size, ""};
        snprintf(b[n].text, sizeof b[n].text, "%s", text);
        n++;
    }
    *out = b;
    return n;
}

/* Every text of the SVG at path inside the viewBox, no two overlapping.
 * Returns how many texts there are. */
static int expect_readable(const char *path)
{
    char *svg = cf_text(path);
    text_box *b;
    double w, h;
    int n = text_boxes(svg, &b, &w, &h);
    const double eps = 0.06; /* the file's coordinates have one decimal */
    for (int i = 0; i < n; i++) {
        cr_expect(b[i].x0 >= -eps && b[i].x1 <= w + eps && b[i].y0 >= -eps && b[i].y1 <= h + eps,
                  "%s: '%s' [%.1f..%.1f] x [%.1f..%.1f] is outside the %.0f x %.0f viewBox", path, b[i].text, b[i].x0,
                  b[i].x1, b[i].y0, b[i].y1, w, h);
        for (int j = 0; j < i; j++) {
            double ox = (b[i].x1 < b[j].x1 ? b[i].x1 : b[j].x1) - (b[i].x0 > b[j].x0 ? b[i].x0 : b[j].x0);
            double oy = (b[i].y1 < b[j].y1 ? b[i].y1 : b[j].y1) - (b[i].y0 > b[j].y0 ? b[i].y0 : b[j].y0);
            cr_expect(ox <= eps || oy <= eps, "%s: '%s' and '%s' overlap (%.1f x %.1f px)", path, b[i].text, b[j].text,
                      ox, oy);
        }
    }
    free(b);
    free(svg);
    return n;
}

/* What the SVG says: the contents of its <text> elements joined by spaces,
 * so that a wrapped sentence reads as one (entities left as written).
 * Free it. */
static char *all_text(const char *svg)
{
    char *out = malloc(strlen(svg) + 1);
    cr_assert_not_null(out);
    size_t k = 0;
    for (const char *t = strstr(svg, "<text "); t; t = strstr(t + 1, "<text ")) {
        const char *a = strchr(t, '>') + 1, *z = strstr(a, "</text>");
        if (k) out[k++] = ' ';
        memcpy(out + k, a, (size_t)(z - a));
        k += (size_t)(z - a);
    }
    out[k] = '\0';
    return out;
}

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *h = strstr(hay, needle); h; h = strstr(h + 1, needle)) c++;
    return c;
}

Test(figures, the_layout_measures_at_least_as_wide_as_the_tests)
{
    cr_assert_geq(RM_FIGURE_CHAR_EM, EM);
}

/* Issue 14: two-layer-rs.svg was 286 px high with text at y = 294 and 316,
 * its title overflowed the width and the R and S headings overlapped. */
Test(figures, two_layer_example_reads_well)
{
    const char *prefix = cf_path("tl");
    cr_assert_eq(cf_remat("plan", "--problem", TWO_LAYER, "--svg", prefix, "--quiet", NULL), 0, "%s", cf_err);
    cr_assert_geq(expect_readable(cf_path("tl-rs.svg")), 7 + 2 + 2 * 4 + 7 + 2, "title, headings, labels, legend");
    cr_assert_geq(expect_readable(cf_path("tl-memory.svg")), 8);
    /* The caption and the last legend entry are there, not clipped away. */
    char *rs = cf_text(cf_path("tl-rs.svg"));
    cr_assert(strstr(rs, ">backward stage</text>"));
    cr_assert(strstr(rs, "the backward pass starts.</text>"));
    free(rs);
}

/* The figures the README shows (scripts/doc-examples draws them). */
Test(figures, the_readmes_figures_read_well)
{
    static const char *const names[] = {"two-layer-rs", "two-layer-memory", "resnet-tiny-rs", "resnet-tiny-memory"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/docs/img/%s.svg", REMAT_SOURCE_DIR, names[k]);
        cr_assert_gt(expect_readable(path), 5, "%s", path);
    }
}

Test(figures, resnet50_reads_well)
{
    const char *prefix = cf_path("r50");
    cr_assert_eq(cf_remat("plan", "--model", CF_MODEL("resnet50.cfg"), "--batch", "2", "--budget", "90%", "--strategy",
                          "chen_sqrtn", "--svg", prefix, "--quiet", NULL),
                 0, "%s", cf_err);
    /* 367 stages: numbers every 5 rows, columns every 10. */
    cr_assert_geq(expect_readable(cf_path("r50-rs.svg")), 367 / 5 + 2 * 367 / 10);
    expect_readable(cf_path("r50-memory.svg"));
}

/* A training-like chain: f forward nodes, the loss, f backward nodes
 * (backward j reads the gradient before it and its forward node), every
 * name name_len characters long. */
static rm_problem *chain(int f, int name_len, size_t fixed)
{
    rm_err e = {RM_OK, ""};
    rm_problem *p;
    int n = 2 * f + 1;
    cr_assert_eq(rm_problem_create(&p, n, &e), RM_OK, "%s", e.msg);
    p->fixed_bytes = fixed;
    for (int i = 0; i < n; i++) {
        rm_problem_node *nd = &p->nodes[i];
        char name[RM_NAME_LEN];
        snprintf(name, sizeof name, "%d%s", i, "_abcdefghijklmnopqrstuvwxyz_abcdefghijklmnopqrstuvwxyz_abcdefghij");
        snprintf(nd->name, (size_t)name_len + 1, "%s", name);
        nd->tag = i < f ? RM_TAG_FORWARD : i == f ? RM_TAG_LOSS : RM_TAG_BACKWARD;
        nd->cost = 1 + i % 3;
        nd->bytes = 1000 * (size_t)(1 + i % 5);
        int deps[2], k = 0;
        if (i > f) deps[k++] = 2 * f - i; /* backward: its forward node, then the gradient before it */
        if (i > 0) deps[k++] = i - 1;
        cr_assert_eq(rm_problem_set_deps(p, i, deps, k, &e), RM_OK, "%s", e.msg);
    }
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK, "%s", e.msg);
    return p;
}

Test(figures, every_size_reads_well)
{
    static const int forward[] = {0, 1, 3, 30, 150};
    static const int names[] = {1, 63};
    static const size_t fixed[] = {0, 1u << 30};
    char long_title[400];
    memset(long_title, 'w', sizeof long_title - 1);
    for (int k = 0; k < 40; k++) long_title[k * 9] = ' ';
    long_title[sizeof long_title - 1] = '\0';
    const char *titles[] = {NULL, "t", long_title};
    int case_no = 0;
    const char *rs = cf_path("rs.svg"), *mem = cf_path("mem.svg"), *cmp = cf_path("cmp.svg");
    for (size_t a = 0; a < sizeof forward / sizeof forward[0]; a++)
        for (size_t b = 0; b < sizeof names / sizeof names[0]; b++)
            for (size_t c = 0; c < sizeof fixed / sizeof fixed[0]; c++, case_no++) {
                rm_problem *p = chain(forward[a], names[b], fixed[c]);
                rm_err e = {RM_OK, ""};
                rm_schedule *all, *sq;
                cr_assert_eq(rm_strategy_checkpoint_all(&all, p, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(rm_strategy_chen_sqrtn(&sq, p, &e), RM_OK, "%s", e.msg);
                rm_sim_result r;
                cr_assert_eq(rm_simulate(&r, p, all, &e), RM_OK, "%s", e.msg);
                p->budget = p->fixed_bytes + r.peak_bytes; /* a budget line at the top */
                const char *title = titles[case_no % 3];
                cr_assert_eq(rm_figure_rs_svg(rs, p, sq, title, &e), RM_OK, "%s", e.msg);
                rm_schedule_report ra, rq;
                rm_problem_report facts;
                cr_assert_eq(rm_schedule_report_of(&ra, p, all, NULL, 0, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(rm_schedule_report_of(&rq, p, sq, NULL, 0, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(rm_problem_report_of(&facts, p, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(rm_figure_memory_svg(mem, p, &rq, title, &e), RM_OK, "%s", e.msg);
                rm_figure_entry v[] = {
                    {"checkpoint_all", &ra, NULL}, {"none", NULL, "infeasible"}, {"chen_sqrtn", &rq, NULL}};
                cr_assert_eq(rm_figure_compare_svg(cmp, p, &facts, v, 3, title, &e), RM_OK, "%s", e.msg);
                rm_schedule_report_free(&ra);
                rm_schedule_report_free(&rq);
                cr_log_info("n %d, names %d, fixed %zu", p->n, names[b], fixed[c]);
                expect_readable(rs);
                expect_readable(mem);
                expect_readable(cmp);
                rm_schedule_free(all);
                rm_schedule_free(sq);
                rm_problem_free(p);
            }
}

/* --strategy all --svg: the cheapest schedule's two figures and the
 * comparison, one panel per strategy that found a schedule. On the two-layer
 * example at 11000 bytes checkpoint_all and griewank find none. */
Test(figures, strategy_all_compares_every_strategy)
{
    const char *prefix = cf_path("all");
    cr_assert_eq(cf_remat("plan", "--problem", TWO_LAYER, "--strategy", "all", "--time-limit", "0", "--node-limit",
                          "100", "--svg", prefix, "--quiet", NULL),
                 0, "%s", cf_err);
    int count;
    rm_strategy_list_all(&count);
    char want[200];
    snprintf(want, sizeof want, "comparison   %s (%d of %d strategies found a schedule)\n", cf_path("all-compare.svg"),
             count - 2, count);
    cr_assert(cf_said(0, want), "%s", want);
    cr_assert(cf_said(0, "figures      "));
    const char *path = cf_path("all-compare.svg");
    expect_readable(path);
    char *svg = cf_text(path);
    cr_assert_eq(count_of(svg, "<g class=\"panel\">"), count - 2);
    cr_assert(strstr(svg, ">milp</text>"));
    char *said = all_text(svg);
    cr_assert(strstr(said, "No schedule within the budget: checkpoint_all (infeasible), griewank (infeasible)."), "%s",
              said);
    free(said);
    /* chen_sqrtn's heading: +1.35% compute (checkpoint-all 7396, chen_sqrtn recomputes the input: +100). */
    cr_assert(strstr(svg, ">+1.35% compute, peak 10.00 KiB</text>"));
    free(svg);
    /* Without --svg nothing is drawn; one strategy draws no comparison. */
    cr_assert_eq(
        cf_remat("plan", "--problem", TWO_LAYER, "--strategy", "ogc", "--svg", cf_path("one"), "--quiet", NULL), 0,
        "%s", cf_err);
    FILE *f = fopen(cf_path("one-compare.svg"), "r");
    cr_assert_null(f);
}

/* Nothing fits: the comparison still says so, and the exit is 1. */
Test(figures, strategy_all_with_nothing_fitting)
{
    rm_problem *p = chain(3, 4, 0);
    rm_err e = {RM_OK, ""};
    rm_figure_entry v[] = {{"a", NULL, "infeasible"}, {"b", NULL, "error"}};
    rm_problem_report facts;
    cr_assert_eq(rm_problem_report_of(&facts, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_figure_compare_svg(cf_path("none.svg"), p, &facts, v, 2, "nothing", &e), RM_OK, "%s", e.msg);
    expect_readable(cf_path("none.svg"));
    char *svg = cf_text(cf_path("none.svg")), *said = all_text(svg);
    cr_assert_str_eq(said, "nothing No strategy found a schedule within the budget: a (infeasible), b (error).");
    cr_assert_eq(count_of(svg, "<g class=\"panel\">"), 0);
    free(said);
    free(svg);
    rm_problem_free(p);
}
