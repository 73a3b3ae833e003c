/* The lexical layer of model config files: INI-style sections of key=value
 * lines, each remembered with its line number so that every later error
 * (unknown key, bad value, dangling reference, shape mismatch) can name the
 * file and line. This layer knows nothing about layers; it rejects only what
 * is malformed whatever the section: a bad header, a line without '=', a key
 * outside any section, an empty value, a key given twice in one section.
 * Which sections and keys exist is models/builder.c's business.
 * The format is documented in docs/config-format.md. */
#ifndef REMAT_MODELS_CONFIG_H
#define REMAT_MODELS_CONFIG_H

#include <stddef.h>

#include "error.h"
#include "layer.h"

typedef struct rm_cfg_key {
    char *key;
    char *value; /* trimmed, comment stripped, never empty */
    int line;
} rm_cfg_key;

typedef struct rm_cfg_section {
    char *type; /* the text between the brackets: "net", "conv", "repeat" */
    int line;   /* line of the [header] */
    int nkeys;
    rm_cfg_key *keys;
} rm_cfg_section;

typedef struct rm_cfg_file {
    char *path; /* as given; used as the prefix of every message */
    int nsections;
    rm_cfg_section *sections;
    int nlines;
} rm_cfg_file;

/* Reads and tokenizes a file. RM_ERR_IO if it cannot be read, RM_ERR_PARSE
 * with "path:line: what" for malformed text. An empty file is not an error
 * here (it has zero sections); the model builder decides. */
int rm_cfg_read(rm_cfg_file **out, const char *path, rm_err *e);
/* The same from text in memory; path is only used in messages. */
int rm_cfg_parse(rm_cfg_file **out, const char *text, const char *path, rm_err *e);
void rm_cfg_free(rm_cfg_file *f);

/* The key in a section, or NULL. */
const rm_cfg_key *rm_cfg_find(const rm_cfg_section *s, const char *key);

/* Typed values. Each fails with RM_ERR_PARSE and "path:line: bad value ... for
 * key 'k' in [type]: expected ..." on trailing junk, overflow or a value
 * outside [lo, hi]. */
int rm_cfg_int(int *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, int lo, int hi, rm_err *e);
/* "N" (both axes N) or "HxW", each in [lo, hi]. */
int rm_cfg_hw(rm_hw *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, int lo, int hi,
              rm_err *e);
/* lo_open: the lower bound itself is excluded (eps > 0). */
int rm_cfg_float(float *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, double lo, int lo_open,
                 double hi, int hi_open, rm_err *e);

#endif
