/* Machine-readable tables: the writer of cli/table.h (escaping in csv and
 * json, numbers and missing values, the aligned text), and `remat plan
 * --format csv|json` read back by the small strict CSV and JSON readers
 * below and compared with the text table of the same run. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "cli_util.h"
#include "strategy.h"
#include "table.h"

#define TINY REMAT_SOURCE_DIR "/models/vgg-tiny.cfg"

/* ---- a strict reader of what the writer's json is: [{"key": scalar, ...}, ...] ---- */

typedef struct jentry {
    int row;
    char key[64];
    char type; /* 's' string, 'n' number, '0' null */
    char str[512];
    double num;
} jentry;

typedef struct jdoc {
    jentry e[512];
    int n, rows;
} jdoc;

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\n' || **p == '\r' || **p == '\t') (*p)++;
}

/* A JSON string into out (UTF-8); -1 on anything JSON forbids. */
static int j_string(const char **p, char *out, size_t len)
{
    const char *s = *p;
    size_t o = 0;
    if (*s++ != '"') return -1;
    for (;;) {
        unsigned char c = (unsigned char)*s++;
        if (c == '"') break;
        if (c < 0x20) return -1; /* raw control characters (and the end of the text) are not JSON */
        if (c == '\\') {
            char esc = *s++;
            const char *simple = strchr("\"\\/bfnrt", esc);
            if (esc && simple) {
                c = (unsigned char)"\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            } else if (esc == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    if (!isxdigit((unsigned char)s[i])) return -1;
                    v = v * 16 +
                        (unsigned)(isdigit((unsigned char)s[i]) ? s[i] - '0' : tolower((unsigned char)s[i]) - 'a' + 10);
                }
                s += 4;
                if (v > 0x7f) return -1; /* the writer escapes only control characters */
                c = (unsigned char)v;
            } else {
                return -1;
            }
        }
        if (o + 1 >= len) return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    *p = s;
    return 0;
}

/* JSON's number grammar exactly: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int j_number(const char **p, double *v)
{
    const char *s = *p, *start = s;
    if (*s == '-') s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (isdigit((unsigned char)*s)) s++;
    else
        return -1;
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s)) return -1;
        while (isdigit((unsigned char)*s)) s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!isdigit((unsigned char)*s)) return -1;
        while (isdigit((unsigned char)*s)) s++;
    }
    *v = strtod(start, NULL);
    *p = s;
    return 0;
}

static int j_parse(jdoc *d, const char *text)
{
    memset(d, 0, sizeof *d);
    const char *p = text;
    skip_ws(&p);
    if (*p++ != '[') return -1;
    skip_ws(&p);
    if (*p == ']') goto end;
    for (;;) {
        skip_ws(&p);
        if (*p++ != '{') return -1;
        skip_ws(&p);
        if (*p == '}')
            p++;
        else
            for (;;) {
                if (d->n == (int)(sizeof d->e / sizeof d->e[0])) return -1;
                jentry *e = &d->e[d->n++];
                e->row = d->rows;
                skip_ws(&p);
                if (j_string(&p, e->key, sizeof e->key)) return -1;
                skip_ws(&p);
                if (*p++ != ':') return -1;
                skip_ws(&p);
                if (*p == '"') {
                    e->type = 's';
                    if (j_string(&p, e->str, sizeof e->str)) return -1;
                } else if (!strncmp(p, "null", 4)) {
                    e->type = '0';
                    p += 4;
                } else {
                    e->type = 'n';
                    if (j_number(&p, &e->num)) return -1;
                }
                skip_ws(&p);
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p++ != '}') return -1;
                break;
            }
        d->rows++;
        skip_ws(&p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p++ != ']') return -1;
        break;
    }
    if (0) {
    end:
        p++;
    }
    skip_ws(&p);
    return *p ? -1 : 0;
}

static const jentry *j_get(const jdoc *d, int row, const char *key)
{
    for (int i = 0; i < d->n; i++)
        if (d->e[i].row == row && !strcmp(d->e[i].key, key)) return &d->e[i];
    return NULL;
}

/* ---- an RFC 4180 reader: records of fields ---- */

typedef struct csv_doc {
    char f[64][16][256]; /* record, field, text */
    int nf[64];
    int n;
} csv_doc;

static int csv_parse(csv_doc *d, const char *s)
{
    memset(d, 0, sizeof *d);
    while (*s) {
        if (d->n == 64) return -1;
        int r = d->n++, k = 0;
        for (;;) {
            if (k == 16) return -1;
            char *out = d->f[r][k];
            size_t o = 0;
            if (*s == '"') {
                s++;
                for (;;) {
                    if (!*s) return -1;
                    if (*s == '"' && s[1] == '"')
                        s++;
                    else if (*s == '"')
                        break;
                    if (o + 1 >= sizeof d->f[r][k]) return -1;
                    out[o++] = *s++;
                }
                s++;
            } else {
                while (*s && *s != ',' && *s != '\n') {
                    if (*s == '"' || *s == '\r' || o + 1 >= sizeof d->f[r][k]) return -1;
                    out[o++] = *s++;
                }
            }
            out[o] = '\0';
            k++;
            if (*s == ',') {
                s++;
                continue;
            }
            if (*s == '\n')
                s++;
            else if (*s)
                return -1; /* text after a closing quote */
            break;
        }
        d->nf[r] = k;
    }
    return 0;
}

static int csv_col(const csv_doc *d, const char *key)
{
    for (int k = 0; k < d->nf[0]; k++)
        if (!strcmp(d->f[0][k], key)) return k;
    return -1;
}

/* ---- the writer ---- */

static char *render(const rm_table *t, rm_table_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(rm_table_write(t, f, fmt), 0);
    cr_assert_eq(fclose(f), 0);
    return buf;
}

static const rm_table_col cols[] = {
    {"name", "name", RM_TABLE_LEFT, 0, RM_TABLE_BOTH},
    {"value", "value", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
    {"shown", "shown", RM_TABLE_LEFT, 0, RM_TABLE_HUMAN},
    {"raw", "raw_count", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
};

/* Awkward text in every cell the formats must escape. */
static rm_table *awkward_table(void)
{
    rm_table *t = rm_table_create(cols, 4);
    cr_assert_not_null(t);
    rm_table_set_text(t, 0, "a,b");
    rm_table_set_num(t, 1, 2.5, "%.1f%%", 2.5);
    rm_table_set_text(t, 2, "x");
    rm_table_set_num(t, 3, 3, "%s", "");
    cr_assert_eq(rm_table_add_row(t), 0);
    rm_table_set_text(t, 0, "say \"hi\"");
    rm_table_set_num(t, 1, NAN, "-");
    rm_table_set_num(t, 3, INFINITY, "%s", "");
    cr_assert_eq(rm_table_add_row(t), 0);
    rm_table_set_text(t, 0, "two\nlines\r\ttab\x01\x1f back\\slash");
    rm_table_set_num(t, 1, 1234567890123.0, "big");
    rm_table_set_num(t, 3, -0.1, "%s", "");
    cr_assert_eq(rm_table_add_row(t), 0);
    return t;
}

Test(table, csv_quotes_what_it_must_and_leaves_missing_values_empty)
{
    rm_table *t = awkward_table();
    char *csv = render(t, RM_TABLE_CSV);
    cr_assert_str_eq(csv, "name,value,raw_count\n"
                          "\"a,b\",2.5,3\n"
                          "\"say \"\"hi\"\"\",,\n"
                          "\"two\nlines\r\ttab\x01\x1f back\\slash\",1234567890123,-0.1\n");
    csv_doc d;
    cr_assert_eq(csv_parse(&d, csv), 0, "%s", csv);
    cr_assert_eq(d.n, 4);
    cr_assert_str_eq(d.f[2][0], "say \"hi\"");
    cr_assert_str_eq(d.f[3][0], "two\nlines\r\ttab\x01\x1f back\\slash");
    free(csv);
    rm_table_free(t);
}

Test(table, json_escapes_strings_and_writes_numbers_and_nulls)
{
    rm_table *t = awkward_table();
    char *json = render(t, RM_TABLE_JSON);
    cr_assert_str_eq(json, "[\n"
                           "  {\"name\": \"a,b\", \"value\": 2.5, \"raw_count\": 3},\n"
                           "  {\"name\": \"say \\\"hi\\\"\", \"value\": null, \"raw_count\": null},\n"
                           "  {\"name\": \"two\\u000alines\\u000d\\u0009tab\\u0001\\u001f back\\\\slash\", "
                           "\"value\": 1234567890123, \"raw_count\": -0.1}\n"
                           "]\n");
    jdoc d;
    cr_assert_eq(j_parse(&d, json), 0, "not the JSON expected: %s", json);
    cr_assert_eq(d.rows, 3);
    cr_assert_str_eq(j_get(&d, 2, "name")->str, "two\nlines\r\ttab\x01\x1f back\\slash");
    cr_assert_eq(j_get(&d, 0, "value")->type, 'n');
    cr_assert_eq(j_get(&d, 0, "value")->num, 2.5);
    cr_assert_eq(j_get(&d, 1, "value")->type, '0');
    cr_assert_eq(j_get(&d, 1, "raw_count")->type, '0', "infinity is null");
    cr_assert_eq(j_get(&d, 2, "raw_count")->num, -0.1);
    cr_assert_null(j_get(&d, 0, "shown"), "a human column is not data");
    free(json);
    rm_table_free(t);
}

Test(table, json_reader_refuses_what_json_forbids)
{
    /* The reader the tests lean on must be able to say no. */
    jdoc d;
    cr_assert_eq(j_parse(&d, "[]"), 0);
    cr_assert_eq(j_parse(&d, "[{\"a\": 1}]"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": nan}]"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": \"x\ny\"}]"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": 01}]"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": 1},]"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": 1}"), 0);
    cr_assert_neq(j_parse(&d, "[{\"a\": \"\\x\"}]"), 0);
}

Test(table, text_aligns_columns_by_content_and_md_escapes_bars)
{
    rm_table *t = rm_table_create(cols, 4);
    cr_assert_not_null(t);
    rm_table_set_text(t, 0, "long name");
    rm_table_set_num(t, 1, 1, "1");
    rm_table_set_text(t, 2, "a|b");
    rm_table_add_row(t);
    rm_table_set_text(t, 0, "x");
    rm_table_set_num(t, 1, 100, "100.0");
    rm_table_set_text(t, 2, "—");
    rm_table_add_row(t);
    char *text = render(t, RM_TABLE_TEXT);
    cr_assert_str_eq(text, "name      value shown\n"
                           "long name     1 a|b\n"
                           "x         100.0 —\n");
    free(text);
    char *md = render(t, RM_TABLE_MD);
    cr_assert_str_eq(md, "| name | value | shown |\n"
                         "|---|---:|---|\n"
                         "| long name | 1 | a\\|b |\n"
                         "| x | 100.0 | — |\n");
    free(md);
    rm_table_free(t);
}

Test(table, streaming_writes_each_row_at_once)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    rm_table *t = rm_table_create(cols, 4);
    cr_assert_eq(rm_table_begin(t, f, RM_TABLE_JSON), 0);
    cr_assert_str_eq(buf, "[");
    rm_table_set_text(t, 0, "a");
    cr_assert_eq(rm_table_add_row(t), 0);
    cr_assert_str_eq(buf, "[\n  {\"name\": \"a\", \"value\": null, \"raw_count\": null}");
    cr_assert_eq(rm_table_end(t), 0);
    cr_assert_eq(fclose(f), 0);
    jdoc d;
    cr_assert_eq(j_parse(&d, buf), 0, "%s", buf);
    cr_assert_eq(d.rows, 1);
    free(buf);
    rm_table_free(t);
}

Test(table, format_names)
{
    rm_table_format f;
    cr_assert_eq(rm_table_format_parse(&f, "csv"), 0);
    cr_assert_eq(f, RM_TABLE_CSV);
    cr_assert_eq(rm_table_format_parse(&f, "json"), 0);
    cr_assert_eq(f, RM_TABLE_JSON);
    cr_assert_eq(rm_table_format_parse(&f, "text"), 0);
    cr_assert_eq(f, RM_TABLE_TEXT);
    cr_assert_neq(rm_table_format_parse(&f, "xml"), 0);
    cr_assert_neq(rm_table_format_parse(&f, "CSV"), 0);
}

/* ---- remat plan --format ---- */

static char *out_text(void)
{
    return cf_text(cf_path("stdout"));
}

TestSuite(cli_format, .init = cf_setup, .fini = cf_teardown);

/* The deterministic --strategy all run on vgg-tiny, in a format. */
static char *plan_all(const char *format)
{
    /* This run's stdout alone: the fixture's file holds everything so far. */
    fflush(stdout);
    long from = ftell(stdout);
    cr_assert_geq(from, 0);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "98%", "--strategy", "all",
                          "--time-limit", "0", "--node-limit", "2000", "--quiet", "--format", format, NULL),
                 0, "%s", cf_err);
    fflush(stdout);
    char *all = out_text();
    cr_assert_leq((size_t)from, strlen(all));
    char *mine = strdup(all + from);
    cr_assert_not_null(mine);
    free(all);
    return mine;
}

/* The text table's line for a strategy ("name  status ..."), or NULL. */
static const char *text_row(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return l;
    return NULL;
}

Test(cli_format, plan_all_csv_matches_the_text_table)
{
    char *text = plan_all("text");
    char *csv = plan_all("csv");
    cr_assert(strstr(text, "cheapest: "));
    cr_assert_null(strstr(csv, "cheapest"), "stdout carries only the table: %s", csv);
    csv_doc d;
    cr_assert_eq(csv_parse(&d, csv), 0, "not RFC 4180: %s", csv);
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    cr_assert_eq(d.n, 1 + count, "a header and one row per strategy: %s", csv);
    int ks = csv_col(&d, "strategy"), ko = csv_col(&d, "overhead_pct"), kp = csv_col(&d, "peak_bytes"),
        kc = csv_col(&d, "cost"), kt = csv_col(&d, "seconds");
    cr_assert(ks >= 0 && ko >= 0 && kp >= 0 && kc >= 0 && kt >= 0, "%s", csv);
    int found = 0;
    for (int k = 0; k < count; k++) {
        const char *name = list[k].name;
        cr_assert_eq(d.nf[k + 1], d.nf[0]);
        cr_assert_str_eq(d.f[k + 1][ks], name, "rows in the strategies' order");
        const char *line = text_row(text, name);
        cr_assert_not_null(line, "%s is not in the text table", name);
        const char *eol = strchr(line, '\n');
        char want[64], b[32];
        /* The same status; no schedule: empty fields here, "-" there. */
        snprintf(want, sizeof want, " %s ", d.f[k + 1][csv_col(&d, "status")]);
        cr_assert(strstr(line, want) && strstr(line, want) < eol, "%s: status '%s'", name, want);
        if (!strcmp(d.f[k + 1][csv_col(&d, "status")], "infeasible")) {
            cr_assert_str_eq(d.f[k + 1][ko], "");
            cr_assert_str_eq(d.f[k + 1][kp], "");
            cr_assert(strstr(line, " - ") && strstr(line, " - ") < eol);
            continue;
        }
        found++;
        /* The text's overhead and peak, from the csv's numbers. */
        char *end;
        double ov = strtod(d.f[k + 1][ko], &end);
        cr_assert(*d.f[k + 1][ko] && !*end, "overhead_pct of %s is a number: '%s'", name, d.f[k + 1][ko]);
        double peak = strtod(d.f[k + 1][kp], &end);
        cr_assert(!*end && peak == floor(peak) && peak > 0, "peak_bytes of %s is a byte count", name);
        strtod(d.f[k + 1][kc], &end);
        cr_assert(*d.f[k + 1][kc] && !*end);
        snprintf(want, sizeof want, " %+.2f%% ", ov);
        cr_assert(strstr(line, want) && strstr(line, want) < eol, "%s: '%s' not in '%.*s'", name, want,
                  (int)(eol - line), line);
        snprintf(want, sizeof want, " %s ", rm_cli_bytes(b, sizeof b, peak));
        cr_assert(strstr(line, want) && strstr(line, want) < eol, "%s: '%s' not in '%.*s'", name, want,
                  (int)(eol - line), line);
    }
    cr_assert_geq(found, count - 2, "at 98%% only checkpoint_all and griewank may find nothing");
    free(text);
    free(csv);
}

Test(cli_format, plan_all_json_is_an_array_of_typed_objects)
{
    char *json = plan_all("json");
    jdoc d;
    cr_assert_eq(j_parse(&d, json), 0, "not JSON: %s", json);
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    cr_assert_eq(d.rows, count);
    for (int k = 0; k < count; k++) {
        cr_assert_str_eq(j_get(&d, k, "strategy")->str, list[k].name);
        cr_assert_eq(j_get(&d, k, "status")->type, 's');
        int ok = strcmp(j_get(&d, k, "status")->str, "infeasible") != 0;
        cr_assert_eq(j_get(&d, k, "overhead_pct")->type, ok ? 'n' : '0', "%s", list[k].name);
        cr_assert_eq(j_get(&d, k, "peak_bytes")->type, ok ? 'n' : '0', "%s", list[k].name);
        cr_assert_eq(j_get(&d, k, "seconds")->type, 'n');
        cr_assert_null(j_get(&d, k, "recomputed"), "the human column is not in json");
        cr_assert_eq(j_get(&d, k, "recomputations")->type, ok ? 'n' : '0');
        /* A heuristic has no bound: null, not "" or 0. */
        if (!list[k].solve_opt) cr_assert_eq(j_get(&d, k, "gap_pct")->type, '0', "%s", list[k].name);
    }
    free(json);
}

Test(cli_format, plan_one_strategy_is_one_row)
{
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "98%", "--strategy", "chen_sqrtn",
                          "--quiet", "--format", "csv", "--out", cf_path("s.txt"), NULL),
                 0, "%s", cf_err);
    char *csv = out_text();
    csv_doc d;
    cr_assert_eq(csv_parse(&d, csv), 0, "%s", csv);
    cr_assert_eq(d.n, 2, "%s", csv);
    cr_assert_str_eq(d.f[1][csv_col(&d, "strategy")], "chen_sqrtn");
    cr_assert(strstr(cf_err, "schedule     "), "the file written is said on stderr: %s", cf_err);
    free(csv);
}

Test(cli_format, a_bad_format_is_a_usage_error)
{
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "98%", "--strategy", "all", "--format",
                          "xml", NULL),
                 1);
    cr_assert(strstr(cf_err, "--format must be text, csv or json, got 'xml'"), "%s", cf_err);
    cr_assert(strstr(cf_err, "usage: remat plan"), "%s", cf_err);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "98%", "--format", "md", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--check", "x", "--model", TINY, "--batch", "2", "--format", "csv", NULL), 1);
}

/* maxbatch's table as data: the same batches as its text table, a header
 * and one row per strategy in csv, typed values in json, nothing but the
 * table on stdout. */
static char *maxbatch_out_ranks(const char *format, const char *ranks)
{
    fflush(stdout);
    long from = ftell(stdout);
    cr_assert_geq(from, 0);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "chen_greedy,ogc,milp",
                          "--quiet", "--format", format, "--ranks", ranks, NULL),
                 0, "%s", cf_err);
    fflush(stdout);
    char *all = out_text();
    char *mine = strdup(all + from);
    free(all);
    return mine;
}

static char *maxbatch_out(const char *format)
{
    return maxbatch_out_ranks(format, "1");
}

Test(cli_format, maxbatch_csv_and_json_match_the_text_table)
{
    char *text = maxbatch_out("text"), *csv = maxbatch_out("csv"), *json = maxbatch_out("json");
    const char *names[] = {"checkpoint_all", "chen_greedy", "ogc", "milp"};
    csv_doc d;
    cr_assert_eq(csv_parse(&d, csv), 0, "not RFC 4180: %s", csv);
    cr_assert_eq(d.n, 5, "a header and four rows: %s", csv);
    cr_assert_null(strstr(csv, "overhead cap"), "stdout carries only the table: %s", csv);
    jdoc j;
    cr_assert_eq(j_parse(&j, json), 0, "not JSON: %s", json);
    cr_assert_eq(j.rows, 4);
    int kb = csv_col(&d, "max_batch"), ks = csv_col(&d, "strategy");
    cr_assert(kb >= 0 && ks >= 0);
    for (int k = 0; k < 4; k++) {
        cr_assert_str_eq(d.f[k + 1][ks], names[k]);
        const char *line = text_row(text, names[k]);
        cr_assert_not_null(line, "%s", text);
        int batch = -1;
        cr_assert_eq(sscanf(line + strlen(names[k]), "%d", &batch), 1);
        cr_assert_eq(atoi(d.f[k + 1][kb]), batch, "%s: csv %s, text %d", names[k], d.f[k + 1][kb], batch);
        const jentry *b = j_get(&j, k, "max_batch"), *u = j_get(&j, k, "unproved"), *p = j_get(&j, k, "peak_bytes");
        cr_assert(b && b->type == 'n' && b->num == batch, "%s", names[k]);
        cr_assert(u && u->type == 'n' && (u->num == 0 || u->num == 1));
        cr_assert(p && p->type == 'n' && p->num > 0 && p->num == floor(p->num));
    }
    free(text), free(csv), free(json);
    /* --ranks N: the same per-rank batches, and the global one N times each. */
    char *r3 = maxbatch_out_ranks("csv", "3");
    static csv_doc d3;
    cr_assert_eq(csv_parse(&d3, r3), 0, "%s", r3);
    int kg = csv_col(&d3, "global_batch"), k3 = csv_col(&d3, "max_batch");
    cr_assert(kg >= 0 && k3 >= 0 && d3.n == 5, "%s", r3);
    for (int k = 1; k < d3.n; k++) {
        cr_assert_str_eq(d3.f[k][k3], d.f[k][kb], "the per-rank batch is one process's");
        cr_assert_eq(atoi(d3.f[k][kg]), 3 * atoi(d3.f[k][k3]), "%s", r3);
    }
    free(r3);
    char *t3 = maxbatch_out_ranks("text", "3");
    cr_assert(strstr(t3, "global: the batch of a step of 3 ranks"), "%s", t3);
    free(t3);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--ranks", "0", NULL), 1);
    cr_assert(cf_said(1, "--ranks must be an integer from 1 to 65536, got '0'"));
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--format", "md", NULL), 1);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--format", "xml", NULL), 1);
}
