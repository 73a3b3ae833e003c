/* Names remat did not choose, and the sizes and messages around the problem
 * readers (issue 23): the readers refuse a name that is not printable UTF-8
 * (control bytes, C1, DEL, bidi overrides and isolates, invalid, overlong
 * or surrogate UTF-8) naming file, line and byte offset; every printer shows
 * such a name escaped (a problem built here, an ONNX file edited here), the
 * SVG stays well-formed XML; a problem file past the size cap is refused
 * before it is read; and the messages of the CLI say what they mean. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "cli_util.h"
#include "clock.h"
#include "explain.h"
#include "figures.h"
#include "problem.h"
#include "problem_files.h"
#include "strategy.h"
#include "text_file.h"
#include "trainer.h"
#include "utf8.h"

TestSuite(names, .init = cf_setup, .fini = cf_teardown);
TestSuite(problem_size, .init = cf_setup, .fini = cf_teardown);
TestSuite(cli_messages, .init = cf_setup, .fini = cf_teardown);

/* Names no reader may accept, each with what the message must say. */
static const struct {
    const char *bytes, *why;
} hostile[] = {
    {"a\x1b[31mb", "byte 0x1b, a control character"},
    {"a\x7f", "byte 0x7f, a control character"},
    {"a\xc2\x85", "U+0085, a C1 control character"},
    {"a\xc2\x9b"
     "31m",
     "U+009B, a C1 control character"},
    {"a\xe2\x80\xae"
     "b",
     "U+202E, a bidi override"},
    {"a\xe2\x81\xa6"
     "b",
     "U+2066, a bidi isolate"},
    {"a\xff", "byte 0xff, invalid UTF-8 (a byte that UTF-8 never uses)"},
    {"a\xc0\xaf", "byte 0xc0, invalid UTF-8 (an overlong form)"},
    {"a\xe0\x80\xaf", "byte 0xe0, invalid UTF-8 (an overlong form)"},
    {"a\xed\xa0\x80", "byte 0xed, invalid UTF-8 (a surrogate"},
    {"a\xf4\x90\x80\x80", "byte 0xf4, invalid UTF-8 (a code point above U+10FFFF)"},
    {"caf\xc3", "byte 0xc3, invalid UTF-8 (a truncated sequence)"},
    {"a\x80", "byte 0x80, invalid UTF-8 (a continuation byte"},
    {"a\xef\xbf\xbe", "U+FFFE, a noncharacter"},
};
#define NHOSTILE (int)(sizeof hostile / sizeof hostile[0])

/* 1 when the n bytes of s are text any terminal and XML parser take: valid
 * UTF-8, no control character but newline and tab, no bidi override, none
 * of the characters XML 1.0 forbids. Decoded here on its own, not with
 * base/utf8.c, which is what is tested. */
static int clean_text(const unsigned char *s, size_t n, size_t *bad)
{
    for (size_t i = 0; i < n;) {
        *bad = i;
        unsigned c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return 0;
            i++;
            continue;
        }
        int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c < 0xC2 || c > 0xF4 || i + (size_t)len > n) return 0;
        unsigned cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        unsigned min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp <= 0x9F || cp == 0xFFFE || cp == 0xFFFF ||
            (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
            return 0;
        i += (size_t)len;
    }
    return 1;
}

static void expect_clean_file(const char *path, const char *what)
{
    size_t n, bad = 0;
    unsigned char *b = cf_read(path, &n);
    cr_assert_not_null(b, "%s: %s not written", what, path);
    cr_assert(clean_text(b, n, &bad), "%s: byte 0x%02x at offset %zu of %s is not clean text", what,
              bad < n ? b[bad] : 0, bad, path);
    free(b);
}

/* `remat ARGS` exits 1 and says said on stderr. */
static void expect_refused(const char *const *args, const char *said)
{
    cr_assert_eq(cf_remat_args(args), 1, "%s", cf_err);
    cr_assert(cf_said(1, said), "'%s' should say '%s'", cf_err, said);
}

/* ---- the check and the shown form --------------------------------------- */

Test(names, the_check_finds_the_first_bad_character_and_says_what_it_is)
{
    size_t at;
    char why[160];
    const char *ok[] = {"conv1", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80", "a\\b", ""};
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++)
        cr_assert_eq(rm_name_check(ok[k], strlen(ok[k]), &at, why, sizeof why), 0, "'%s': %s", ok[k], why);
    for (int k = 0; k < NHOSTILE; k++) {
        const char *s = hostile[k].bytes;
        cr_assert_eq(rm_name_check(s, strlen(s), &at, why, sizeof why), -1, "case %d accepted", k);
        cr_assert_eq(at, s[0] == 'c' ? 3u : 1u, "case %d: offset %zu", k, at);
        cr_assert(strstr(why, hostile[k].why), "case %d: '%s' should say '%s'", k, why, hostile[k].why);
    }
}

Test(names, the_shown_form_escapes_what_a_terminal_would_act_on)
{
    char b[RM_NAME_SHOW_LEN];
    cr_assert_str_eq(rm_name_show(b, sizeof b, "a\x1b[31mb"), "a\\x1b[31mb");
    cr_assert_str_eq(rm_name_show(b, sizeof b,
                                  "a\xe2\x80\xae"
                                  "b"),
                     "a\\u202eb");
    cr_assert_str_eq(rm_name_show(b, sizeof b, "a\xc2\x9b"), "a\\u009b");
    cr_assert_str_eq(rm_name_show(b, sizeof b, "a\xff\xc0\xaf"), "a\\xff\\xc0\\xaf");
    cr_assert_str_eq(rm_name_show(b, sizeof b, "a\\x1b"), "a\\\\x1b", "a backslash is told from an escape");
    cr_assert_str_eq(rm_name_show(b, sizeof b, "caf\xc3\xa9"), "caf\xc3\xa9");
    cr_assert_str_eq(rm_name_shown_of("x\x07").s, "x\\x07");
    /* Cut only between whole characters and escapes, in columns. */
    cr_assert_eq(rm_name_show_cols(b, sizeof b, "caf\xc3\xa9!", 4), 4);
    cr_assert_str_eq(b, "caf\xc3\xa9");
    cr_assert_eq(rm_name_show_cols(b, sizeof b, "ab\x1b", 5), 2);
    cr_assert_str_eq(b, "ab");
    cr_assert_eq(rm_name_show_cols(b, 6, "ab\x1b", -1), 2, "an escape that does not fit is left out whole");
    /* The longest name, every byte an escape, fits the documented size. */
    char worst[RM_NAME_LEN];
    memset(worst, 0x1b, sizeof worst - 1);
    worst[sizeof worst - 1] = '\0';
    cr_assert_eq(rm_name_show_cols(b, sizeof b, worst, -1), 4 * (RM_NAME_LEN - 1));
}

/* ---- the readers ---------------------------------------------------------- */

Test(names, the_text_reader_refuses_them_with_line_and_byte_offset)
{
    for (int k = 0; k < NHOSTILE; k++) {
        char text[256], path[64], want[128];
        int head = snprintf(text, sizeof text, "problem 2 0 0\n0 a forward 1 8 -\n1 ");
        snprintf(text + head, sizeof text - (size_t)head, "%s loss 1 8 0\n", hostile[k].bytes);
        tp_temp_file(path, sizeof path, text);
        rm_problem *p = (rm_problem *)1;
        rm_err e = {0};
        cr_assert_eq(rm_problem_read(&p, path, &e), RM_ERR_PARSE, "case %d: %s", k, e.msg);
        cr_assert_null(p);
        size_t at = (size_t)head + (hostile[k].bytes[0] == 'c' ? 3 : 1);
        snprintf(want, sizeof want, "%s:3:%zu (byte offset %zu): the node name has ", path,
                 at - 32 + 1 /* line 3 starts at byte 32 */, at);
        cr_assert(strstr(e.msg, want), "case %d: '%s' should start '%s'", k, e.msg, want);
        cr_assert(strstr(e.msg, hostile[k].why), "case %d: '%s'", k, e.msg);
        unlink(path);
    }
    /* Any other field a message could quote is held to the same rule. */
    tp_expect_error("problem 2 0 0\n0 a forw\x1b"
                    "ard 1 8 -\n",
                    2, "a field has byte 0x1b");
    /* Printable UTF-8 is a name like any other, and is written back. */
    char path[64];
    tp_temp_file(path, sizeof path, "problem 2 0 0\n0 caf\xc3\xa9 forward 1 8 -\n1 \xe6\x97\xa5 loss 1 8 0\n");
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(p->nodes[0].name, "caf\xc3\xa9");
    cr_assert_eq(rm_problem_write(p, path, &e), RM_OK, "byte 0xc3 was called a control character: %s", e.msg);
    rm_problem *q = NULL;
    cr_assert_eq(rm_problem_read(&q, path, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(q->nodes[1].name, "\xe6\x97\xa5");
    /* What the reader refuses the writer does not write (a name from ONNX). */
    snprintf(p->nodes[1].name, sizeof p->nodes[1].name, "x\x1b[2J");
    cr_assert_eq(rm_problem_write(p, path, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "node 1 name 'x\\x1b[2J' has byte 0x1b, a control character at byte 1"), "%s", e.msg);
    rm_problem_free(p);
    rm_problem_free(q);
    unlink(path);
}

#define JNODE(name) "{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, \"backward\": false, \"name\": \"" name "\"}"

Test(names, the_json_reader_refuses_them_raw_or_escaped)
{
    for (int k = 0; k < NHOSTILE; k++) {
        char text[256], col[32];
        snprintf(text, sizeof text,
                 "{\"links\": [],\n \"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                 "\"backward\": false, \"name\": \"%s\"}]}",
                 hostile[k].bytes);
        const char *what = hostile[k].why, *line2 = strchr(text, '\n') + 1;
        size_t quote = (size_t)(strstr(text, "\"name\": \"") + 8 - line2),
               bad = quote + 1 + (hostile[k].bytes[0] == 'c' ? 3 : 1);
        /* A raw C0 control is no JSON; invalid UTF-8 is refused where it
         * stands, in any string; the rest in a name, at its opening quote. */
        int c0 = (unsigned char)hostile[k].bytes[1] < 0x20;
        tp_expect_error(text, 2, c0 ? "control character 0x1b inside a string" : what);
        if (strstr(what, "invalid UTF-8") || c0)
            snprintf(col, sizeof col, ":2:%zu: %s", bad + 1, c0 ? "control" : "byte 0x");
        else
            snprintf(col, sizeof col, ":2:%zu: the name has ", quote + 1);
        tp_expect_error(text, 2, col);
    }
    tp_expect_error("{\"nodes\": [" JNODE("a\\u001b[31m") "], \"links\": []}", 1, "byte 0x1b, a control character");
    tp_expect_error("{\"nodes\": [" JNODE("a\\u202Eb") "], \"links\": []}", 1, "U+202E, a bidi override");
    tp_expect_error("{\"nodes\": [" JNODE("a\\u0085") "], \"links\": []}", 1, "U+0085, a C1 control character");
    tp_expect_error("{\"nodes\": [" JNODE("a\\u2069") "], \"links\": []}", 1, "U+2069, a bidi isolate");
    /* The docs call the reader strict: JSON text is UTF-8, also where the
     * format reads nothing. */
    tp_expect_error("{\"graph\": {\"name\": \"\xc0\xaf\"}}", 1, "byte 0xc0, invalid UTF-8 (an overlong form)");
    tp_expect_error("{\"graph\": {\"name\": \"\xed\xa0\x80\"}}", 1, "(byte offset 20)");
    char path[64];
    tp_temp_file(path, sizeof path, "{\"nodes\": [" JNODE("caf\\u00e9 \xe6\x97\xa5") "], \"links\": []}");
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(p->nodes[0].name, "caf\xc3\xa9 \xe6\x97\xa5");
    rm_problem_free(p);
    unlink(path);
}

/* ---- the printers --------------------------------------------------------- */

/* The example of docs/problem-format.md, every node renamed to a name no
 * reader lets in (as an ONNX graph or a caller could still hold one). */
static rm_problem *hostile_problem(void)
{
    char path[64];
    tp_temp_file(path, sizeof path, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    unlink(path);
    for (int i = 0; i < p->n; i++)
        snprintf(p->nodes[i].name, sizeof p->nodes[i].name, "%d<&\"%s", i, hostile[i % NHOSTILE].bytes);
    return p;
}

Test(names, the_svg_figures_stay_well_formed_xml)
{
    rm_problem *p = hostile_problem();
    p->budget = 0;
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    const char *rs = cf_path("h-rs.svg"), *mem = cf_path("h-memory.svg");
    cr_assert_eq(rm_figure_rs_svg(rs, p, s, "title \x1b[1m\xff", &e), RM_OK, "%s", e.msg);
    rm_schedule_report rep;
    cr_assert_eq(rm_schedule_report_of(&rep, p, s, NULL, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_figure_memory_svg(mem, p, &rep, "title", &e), RM_OK, "%s", e.msg);
    rm_schedule_report_free(&rep);
    expect_clean_file(rs, "R/S figure");
    expect_clean_file(mem, "memory figure");
    char *t = cf_text(rs);
    cr_assert(strstr(t, "0&lt;&amp;&quot;a\\x1b[31mb"), "the row label shows the name escaped");
    free(t);
    t = cf_text(mem);
    cr_assert(strstr(t, "while computing '"), "the peak caption is there");
    free(t);
    /* Where python3 is installed, an XML parser reads both. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; [E.parse(f) for f in sys.argv[1:]]' "
                 "%s %s",
                 rs, mem);
        cr_assert_eq(system(cmd), 0, "xml.etree refused the figures");
    }
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(names, explain_shows_them_escaped)
{
    rm_cli_problem cp;
    const char *path = cf_path("ex.txt");
    cf_write(path, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    cr_assert_eq(rm_cli_problem_load(&cp, "explain", NULL, 0, path), 0);
    rm_problem *h = hostile_problem();
    for (int i = 0; i < h->n; i++) memcpy(cp.p->nodes[i].name, h->nodes[i].name, RM_NAME_LEN);
    rm_problem_free(h);
    rm_cli_budget bud = rm_cli_budget_percent(100);
    cr_assert_eq(rm_cli_problem_set_budget(&cp, "explain", &bud), 0);
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_err e = {0};
    const rm_strategy_info *st = rm_strategy_find("checkpoint_all");
    rm_schedule_report rep;
    cr_assert_eq(rm_strategy_run_report(&s, &stats, &rep, 0, NULL, st, cp.p, NULL, &e), RM_OK, "%s", e.msg);
    const char *out = cf_path("explain.txt");
    FILE *f = fopen(out, "w");
    cr_assert_not_null(f);
    rm_explain_write_budget(f, &cp, &bud);
    rm_explain_write_schedule(f, &cp, s, &rep, st, &stats);
    fclose(f);
    rm_schedule_report_free(&rep);
    expect_clean_file(out, "explain");
    char *t = cf_text(out);
    cr_assert(strstr(t, "\\x") || strstr(t, "\\u"), "the names are shown escaped:\n%s", t);
    free(t);
    rm_schedule_free(s);
    rm_cli_problem_free(&cp);
}

/* An ONNX fixture with each string from[k] (a protobuf field's tag and
 * length bytes, then the string) overwritten in place, after those two
 * bytes, by evil (as long as the string, so the protobuf stays valid),
 * written to cf_dir/out. */
static const char *onnx_with(const char *fixture, const char *const *from, int n, const char *evil, const char *out)
{
    size_t size;
    unsigned char *b = cf_read(fixture, &size);
    cr_assert_not_null(b);
    for (int k = 0; k < n; k++) {
        size_t len = strlen(from[k]);
        cr_assert_eq((size_t)(unsigned char)from[k][1], strlen(evil));
        unsigned char *at = NULL;
        for (size_t i = 0; !at && i + len <= size; i++)
            if (!memcmp(b + i, from[k], len)) at = b + i;
        cr_assert_not_null(at, "the fixture has no '%s'", from[k] + 2);
        memcpy(at + 2, evil, strlen(evil));
    }
    const char *path = cf_path(out);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, size, f), size);
    fclose(f);
    free(b);
    return path;
}

#define ONNX_DIR REMAT_SOURCE_DIR "/tests/models/onnx/"

static void onnx_solve_ok(const char *cmd, const char *onnx)
{
    cr_assert_eq(cf_remat(cmd, "--onnx", onnx, "--batch", "2", "--budget", "100%", "--strategy", "checkpoint_all",
                          "--quiet", NULL),
                 0, "%s: %s", cmd, cf_err);
}

Test(names, graph_plan_and_explain_never_print_an_onnx_name_raw)
{
    /* The producer and one node name: an escape sequence, a bidi override, a C1 CSI, a byte that is not
     * UTF-8 and a bell, 21 bytes as both are. */
    const char *const from[] = {"\x12\x15remat gen_fixtures.py", "\x1a\x15/features.0/relu/Relu\x22"};
    const char *onnx = onnx_with(ONNX_DIR "cbr_pool_gemm.onnx", from, 2,
                                 "\x1b[31m\xe2\x80\xae\xc2\x9b\xff"
                                 "evil-name\x07",
                                 "evil.onnx");
    cr_assert_eq(cf_remat("graph", "--onnx", onnx, "--batch", "2", NULL), 0, "%s", cf_err);
    cr_assert(cf_said(0, "\\x1b[31m\\u202e\\u009b\\xffevil-name\\x07"), "the import notes show the name escaped");
    expect_clean_file(cf_path("stdout"), "graph --onnx");
    expect_clean_file(cf_path("stderr"), "graph --onnx");
    onnx_solve_ok("plan", onnx);
    cr_assert(cf_said(1, "\\x1b[31m"), "the producer is shown escaped: %s", cf_err);
    expect_clean_file(cf_path("stdout"), "plan --onnx");
    expect_clean_file(cf_path("stderr"), "plan --onnx");
    onnx_solve_ok("explain", onnx);
    expect_clean_file(cf_path("stdout"), "explain --onnx");
    expect_clean_file(cf_path("stderr"), "explain --onnx");
    /* The importer's error quotes the node's name: escaped too. */
    const char *const op[] = {"\x1a\x0e/act/LeakyRelu\x22"};
    onnx = onnx_with(ONNX_DIR "bad_op.onnx", op, 1,
                     "\x1b[31m\xe2\x80\xae\xff"
                     "abcde",
                     "bad.onnx");
    expect_refused((const char *const[]){"graph", "--onnx", onnx, "--batch", "2", NULL},
                   "node 1 '\\x1b[31m\\u202e\\xffabcde' (LeakyRelu): operator 'LeakyRelu' is not supported");
    expect_clean_file(cf_path("stderr"), "graph --onnx, refused");
}

/* ---- whole messages ----------------------------------------------------------- */

Test(names, a_message_escapes_hidden_characters_but_keeps_its_own_lines_and_backslashes)
{
    char *b = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&b, &n);
    cr_assert_not_null(f);
    /* A name already shown (the backslash of "\x1b") is not shown again as "\\x1b". */
    rm_text_fprintf(f, "%s: '%s'\n\t%s", "p\x1b]0;t\x07", "a\\x1bb", "\xe2\x80\xae\xc2\x9b\x9b\xef\xbb\xbf.");
    fclose(f);
    cr_assert_str_eq(b, "p\\x1b]0;t\\x07: 'a\\x1bb'\n\t\\u202e\\u009b\\x9b\\ufeff.");
    free(b);
}

/* Text from files and paths remat did not choose, quoted by an error or an
 * info line: shown escaped, never raw (issue 23, round 2). The schedule
 * and cost readers quote a bad field; the data folder scan names a file;
 * the info lines name the paths. */
Test(names, errors_and_info_lines_never_print_file_text_or_paths_raw)
{
    cf_write(cf_path("skip.txt"), "problem 4 0\n0 a forward 1 10 -\n1 b forward 2 20 0\n2 c forward 3 30 1\n"
                                  "3 d forward 4 5 0,2\n");
    cf_write(cf_path("d2.txt"), "schedule 4\n\x1b]0;pwn\x07\n");
    expect_refused((const char *const[]){"plan", "--check", cf_path("d2.txt"), "--problem", cf_path("skip.txt"), NULL},
                   "found '\\x1b]0;pwn\\x07'");
    expect_clean_file(cf_path("stderr"), "plan --check");
    cf_write(cf_path("k2.costs"), "remat-costs 1 - 1 cpu 4 seconds\n0 \x1b[31ma 1\n1 b 1\n2 c 1\n3 d 1\n");
    expect_refused((const char *const[]){"plan", "--problem", cf_path("skip.txt"), "--budget", "50B", "--costs",
                                         cf_path("k2.costs"), NULL},
                   "node 0 is '\\x1b[31ma'");
    expect_clean_file(cf_path("stderr"), "plan --costs");
    /* A path: in the error when it cannot be opened, on stdout when it can. */
    const char *evil = cf_path("x\x1b[2J\xe2\x80\xaey.txt");
    expect_refused((const char *const[]){"plan", "--problem", evil, NULL}, "x\\x1b[2J\\u202ey.txt: cannot open");
    expect_clean_file(cf_path("stderr"), "plan --problem, missing");
    cf_write(evil, "problem 4 0\n0 a forward 1 10 -\n1 b forward 2 20 0\n2 c forward 3 30 1\n3 d forward 4 5 0,2\n");
    cr_assert_eq(cf_remat("plan", "--problem", evil, "--budget", "1KB", "--quiet", NULL), 0, "%s", cf_err);
    cr_assert(cf_said(0, "x\\x1b[2J\\u202ey.txt: 4 nodes"));
    expect_clean_file(cf_path("stdout"), "plan --problem");
    /* A byte-order mark inside a name shows as nothing: refused like any hidden character. */
    cf_write(cf_path("bom.txt"), "problem 1 0\n0 a\xef\xbb\xbf forward 1 1 -\n");
    expect_refused((const char *const[]){"plan", "--problem", cf_path("bom.txt"), "--budget", "1KB", NULL},
                   "bom.txt:2:4 (byte offset 15): the node name has bytes 0xef 0xbb 0xbf, U+FEFF, a byte-order mark");
    /* A data folder's file name, in the scan's error. */
    char dir[128], link[160];
    snprintf(dir, sizeof dir, "%s/data/train/a", cf_dir);
    cr_assert_eq(system((snprintf(link, sizeof link, "mkdir -p %s %s/data/train/b", dir, cf_dir), link)), 0);
    snprintf(link, sizeof link, "%s/\x1b]0;owned\x07\x1b[2J\xe2\x80\xaeq.png", dir);
    cr_assert_eq(symlink("nowhere", link), 0);
    snprintf(dir, sizeof dir, "%s/data", cf_dir);
    expect_refused((const char *const[]){"train", "--model", CF_MODEL("digits.cfg"), "--data", dir, "--budget", "100%",
                                         "--batch", "2", "--quiet", NULL},
                   "a/\\x1b]0;owned\\x07\\x1b[2J\\u202eq.png: broken symbolic link");
    expect_clean_file(cf_path("stderr"), "train --data");
}

/* ---- sizes ------------------------------------------------------------------ */

static long max_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* A 1.1 GB JSON problem was read whole (1.2 GB of memory) before being
 * refused; a sparse file of that size is now refused by its size, unread. */
Test(problem_size, a_json_file_over_the_cap_is_refused_before_it_is_read)
{
    const char *path = cf_path("big.json");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "{\"nodes\": [", 11), 11);
    cr_assert_eq(ftruncate(fd, 1100000000), 0, "no sparse file here");
    close(fd);
    long before = max_rss_kib();
    double t0 = rm_now();
    rm_problem *p = (rm_problem *)1;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_ERR_PARSE, "%s", e.msg);
    double s = rm_now() - t0;
    cr_assert_null(p);
    char want[256];
    snprintf(want, sizeof want, "%s: 1100000000 bytes, more than the 1073741824 a node-link JSON problem may hold",
             path);
    cr_assert_str_eq(e.msg, want);
    cr_assert_lt(s, 0.5, "%.2f s: the file was read", s);
    cr_assert_lt(max_rss_kib() - before, 64 * 1024, "peak memory grew by %ld KiB", max_rss_kib() - before);
}

/* A stream says no size: it is cut off once past the cap, holding no more. */
Test(problem_size, a_stream_is_cut_off_at_the_cap)
{
    FILE *f = fopen("/dev/zero", "r");
    cr_assert_not_null(f);
    char *buf = (char *)1;
    size_t len = 7;
    rm_err e = {0};
    cr_assert_eq(rm_text_read_all(&buf, &len, f, 1 << 20, "/dev/zero", "test file", &e), RM_ERR_PARSE);
    fclose(f);
    cr_assert_null(buf);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(e.msg, "/dev/zero: more than 1048576 bytes (read from a stream), more than a test file may hold");
    /* A pipe within the cap is read whole; exactly the cap still fits. */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(write(fds[1], "0123456789", 10), 10);
    close(fds[1]);
    f = fdopen(fds[0], "r");
    cr_assert_eq(rm_text_read_all(&buf, &len, f, 10, "pipe", "test file", &e), RM_OK, "%s", e.msg);
    fclose(f);
    cr_assert_eq(len, 10);
    cr_assert_str_eq(buf, "0123456789");
    free(buf);
}

/* ---- the CLI's messages ------------------------------------------------------ */

static const char *example_file(void)
{
    const char *path = cf_path("example.txt");
    cf_write(path, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    return path;
}

/* `remat CMD --problem PATH --budget BUDGET --strategy checkpoint_all
 * --quiet`, which must succeed. */
static void solve_ok(const char *cmd, const char *path, const char *budget)
{
    cr_assert_eq(cf_remat(cmd, "--problem", path, "--budget", budget, "--strategy", "checkpoint_all", "--quiet", NULL),
                 0, "%s --budget %s: %s", cmd, budget, cf_err);
}

/* remat prints sizes up to EiB (and EB): each is a unit --budget takes. */
Test(cli_messages, every_unit_remat_prints_is_a_budget_unit)
{
    const char *ex = example_file();
    const struct {
        const char *arg, *shown;
    } v[] = {{"1PiB", "1.00 PiB"}, {"1EiB", "1.00 EiB"}, {"2PB", "1.78 PiB"}, {"1EB", "888.18 PiB"}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        solve_ok("plan", ex, v[k].arg);
        cr_assert(cf_said(0, v[k].shown), "%s should show %s", v[k].arg, v[k].shown);
    }
    expect_refused((const char *const[]){"plan", "--problem", ex, "--budget", "1P", NULL},
                   "'1P' is ambiguous: say 1PiB (powers of 1024) or 1PB (powers of 1000)");
    expect_refused((const char *const[]){"plan", "--problem", ex, "--budget", "1ZiB", NULL},
                   "use B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB or %");
}

/* 100000% of a 2^57-byte peak is more than the largest budget, 2^62: the
 * line says the 3200% used, not the 100000% asked. */
Test(cli_messages, a_clamped_percentage_budget_is_labelled_as_used)
{
    const char *path = cf_path("huge.txt");
    cf_write(path, "problem 3 0\n0 a forward 1 72057594037927936 -\n1 b loss 1 72057594037927936 0\n"
                   "2 c backward 1 0 0,1\n");
    const char *want = "3200% of the no-remat peak: 100000% of it is more than 2^62 bytes, so capped at 2^62 bytes "
                       "(4 EiB), the largest budget";
    solve_ok("plan", path, "100000%");
    cr_assert(cf_said(0, "budget       4.00 EiB ("), "%s", cf_text(cf_path("stdout")));
    cr_assert(cf_said(0, want));
    cr_assert(!cf_said(0, "(100000% of the no-remat peak)"));
    solve_ok("explain", path, "100000%");
    cr_assert(cf_said(0, want));
    /* Unclamped, the percentage given is the one said. */
    solve_ok("plan", path, "150%");
    cr_assert(cf_said(0, "(150% of the no-remat peak)"));
}

Test(cli_messages, a_repeated_flag_is_refused_like_a_repeated_option)
{
    const char *ex = example_file();
    expect_refused((const char *const[]){"plan", "--problem", ex, "--quiet", "--quiet", NULL},
                   "remat plan: --quiet given twice");
    expect_refused((const char *const[]){"explain", "--problem", ex, "-q", "--quiet", NULL},
                   "remat explain: --quiet given twice");
}

/* A file saved with CR line ends was one line, a comment to its end, and
 * called empty. */
Test(cli_messages, cr_line_ends_are_named_not_called_empty)
{
    const char *path = cf_path("mac.txt");
    cf_write(path, "# saved on a classic Mac\rproblem 2 0 0\r0 a forward 1 8 -\r1 b loss 1 8 0\r");
    expect_refused((const char *const[]){"plan", "--problem", path, "--budget", "100%", NULL},
                   "mac.txt:1: a carriage return (CR) that does not end the line: line ends must be LF or CR "
                   "LF; CR alone (classic Mac OS) is not supported");
    cr_assert(!cf_said(1, "empty file"));
    /* CR LF is still a line end. */
    cf_write(path, "problem 2 0 0\r\n0 a forward 1 8 -\r\n1 b loss 1 8 0\r\n");
    solve_ok("plan", path, "100%");
}

/* Byte 0xc3 (the first of "é") was called a control character. */
Test(cli_messages, non_ascii_is_not_called_a_control_character)
{
    const char *cfg = cf_path("u.cfg");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n[linear]\nname=caf\xc3\xa9\nout=3\n[softmax_xent]\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "u.cfg:6: a non-ASCII character, U+00E9: model configs are ASCII");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n[linear]\nname=caf\xc3\nout=3\n[softmax_xent]\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "u.cfg:6: unexpected byte 0xc3, invalid UTF-8 (a truncated sequence)");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n[linear]\nname=a\x01\nout=3\n[softmax_xent]\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "u.cfg:6: unexpected byte 0x01, a control character");
}

/* A model with two losses was told "loss layer 'loss1' must be the last
 * layer", or, with the second reading the first, "logits 1x1x1x1 have 1
 * classes". */
Test(cli_messages, two_losses_are_called_two_losses)
{
    const char *cfg = cf_path("two.cfg");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n\n[linear]\nname=fc\nout=3\n\n[softmax_xent]\nname=loss1\n\n"
                  "[softmax_xent]\nname=loss2\ninput=fc\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "two.cfg:13: a second loss layer 'loss2' (the first is 'loss1', line 10): a model has one "
                   "loss, its last layer");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n\n[linear]\nname=fc\nout=3\n\n[softmax_xent]\nname=loss1\n\n"
                  "[softmax_xent]\nname=loss2\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "two.cfg:13: 'loss2' reads the output of loss layer 'loss1' (line 10), the loss value, which "
                   "no layer reads: a model has one loss, its last layer");
    cf_write(cfg, "[net]\nchannels=1\nheight=4\nwidth=4\n\n[linear]\nname=fc\nout=3\n\n[softmax_xent]\nname=loss1\n\n"
                  "[linear]\nname=fc2\ninput=fc\nout=3\n");
    expect_refused((const char *const[]){"graph", "--model", cfg, "--batch", "2", NULL},
                   "two.cfg:10: loss layer 'loss1' must be the last layer; 'fc2' (line 13) comes after it");
}

/* --batch auto searched up to 65536 and, when everything fitted, said "no
 * schedule fits more than 65536". */
Test(cli_messages, the_batch_search_cap_is_called_a_cap)
{
    char b[96];
    cr_assert_str_eq(rm_trainer_batch_limit(b, sizeof b, 65536, 65536),
                     "the search stops at 65536, its cap: larger batches are not tried");
    cr_assert_str_eq(rm_trainer_batch_limit(b, sizeof b, 700, 65536), "no schedule fits more than 700");
}
