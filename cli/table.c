/* The table writer (table.h): cells kept as text plus an optional number,
 * rendered in one of four formats. */
#include "table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell {
    char *text; /* NULL: unset */
    double v;
    int is_num;
} cell;

struct rm_table {
    const rm_table_col *cols;
    int ncols;
    cell *cur;  /* the row being built */
    cell *rows; /* nrows * ncols, when not streaming */
    int nrows, cap;
    int failed; /* out of memory somewhere */
    /* streaming */
    FILE *out;
    rm_table_format fmt;
    int *widths;
    int streamed;
};

int rm_table_format_parse(rm_table_format *out, const char *s)
{
    static const char *names[] = {"text", "md", "csv", "json"};
    static const rm_table_format v[] = {RM_TABLE_TEXT, RM_TABLE_MD, RM_TABLE_CSV, RM_TABLE_JSON};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (s && !strcmp(s, names[i])) {
            *out = v[i];
            return 0;
        }
    return -1;
}

rm_table *rm_table_create(const rm_table_col *cols, int ncols)
{
    rm_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cols = cols;
    t->ncols = ncols;
    t->cur = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *t->cur);
    t->widths = calloc((size_t)(ncols > 0 ? ncols : 1), sizeof *t->widths);
    if (!t->cur || !t->widths) {
        rm_table_free(t);
        return NULL;
    }
    return t;
}

static void cells_clear(cell *c, int n)
{
    for (int i = 0; i < n; i++) free(c[i].text);
    memset(c, 0, (size_t)n * sizeof *c);
}

void rm_table_free(rm_table *t)
{
    if (!t) return;
    if (t->cur) cells_clear(t->cur, t->ncols);
    for (int r = 0; r < t->nrows; r++) cells_clear(&t->rows[(size_t)r * (size_t)t->ncols], t->ncols);
    free(t->cur);
    free(t->rows);
    free(t->widths);
    free(t);
}

static void set_cell(rm_table *t, int col, int is_num, double v, const char *fmt, va_list ap)
{
    if (col < 0 || col >= t->ncols) return;
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    else
        t->failed = 1;
    cell *c = &t->cur[col];
    free(c->text);
    c->text = s;
    c->is_num = is_num;
    c->v = v;
}

void rm_table_set_text(rm_table *t, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_cell(t, col, 0, 0, fmt, ap);
    va_end(ap);
}

void rm_table_set_num(rm_table *t, int col, double v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_cell(t, col, 1, v, fmt, ap);
    va_end(ap);
}

/* ---- escaping ---- */

int rm_table_csv_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) return fputs(s, f) < 0 ? -1 : 0;
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    return fputc('"', f) == EOF ? -1 : 0;
}

int rm_table_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == '<') /* '<' too: JSON inside an HTML <script> never reads "</script>" */
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    return fputc('"', f) == EOF ? -1 : 0;
}

/* ---- rendering ---- */

static int visible(const rm_table_col *c, rm_table_format fmt)
{
    int human = fmt == RM_TABLE_TEXT || fmt == RM_TABLE_MD;
    return c->only == RM_TABLE_BOTH || c->only == (human ? RM_TABLE_HUMAN : RM_TABLE_DATA);
}

/* Columns on a terminal: UTF-8 code points ("—" is one). */
static int text_width(const char *s)
{
    int n = 0;
    for (; s && *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The shortest text that reads back as v; integers without an exponent. */
static void write_number(FILE *f, double v)
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        fprintf(f, "%.0f", v);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, f);
}

static int has_number(const cell *c)
{
    return c->is_num && isfinite(c->v);
}

int rm_table_json_number(FILE *f, double v)
{
    if (isfinite(v))
        write_number(f, v);
    else
        fputs("null", f);
    return ferror(f) ? -1 : 0;
}

static void compute_widths(const rm_table *t, int *w, int with_rows)
{
    for (int i = 0; i < t->ncols; i++) {
        w[i] = text_width(t->cols[i].header);
        if (w[i] < t->cols[i].min_width) w[i] = t->cols[i].min_width;
        for (int r = 0; with_rows && r < t->nrows; r++) {
            int n = text_width(t->rows[(size_t)r * (size_t)t->ncols + (size_t)i].text);
            if (n > w[i]) w[i] = n;
        }
    }
}

static int last_visible(const rm_table *t, rm_table_format fmt)
{
    int last = -1;
    for (int i = 0; i < t->ncols; i++)
        if (visible(&t->cols[i], fmt)) last = i;
    return last;
}

static void text_line(const rm_table *t, FILE *f, const int *w, const cell *row)
{
    int first = 1, last = last_visible(t, RM_TABLE_TEXT);
    for (int i = 0; i < t->ncols; i++) {
        if (!visible(&t->cols[i], RM_TABLE_TEXT)) continue;
        const char *s = row ? (row[i].text ? row[i].text : "") : t->cols[i].header;
        int pad = w[i] - text_width(s);
        if (!first) fputc(' ', f);
        first = 0;
        if (t->cols[i].align == RM_TABLE_RIGHT)
            fprintf(f, "%*s%s", pad > 0 ? pad : 0, "", s);
        else
            fprintf(f, "%s%*s", s, i == last || pad < 0 ? 0 : pad, "");
    }
    fputc('\n', f);
}

static void md_line(const rm_table *t, FILE *f, const cell *row)
{
    fputc('|', f);
    for (int i = 0; i < t->ncols; i++) {
        if (!visible(&t->cols[i], RM_TABLE_MD)) continue;
        const char *s = row ? (row[i].text ? row[i].text : "") : t->cols[i].header;
        fputc(' ', f);
        for (; *s; s++) {
            if (*s == '|') fputc('\\', f);
            fputc(*s == '\n' ? ' ' : *s, f);
        }
        fputs(" |", f);
    }
    fputc('\n', f);
}

static void write_header(const rm_table *t, FILE *f, rm_table_format fmt, const int *w)
{
    int first = 1;
    switch (fmt) {
    case RM_TABLE_TEXT:
        text_line(t, f, w, NULL);
        break;
    case RM_TABLE_MD:
        md_line(t, f, NULL);
        fputc('|', f);
        for (int i = 0; i < t->ncols; i++)
            if (visible(&t->cols[i], fmt)) fputs(t->cols[i].align == RM_TABLE_RIGHT ? "---:|" : "---|", f);
        fputc('\n', f);
        break;
    case RM_TABLE_CSV:
        for (int i = 0; i < t->ncols; i++) {
            if (!visible(&t->cols[i], fmt)) continue;
            if (!first) fputc(',', f);
            first = 0;
            rm_table_csv_field(f, t->cols[i].key);
        }
        fputc('\n', f);
        break;
    case RM_TABLE_JSON:
        fputc('[', f);
        break;
    }
}

static void write_row(const rm_table *t, FILE *f, rm_table_format fmt, const int *w, const cell *row, int index)
{
    int first = 1;
    switch (fmt) {
    case RM_TABLE_TEXT:
        text_line(t, f, w, row);
        break;
    case RM_TABLE_MD:
        md_line(t, f, row);
        break;
    case RM_TABLE_CSV:
        for (int i = 0; i < t->ncols; i++) {
            if (!visible(&t->cols[i], fmt)) continue;
            if (!first) fputc(',', f);
            first = 0;
            if (has_number(&row[i]))
                write_number(f, row[i].v);
            else if (row[i].text && !row[i].is_num)
                rm_table_csv_field(f, row[i].text);
        }
        fputc('\n', f);
        break;
    case RM_TABLE_JSON:
        fputs(index ? ",\n  {" : "\n  {", f);
        for (int i = 0; i < t->ncols; i++) {
            if (!visible(&t->cols[i], fmt)) continue;
            if (!first) fputs(", ", f);
            first = 0;
            rm_table_json_string(f, t->cols[i].key);
            fputs(": ", f);
            if (has_number(&row[i]))
                write_number(f, row[i].v);
            else if (row[i].text && !row[i].is_num)
                rm_table_json_string(f, row[i].text);
            else
                fputs("null", f);
        }
        fputc('}', f);
        break;
    }
}

static void write_footer(FILE *f, rm_table_format fmt, int nrows)
{
    if (fmt == RM_TABLE_JSON) fputs(nrows ? "\n]\n" : "]\n", f);
}

int rm_table_add_row(rm_table *t)
{
    if (t->failed) return -1;
    if (t->out) {
        write_row(t, t->out, t->fmt, t->widths, t->cur, t->streamed++);
        cells_clear(t->cur, t->ncols);
        return fflush(t->out) || ferror(t->out) ? -1 : 0;
    }
    if (t->nrows == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        cell *rows = realloc(t->rows, (size_t)cap * (size_t)t->ncols * sizeof *rows);
        if (!rows) {
            t->failed = 1;
            return -1;
        }
        t->rows = rows;
        t->cap = cap;
    }
    /* The row's strings move into the table. */
    memcpy(&t->rows[(size_t)t->nrows++ * (size_t)t->ncols], t->cur, (size_t)t->ncols * sizeof *t->cur);
    memset(t->cur, 0, (size_t)t->ncols * sizeof *t->cur);
    return 0;
}

int rm_table_write(const rm_table *t, FILE *f, rm_table_format fmt)
{
    if (t->failed) return -1;
    int *w = calloc((size_t)(t->ncols > 0 ? t->ncols : 1), sizeof *w);
    if (!w) return -1;
    compute_widths(t, w, 1);
    write_header(t, f, fmt, w);
    for (int r = 0; r < t->nrows; r++) write_row(t, f, fmt, w, &t->rows[(size_t)r * (size_t)t->ncols], r);
    write_footer(f, fmt, t->nrows);
    free(w);
    return ferror(f) ? -1 : 0;
}

int rm_table_begin(rm_table *t, FILE *f, rm_table_format fmt)
{
    if (t->failed) return -1;
    t->out = f;
    t->fmt = fmt;
    t->streamed = 0;
    compute_widths(t, t->widths, 0);
    write_header(t, f, fmt, t->widths);
    return fflush(f) || ferror(f) ? -1 : 0;
}

int rm_table_end(rm_table *t)
{
    FILE *f = t->out;
    if (!f) return -1;
    write_footer(f, t->fmt, t->streamed);
    t->out = NULL;
    return fflush(f) || ferror(f) || t->failed ? -1 : 0;
}
