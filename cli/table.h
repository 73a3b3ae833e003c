/* The one table writer of remat's commands and benchmarks: named columns,
 * rows of cells, rendered as an aligned text table for people, a markdown
 * table, RFC 4180 CSV or a JSON array of objects. A cell has the text people
 * read ("2.73 GiB", "+4.39%") and, when it is a number, the number programs
 * read (2931234816, 4.39): text and md show the text, csv and json the
 * number. Escaping for every format lives here and nowhere else.
 *
 *   static const rm_table_col cols[] = {
 *       {"strategy", "strategy", RM_TABLE_LEFT, 18, 0},
 *       {"peak", "peak_bytes", RM_TABLE_RIGHT, 12, 0},
 *   };
 *   rm_table *t = rm_table_create(cols, 2);
 *   rm_table_set_text(t, 0, "%s", name);
 *   rm_table_set_num(t, 1, (double)bytes, "%s", rm_cli_bytes(b, sizeof b, (double)bytes));
 *   rm_table_add_row(t);
 *   rm_table_write(t, stdout, RM_TABLE_TEXT);   (or rm_table_begin / add rows / rm_table_end to stream)
 *   rm_table_free(t);
 */
#ifndef REMAT_CLI_TABLE_H
#define REMAT_CLI_TABLE_H

#include <stdio.h>

typedef enum rm_table_format {
    RM_TABLE_TEXT, /* aligned columns, one space apart, a header line of the columns' headers */
    RM_TABLE_MD,   /* "| a | b |", "|---|---:|", one line per row ('|' in a cell written "\|") */
    RM_TABLE_CSV,  /* RFC 4180: a header line of keys; a field with a comma, quote, CR or LF is quoted,
                      quotes doubled; lines end in LF (not CRLF: what Unix tools expect; readers take both) */
    RM_TABLE_JSON  /* [{"key": value, ...}, ...], one object per line; numbers as JSON numbers, a missing
                      or non-finite number as null, strings escaped (control characters and < as \u00XX) */
} rm_table_format;

/* "text", "md", "csv" or "json" into *out: 0, or -1 for anything else. */
int rm_table_format_parse(rm_table_format *out, const char *s);

typedef enum rm_table_align { RM_TABLE_LEFT, RM_TABLE_RIGHT } rm_table_align;

/* Which formats show a column: both kinds, or only one. A human column
 * can say "3 (5x)" where the data columns say 3 and 5. */
#define RM_TABLE_BOTH 0
#define RM_TABLE_HUMAN 1 /* text and md only */
#define RM_TABLE_DATA 2  /* csv and json only */

typedef struct rm_table_col {
    const char *header; /* for people: text and md */
    const char *key;    /* for programs: the csv header, the json key */
    rm_table_align align;
    int min_width; /* text: the least width (a streamed table's width); 0 for none */
    int only;      /* RM_TABLE_BOTH, RM_TABLE_HUMAN or RM_TABLE_DATA */
} rm_table_col;

typedef struct rm_table rm_table;

/* A table of ncols columns; cols must outlive it. NULL when out of memory. */
rm_table *rm_table_create(const rm_table_col *cols, int ncols);
void rm_table_free(rm_table *t);

/* Cells of the row being built. A cell left unset is empty text and a
 * missing value (json null). set_text: a string in every format.
 * set_num: v for csv/json (NaN: missing, so json null and an empty csv
 * field; so is an infinity), the formatted text for text/md. A cell set
 * twice keeps the last. Out of memory is remembered, and reported by
 * rm_table_add_row or rm_table_write. */
void rm_table_set_text(rm_table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rm_table_set_num(rm_table *t, int col, double v, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Ends the row being built: keeps it, or writes it at once when streaming.
 * 0, or -1 (out of memory, or a write error). */
int rm_table_add_row(rm_table *t);

/* The whole table, rows kept so far, to f: text column widths from the
 * content (at least each min_width). 0, or -1 on a write error or an
 * earlier out of memory. */
int rm_table_write(const rm_table *t, FILE *f, rm_table_format fmt);

/* Streaming, for rows that arrive slowly (a solve per row): begin writes
 * the header, each rm_table_add_row writes its row and flushes, end closes
 * the table (json's ']'). Text widths are then the headers' and min_width
 * only: a longer cell pushes its row out of line. 0, or -1 as above. */
int rm_table_begin(rm_table *t, FILE *f, rm_table_format fmt);
int rm_table_end(rm_table *t);

/* The escapers, for one field or string anywhere else that needs one:
 * s as a csv field (quoted when it must be) and as a JSON string (quotes
 * included; '<' written \u003c, so the JSON can sit inside an HTML
 * <script>); v as a JSON number, the shortest text that reads back as v
 * (null when not finite). 0, or -1 on a write error. */
int rm_table_csv_field(FILE *f, const char *s);
int rm_table_json_string(FILE *f, const char *s);
int rm_table_json_number(FILE *f, double v);

#endif
