/* A map from layer names to indices for the model builder. Every layer name
 * is checked for uniqueness and every input reference is looked up by name;
 * a linear scan for each made a config with many layers (a [repeat] with a
 * large count) quadratic to build. This is a hash table with open
 * addressing: each add and find takes constant time on average.
 *
 * The index does not copy the names: they must stay where they are, and
 * unchanged, until the index is freed. */
#ifndef REMAT_MODELS_NAME_INDEX_H
#define REMAT_MODELS_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct rm_name_slot {
    const char *name; /* NULL: empty */
    uint32_t hash;    /* compared before the names, which often share a long prefix */
    int index;
} rm_name_slot;

typedef struct rm_name_index {
    rm_name_slot *slots;
    size_t mask; /* the slot count minus one; the count is a power of two */
} rm_name_index;

/* An empty index with room for n names (it never grows). RM_ERR_NOMEM, with
 * the message "what: out of memory", when the table cannot be allocated. */
int rm_name_index_init(rm_name_index *x, size_t n, const char *what, rm_err *e);
void rm_name_index_free(rm_name_index *x);

/* Maps name to index, unless the name is there already: returns the index
 * it has (the name is left mapped to it), or -1 when the name was added.
 * At most the n names of rm_name_index_init may be added. */
int rm_name_index_add(rm_name_index *x, const char *name, int index);
/* The index of name, or -1. */
int rm_name_index_find(const rm_name_index *x, const char *name);

#endif
