/* The builder's name -> index hash table (see name_index.h). */
#include "name_index.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: short names, no adversary; any well-mixed hash would do. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int rm_name_index_init(rm_name_index *x, size_t n, const char *what, rm_err *e)
{
    /* At most half full, so that probe runs stay short. */
    size_t slots = 16;
    while (slots < 2 * n) {
        if (slots > SIZE_MAX / 2 / sizeof *x->slots) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", what);
        slots *= 2;
    }
    x->slots = calloc(slots, sizeof *x->slots);
    x->mask = slots - 1;
    if (!x->slots) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", what);
    return RM_OK;
}

void rm_name_index_free(rm_name_index *x)
{
    free(x->slots);
    x->slots = NULL;
    x->mask = 0;
}

/* The slot holding name, or the empty slot where it would go (linear
 * probing; the table is never full). */
static rm_name_slot *probe(const rm_name_index *x, const char *name, uint32_t h)
{
    size_t i = h & x->mask;
    while (x->slots[i].name && (x->slots[i].hash != h || strcmp(x->slots[i].name, name))) i = (i + 1) & x->mask;
    return &x->slots[i];
}

int rm_name_index_add(rm_name_index *x, const char *name, int index)
{
    uint32_t h = name_hash(name);
    rm_name_slot *s = probe(x, name, h);
    if (s->name) return s->index;
    *s = (rm_name_slot){name, h, index};
    return -1;
}

int rm_name_index_find(const rm_name_index *x, const char *name)
{
    const rm_name_slot *s = probe(x, name, name_hash(name));
    return s->name ? s->index : -1;
}
