/* The model builder: the semantic half of the strict config parser. It
 * checks every section and key against a schema, expands [repeat] blocks
 * into uniquely named layers, resolves input references, runs each layer's
 * shape inference and counts parameters. Every message starts "path:line:"
 * with the line of the offending key or section (see docs/config-format.md). */
#include "builder.h"
#include "init.h"
#include "layers.h"
#include "name_index.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for the longest suffix the tracer appends: "<name>.gradsum". */
#define NAME_MAX_CHARS (RM_NAME_LEN - 1 - (int)sizeof(".gradsum"))
#define MAX_COUNT 100000 /* repeat count, and a bound on layer numbers */
/* Layers a config may expand to (ten repeats at the largest count), the
 * limit every model has: a bound on the memory a config can make the builder
 * take, checked before expanding. */
#define MAX_LAYERS RM_MODEL_MAX_LAYERS
#define MAX_DIM (1 << 20)

/* ---- schema ------------------------------------------------------------ */

enum {
    K_FILTERS = 1 << 0,
    K_OUT = 1 << 1,
    K_SIZE = 1 << 2,
    K_STRIDE = 1 << 3,
    K_PAD = 1 << 4,
    K_BIAS = 1 << 5,
    K_EPS = 1 << 6,
    K_MOMENTUM = 1 << 7,
    K_P = 1 << 8,
    K_CEIL = 1 << 9,
    K_INIT = 1 << 10,
    K_DILATION = 1 << 11,
    K_GROUPS = 1 << 12,
    K_START = 1 << 13,
    K_CHANNELS = 1 << 14,
    K_HEADS = 1 << 15
};

static const char *const key_names[] = {"filters", "out",      "size",     "stride",    "pad",  "bias",
                                        "eps",     "momentum", "p",        "ceil_mode", "init", "dilation",
                                        "groups",  "start",    "channels", "heads"};
#define NKEYNAMES ((int)(sizeof key_names / sizeof key_names[0]))

/* Keys each layer section accepts besides name/input/inputs, and which of
 * them are required. Pool stride defaults to 1 like every other stride, so
 * configs spell out the usual stride=2. */
static unsigned layer_keys(rm_layer_kind k, unsigned *required)
{
    *required = 0;
    switch (k) {
    case RM_LAYER_CONV2D:
        *required = K_FILTERS | K_SIZE;
        return K_FILTERS | K_SIZE | K_STRIDE | K_PAD | K_BIAS | K_INIT | K_DILATION | K_GROUPS;
    case RM_LAYER_DWCONV2D:
        *required = K_SIZE;
        return K_SIZE | K_STRIDE | K_PAD | K_BIAS | K_INIT;
    case RM_LAYER_CONV_TRANSPOSE2X2:
        *required = K_FILTERS;
        return K_FILTERS | K_BIAS;
    case RM_LAYER_LINEAR:
        *required = K_OUT;
        return K_OUT | K_BIAS | K_INIT;
    case RM_LAYER_BATCHNORM2D:
        return K_EPS | K_MOMENTUM;
    case RM_LAYER_LAYERNORM:
        return K_EPS;
    case RM_LAYER_MAXPOOL2D:
        *required = K_SIZE;
        return K_SIZE | K_STRIDE | K_PAD | K_CEIL;
    case RM_LAYER_AVGPOOL2D:
        *required = K_SIZE;
        return K_SIZE | K_STRIDE | K_PAD;
    case RM_LAYER_DROPOUT:
    case RM_LAYER_DROP_PATH:
        return K_P;
    case RM_LAYER_CHANNEL_SHUFFLE:
        *required = K_GROUPS;
        return K_GROUPS;
    case RM_LAYER_SLICE:
        *required = K_START | K_CHANNELS;
        return K_START | K_CHANNELS;
    case RM_LAYER_ATTENTION:
        *required = K_HEADS;
        return K_HEADS;
    case RM_LAYER_TOKEN:
        return K_START;
    default:
        return 0;
    }
}

static int is_loss(rm_layer_kind k)
{
    return k == RM_LAYER_SOFTMAX_XENT || k == RM_LAYER_PIXEL_SOFTMAX_XENT;
}

/* "name, input, inputs, filters, size" for hints in messages. */
static void list_keys(char *buf, size_t len, unsigned allowed, int layer)
{
    buf[0] = '\0';
    size_t used = 0;
    if (layer) used += (size_t)snprintf(buf, len, "name, input, inputs");
    for (int i = 0; i < NKEYNAMES && used < len; i++)
        if (allowed & (1u << i))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", key_names[i]);
}

static void list_sections(char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "net, repeat, end");
    for (int k = 0; k < RM_LAYER_KIND_COUNT && used < len; k++) {
        const rm_layer_desc *d = rm_layer_desc_of((rm_layer_kind)k);
        if (d && d->name) used += (size_t)snprintf(buf + used, len - used, ", %s", d->name);
    }
}

/* ---- expansion --------------------------------------------------------- */

/* One layer to build: a section of the file, in one repeat iteration. */
typedef struct inst {
    const rm_cfg_section *sec;
    const rm_layer_desc *desc;
    char name[RM_NAME_LEN];
    int auto_named;
    int in_repeat;            /* inside a [repeat] body */
    int first_of_iter;        /* index of the first instance of its iteration */
    int iter;                 /* iteration number as used in names */
    char prefix[RM_NAME_LEN]; /* the repeat's name prefix */
} inst;

typedef struct builder {
    const rm_cfg_file *f;
    rm_err *e;
    inst *v;
    int n, cap;
    rm_name_index names; /* the full name of every instance, once all are pushed */
} builder;

static int valid_name(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.' || *s == '-')) return 0;
    return 1;
}

/* The name key of a section, checked; NULL when absent. */
static int section_name(const char **out, const builder *b, const rm_cfg_section *s)
{
    const rm_cfg_key *k = rm_cfg_find(s, "name");
    *out = NULL;
    if (!k) return RM_OK;
    if (!valid_name(k->value))
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: bad name '%s' in [%s]: use letters, digits, '_', '.' and '-'",
                         b->f->path, k->line, k->value, s->type);
    if (!strcmp(k->value, "input"))
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: the name 'input' is reserved for the input batch", b->f->path,
                         k->line);
    *out = k->value;
    return RM_OK;
}

static int push(builder *b, const inst *it)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        inst *v = realloc(b->v, (size_t)cap * sizeof *v);
        if (!v) return rm_errorf(b->e, RM_ERR_NOMEM, "%s: out of memory", b->f->path);
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = *it;
    return RM_OK;
}

/* Checked before pushing `adding` more layers, so that a [repeat] whose
 * count would pass the limit fails at once, at its line, rather than after
 * expanding up to the limit. */
static int check_room(const builder *b, long long adding, int line)
{
    long long total = b->n + adding;
    if (total <= MAX_LAYERS) return RM_OK;
    return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: more than %d layers: the config reaches %lld here", b->f->path, line,
                     MAX_LAYERS, total);
}

/* Checks a layer section's keys once, before any repetition. */
static int check_layer_keys(const builder *b, const rm_cfg_section *s, const rm_layer_desc *d)
{
    unsigned required, allowed = layer_keys(d->kind, &required);
    for (int i = 0; i < s->nkeys; i++) {
        const char *k = s->keys[i].key;
        if (!strcmp(k, "name") || !strcmp(k, "input") || !strcmp(k, "inputs")) continue;
        int known = 0;
        for (int j = 0; j < NKEYNAMES; j++)
            if (!strcmp(k, key_names[j]) && (allowed & (1u << j))) known = 1;
        if (!known) {
            char hint[256];
            list_keys(hint, sizeof hint, allowed, 1);
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown key '%s' in [%s] (valid keys: %s)", b->f->path,
                             s->keys[i].line, k, s->type, hint);
        }
    }
    for (int j = 0; j < NKEYNAMES; j++)
        if ((required & (1u << j)) && !rm_cfg_find(s, key_names[j]))
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [%s] needs the key '%s'", b->f->path, s->line, s->type,
                             key_names[j]);
    const rm_cfg_key *in1 = rm_cfg_find(s, "input"), *inn = rm_cfg_find(s, "inputs");
    if (in1 && inn)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: give either 'input' or 'inputs' in [%s], not both", b->f->path,
                         inn->line, s->type);
    if (in1 && strchr(in1->value, ','))
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: 'input' takes one layer; use 'inputs' for a list", b->f->path,
                         in1->line);
    const char *nm;
    return section_name(&nm, b, s);
}

/* Names a layer: explicit, or "<section><k>" with k counting that section
 * type within its scope; inside a repeat, "<prefix>.<iteration>." first. */
static int name_inst(builder *b, inst *it, const char *prefix, const int *scope_counts)
{
    const char *nm;
    int rc = section_name(&nm, b, it->sec);
    if (rc) return rc;
    char base[RM_NAME_LEN * 2];
    if (nm) {
        snprintf(base, sizeof base, "%s", nm);
    } else {
        it->auto_named = 1;
        /* relu6's first is relu6_1, never relu61 (which is relu's 61st). */
        const char *type = it->sec->type;
        size_t tl = strlen(type);
        snprintf(base, sizeof base, "%s%s%d", type, tl && isdigit((unsigned char)type[tl - 1]) ? "_" : "",
                 scope_counts[it->desc->kind]);
    }
    char full[RM_NAME_LEN * 4];
    snprintf(it->prefix, sizeof it->prefix, "%s", prefix);
    if (it->in_repeat)
        snprintf(full, sizeof full, "%s.%d.%s", prefix, it->iter, base);
    else
        snprintf(full, sizeof full, "%s", base);
    if ((int)strlen(full) > NAME_MAX_CHARS)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: layer name '%s' is longer than %d characters", b->f->path,
                         it->sec->line, full, NAME_MAX_CHARS);
    snprintf(it->name, sizeof it->name, "%s", full);
    return RM_OK;
}

static int find_inst(const builder *b, const char *name)
{
    return rm_name_index_find(&b->names, name);
}

/* Walks the sections: [net] first, layers, [repeat] ... [end] blocks; emits
 * the flat list of named layer instances. */
/* The [net] section (the first): the input's channels, height and width. */
static int parse_net(builder *b, rm_shape *input, int *net_line)
{
    const rm_cfg_file *f = b->f;
    if (f->nsections == 0)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: empty config: expected a [net] section and layers", f->path,
                         f->nlines > 0 ? f->nlines : 1);
    const rm_cfg_section *net = &f->sections[0];
    if (strcmp(net->type, "net"))
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: the first section must be [net], not [%s]", f->path, net->line,
                         net->type);
    *net_line = net->line;
    int dims[3] = {0, 0, 0};
    const char *dim_names[3] = {"channels", "height", "width"};
    for (int i = 0; i < net->nkeys; i++) {
        const rm_cfg_key *k = &net->keys[i];
        int j = 0;
        while (j < 3 && strcmp(k->key, dim_names[j])) j++;
        if (j == 3) {
            if (!strcmp(k->key, "batch"))
                return rm_errorf(b->e, RM_ERR_PARSE,
                                 "%s:%d: 'batch' does not belong in the config: give it on the command line (--batch)",
                                 f->path, k->line);
            return rm_errorf(b->e, RM_ERR_PARSE,
                             "%s:%d: unknown key '%s' in [net] (valid keys: channels, height, width)", f->path, k->line,
                             k->key);
        }
        int rc = rm_cfg_int(&dims[j], f, net, k, 1, MAX_DIM, b->e);
        if (rc) return rc;
    }
    for (int j = 0; j < 3; j++)
        if (!dims[j])
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [net] needs the key '%s'", f->path, net->line, dim_names[j]);
    *input = rm_shape_make(1, dims[0], dims[1], dims[2]);
    return RM_OK;
}

/* A layer section: its descriptor, with its keys checked. */
static int layer_section(const rm_layer_desc **d, const builder *b, const rm_cfg_section *s)
{
    *d = rm_layer_desc_by_name(s->type);
    if (!*d) {
        char hint[512];
        list_sections(hint, sizeof hint);
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown section [%s] (known: %s)", b->f->path, s->line, s->type,
                         hint);
    }
    return check_layer_keys(b, s, *d);
}

/* The keys of a [repeat] section: count, start and the name prefix. */
static int repeat_keys(int *count, int *start, char *prefix, size_t len, const builder *b, const rm_cfg_section *s)
{
    const rm_cfg_file *f = b->f;
    *count = *start = 0;
    for (int i = 0; i < s->nkeys; i++) {
        const rm_cfg_key *k = &s->keys[i];
        int rc = RM_OK;
        if (!strcmp(k->key, "count"))
            rc = rm_cfg_int(count, f, s, k, 1, MAX_COUNT, b->e);
        else if (!strcmp(k->key, "start"))
            rc = rm_cfg_int(start, f, s, k, 0, MAX_COUNT, b->e);
        else if (!strcmp(k->key, "name")) {
            const char *nm;
            rc = section_name(&nm, b, s);
            if (!rc) snprintf(prefix, len, "%s", nm);
        } else
            rc = rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown key '%s' in [repeat] (valid keys: count, name, start)",
                           f->path, k->line, k->key);
        if (rc) return rc;
    }
    if (!*count) return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [repeat] needs the key 'count'", f->path, s->line);
    return RM_OK;
}

/* The [repeat] section at index si: its body checked once, then its layers
 * pushed count times. *end gets the index of its [end]. */
static int expand_repeat(builder *b, int si, int *end, int nrepeat, int net_line)
{
    const rm_cfg_file *f = b->f;
    const rm_cfg_section *s = &f->sections[si];
    int body = si + 1, last = body;
    for (; last < f->nsections && strcmp(f->sections[last].type, "end"); last++) {
        const rm_cfg_section *bs = &f->sections[last];
        if (!strcmp(bs->type, "repeat"))
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [repeat] inside [repeat] (line %d) is not supported", f->path,
                             bs->line, s->line);
        if (!strcmp(bs->type, "net"))
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: a second [net] section (the first is at line %d)", f->path,
                             bs->line, net_line);
        const rm_layer_desc *d;
        int rc = layer_section(&d, b, bs);
        if (rc) return rc;
    }
    if (last == f->nsections)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [repeat] is never closed by [end]", f->path, s->line);
    if (last == body)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [repeat] has no layers before its [end]", f->path, s->line);
    if (f->sections[last].nkeys)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown key '%s' in [end] (it takes none)", f->path,
                         f->sections[last].keys[0].line, f->sections[last].keys[0].key);
    int count, start;
    char prefix[RM_NAME_LEN];
    snprintf(prefix, sizeof prefix, "repeat%d", nrepeat);
    int rc = repeat_keys(&count, &start, prefix, sizeof prefix, b, s);
    if (!rc) rc = check_room(b, (long long)count * (last - body), rm_cfg_find(s, "count")->line);
    if (rc) return rc;
    for (int it = start; it < start + count; it++) {
        int counts[RM_LAYER_KIND_COUNT] = {0};
        int first = b->n;
        for (int bi = body; bi < last; bi++) {
            inst x;
            memset(&x, 0, sizeof x);
            x.sec = &f->sections[bi];
            x.desc = rm_layer_desc_by_name(x.sec->type);
            x.in_repeat = 1;
            x.first_of_iter = first;
            x.iter = it;
            counts[x.desc->kind]++;
            rc = name_inst(b, &x, prefix, counts);
            if (!rc) rc = push(b, &x);
            if (rc) return rc;
        }
    }
    *end = last;
    return RM_OK;
}

/* Indexes every instance's name (b->v no longer moves), reporting a name
 * given twice at its later definition. */
static int index_names(builder *b)
{
    int rc = rm_name_index_init(&b->names, (size_t)b->n, b->f->path, b->e);
    for (int i = 0; !rc && i < b->n; i++) {
        int j = rm_name_index_add(&b->names, b->v[i].name, i);
        if (j < 0) continue;
        const rm_cfg_key *nk = rm_cfg_find(b->v[i].sec, "name");
        rc = rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: duplicate layer name '%s'%s (first defined at line %d)", b->f->path,
                       nk ? nk->line : b->v[i].sec->line, b->v[i].name,
                       b->v[i].auto_named ? " (the automatic name of this section)" : "", b->v[j].sec->line);
    }
    return rc;
}

static int expand(builder *b, rm_shape *input, int *net_line)
{
    const rm_cfg_file *f = b->f;
    int rc = parse_net(b, input, net_line);
    if (rc) return rc;
    int top_counts[RM_LAYER_KIND_COUNT] = {0};
    int nrepeat = 0;
    for (int si = 1; si < f->nsections; si++) {
        const rm_cfg_section *s = &f->sections[si];
        if (!strcmp(s->type, "net"))
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: a second [net] section (the first is at line %d)", f->path,
                             s->line, *net_line);
        if (!strcmp(s->type, "end"))
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [end] without a [repeat]", f->path, s->line);
        if (!strcmp(s->type, "repeat")) {
            if ((rc = expand_repeat(b, si, &si, ++nrepeat, *net_line))) return rc;
            continue;
        }
        const rm_layer_desc *d;
        if ((rc = layer_section(&d, b, s))) return rc;
        inst x;
        memset(&x, 0, sizeof x);
        x.sec = s;
        x.desc = d;
        top_counts[d->kind]++;
        rc = check_room(b, 1, s->line);
        if (!rc) rc = name_inst(b, &x, "", top_counts);
        if (!rc) rc = push(b, &x);
        if (rc) return rc;
    }
    if (b->n == 0)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: the config has no layers after [net]", f->path, *net_line);
    return index_names(b);
}

/* ---- building layers --------------------------------------------------- */

/* Resolves one reference of instance i: "@in", "input", a name of the same
 * repeat iteration, or any earlier layer's full name. */
static int resolve(int *out, const builder *b, int i, const char *ref, int line)
{
    const inst *it = &b->v[i];
    const char *path = b->f->path;
    if (!strcmp(ref, "@in")) {
        if (!it->in_repeat)
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: '@in' (the input of a repeat iteration) outside [repeat]",
                             path, line);
        *out = it->first_of_iter - 1; /* -1: the input batch */
        return RM_OK;
    }
    if (!strcmp(ref, "input")) {
        *out = RM_MODEL_INPUT;
        return RM_OK;
    }
    int j;
    if (it->in_repeat) {
        /* A body name first means the layer of this same iteration. */
        char full[RM_NAME_LEN * 4];
        snprintf(full, sizeof full, "%s.%d.%s", it->prefix, it->iter, ref);
        j = find_inst(b, full);
        if (j >= it->first_of_iter && j < i) {
            *out = j;
            return RM_OK;
        }
        if (j == i) return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: layer '%s' reads itself", path, line, it->name);
        if (j > i)
            return rm_errorf(b->e, RM_ERR_PARSE,
                             "%s:%d: forward reference to '%s' (defined at line %d): inputs must be earlier layers",
                             path, line, ref, b->v[j].sec->line);
    }
    j = find_inst(b, ref);
    if (j < 0)
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown layer '%s' in the inputs of '%s'", path, line, ref,
                         it->name);
    if (j == i) return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: layer '%s' reads itself", path, line, it->name);
    if (j > i)
        return rm_errorf(b->e, RM_ERR_PARSE,
                         "%s:%d: forward reference to '%s' (defined at line %d): inputs must be earlier layers", path,
                         line, ref, b->v[j].sec->line);
    *out = j;
    return RM_OK;
}

/* The layer's inputs (at most RM_MAX_INPUTS) into ins[*nin]. */
static int layer_inputs(int *ins, int *nin, const builder *b, int i)
{
    const inst *it = &b->v[i];
    const char *path = b->f->path;
    const rm_cfg_key *k = rm_cfg_find(it->sec, "input");
    if (!k) k = rm_cfg_find(it->sec, "inputs");
    *nin = 0;
    if (!k) {
        ins[(*nin)++] = i - 1; /* the previous layer, or the input batch */
    } else {
        const char *p = k->value;
        for (;;) {
            const char *comma = strchr(p, ',');
            const char *end = comma ? comma : p + strlen(p);
            const char *tb = p, *te = end;
            while (tb < te && isspace((unsigned char)*tb)) tb++;
            while (te > tb && isspace((unsigned char)te[-1])) te--;
            if (tb == te)
                return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: empty layer name in '%s'", path, k->line, k->key);
            if (*nin == RM_MAX_INPUTS)
                return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: more than %d inputs", path, k->line, RM_MAX_INPUTS);
            char ref[RM_NAME_LEN * 2];
            if ((size_t)(te - tb) >= sizeof ref)
                return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: unknown layer '%.*s...' in the inputs of '%s'", path,
                                 k->line, 40, tb, it->name);
            memcpy(ref, tb, (size_t)(te - tb));
            ref[te - tb] = '\0';
            int j = RM_MODEL_INPUT;
            int rc = resolve(&j, b, i, ref, k->line);
            if (rc) return rc;
            for (int q = 0; q < *nin; q++)
                if (ins[q] == j)
                    return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: '%s' is listed twice in the inputs of '%s'", path,
                                     k->line, ref, it->name);
            ins[(*nin)++] = j;
            if (!comma) break;
            p = comma + 1;
        }
    }
    /* Caught here, before the shapes: a second loss reading the first's
     * 1x1 value as logits was told "logits 1x1x1x1 have 1 classes". */
    for (int q = 0; q < *nin; q++)
        if (ins[q] >= 0 && is_loss(b->v[ins[q]].desc->kind))
            return rm_errorf(b->e, RM_ERR_PARSE,
                             "%s:%d: '%s' reads the output of loss layer '%s' (line %d), the loss value, which no "
                             "layer reads: a model has one loss, its last layer",
                             path, k ? k->line : it->sec->line, it->name, b->v[ins[q]].name, b->v[ins[q]].sec->line);
    const rm_layer_desc *d = it->desc;
    if (*nin < d->min_inputs || *nin > d->max_inputs) {
        if (d->min_inputs == d->max_inputs)
            return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [%s] '%s' takes %d input%s, got %d", path,
                             k ? k->line : it->sec->line, d->name, it->name, d->min_inputs,
                             d->min_inputs == 1 ? "" : "s", *nin);
        return rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: [%s] '%s' takes %d to %d inputs (inputs=a, b, ...), got %d", path,
                         k ? k->line : it->sec->line, d->name, it->name, d->min_inputs, d->max_inputs, *nin);
    }
    return RM_OK;
}

static int layer_config(rm_layer_config *c, const builder *b, const inst *it)
{
    const rm_cfg_file *f = b->f;
    const rm_cfg_section *s = it->sec;
    memset(c, 0, sizeof *c);
    c->kind = it->desc->kind;
    /* Defaults (docs/config-format.md); keys a kind does not take stay 0. */
    unsigned required, allowed = layer_keys(c->kind, &required);
    if (allowed & K_STRIDE) c->stride = rm_hw_square(1);
    if (allowed & K_DILATION) c->dilation = rm_hw_square(1);
    if (allowed & K_GROUPS) c->groups = 1;
    if (allowed & K_BIAS) c->bias = 1;
    if (allowed & K_EPS) c->eps = 1e-5f;
    if (allowed & K_MOMENTUM) c->momentum = 0.1f;
    if (allowed & K_P) c->p = 0.5f;
    for (int i = 0; i < s->nkeys; i++) {
        const rm_cfg_key *k = &s->keys[i];
        const char *n = k->key;
        int rc = RM_OK;
        if (!strcmp(n, "filters") || !strcmp(n, "out"))
            rc = rm_cfg_int(&c->out_channels, f, s, k, 1, MAX_DIM, b->e);
        else if (!strcmp(n, "size"))
            rc = rm_cfg_hw(&c->kernel, f, s, k, 1, 1024, b->e);
        else if (!strcmp(n, "stride"))
            rc = rm_cfg_hw(&c->stride, f, s, k, 1, 1024, b->e);
        else if (!strcmp(n, "pad"))
            rc = rm_cfg_hw(&c->pad, f, s, k, 0, 1024, b->e);
        else if (!strcmp(n, "dilation"))
            rc = rm_cfg_hw(&c->dilation, f, s, k, 1, 1024, b->e);
        else if (!strcmp(n, "groups"))
            rc = rm_cfg_int(&c->groups, f, s, k, 1, MAX_DIM, b->e);
        else if (!strcmp(n, "start"))
            rc = rm_cfg_int(&c->start, f, s, k, 0, MAX_DIM, b->e);
        else if (!strcmp(n, "heads"))
            rc = rm_cfg_int(&c->heads, f, s, k, 1, MAX_DIM, b->e);
        else if (!strcmp(n, "channels"))
            rc = rm_cfg_int(&c->out_channels, f, s, k, 1, MAX_DIM, b->e);
        else if (!strcmp(n, "bias"))
            rc = rm_cfg_int(&c->bias, f, s, k, 0, 1, b->e);
        else if (!strcmp(n, "eps"))
            rc = rm_cfg_float(&c->eps, f, s, k, 0.0, 1, 1.0, 0, b->e);
        else if (!strcmp(n, "momentum"))
            rc = rm_cfg_float(&c->momentum, f, s, k, 0.0, 0, 1.0, 0, b->e);
        else if (!strcmp(n, "p"))
            rc = rm_cfg_float(&c->p, f, s, k, 0.0, 0, 1.0, 1, b->e);
        else if (!strcmp(n, "ceil_mode"))
            rc = rm_cfg_int(&c->ceil_mode, f, s, k, 0, 1, b->e);
        else if (!strcmp(n, "init")) {
            rm_err why = {RM_OK, ""};
            if (rm_init_parse(&c->init, k->value, &why))
                rc = rm_errorf(b->e, RM_ERR_PARSE, "%s:%d: in [%s]: %s", f->path, k->line, s->type, why.msg);
        }
        if (rc) return rc;
    }
    return RM_OK;
}

int rm_model_build(rm_model **out, const rm_cfg_file *f, rm_err *e)
{
    *out = NULL;
    builder b = {f, e, NULL, 0, 0, {NULL, 0}};
    rm_model *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(f->path))) {
        free(m);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    int net_line = 0;
    int rc = expand(&b, &m->input, &net_line);
    if (!rc && !(m->layers = calloc((size_t)b.n, sizeof *m->layers)))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    for (int i = 0; !rc && i < b.n; i++) {
        const inst *it = &b.v[i];
        rm_model_layer *L = &m->layers[i];
        snprintf(L->name, sizeof L->name, "%s", it->name);
        L->desc = it->desc;
        L->line = it->sec->line;
        int ins[RM_MAX_INPUTS], nin = 0;
        rc = layer_config(&L->cfg, &b, it);
        if (!rc) rc = layer_inputs(ins, &nin, &b, i);
        if (!rc) {
            rm_err le = {RM_OK, ""};
            if ((rc = rm_model_layer_complete(m, i, ins, nin, &le)))
                rc = rm_errorf(e, (rm_code)rc, "%s:%d: %s", f->path, it->sec->line, le.msg);
        }
    }
    if (!rc) {
        const rm_model_layer *last = &m->layers[m->nlayers - 1];
        for (int i = 0; !rc && i < m->nlayers - 1; i++) {
            const rm_model_layer *L = &m->layers[i];
            int j = i + 1;
            while (is_loss(L->desc->kind) && j < m->nlayers && !is_loss(m->layers[j].desc->kind)) j++;
            /* Two losses were told "loss layer 'loss1' must be the last
             * layer", as if moving it would do: say there are two. */
            if (is_loss(L->desc->kind) && j < m->nlayers)
                rc = rm_errorf(e, RM_ERR_PARSE,
                               "%s:%d: a second loss layer '%s' (the first is '%s', line %d): a model has one loss, "
                               "its last layer",
                               f->path, m->layers[j].line, m->layers[j].name, L->name, L->line);
            else if (is_loss(L->desc->kind))
                rc = rm_errorf(e, RM_ERR_PARSE,
                               "%s:%d: loss layer '%s' must be the last layer; '%s' (line %d) comes after it", f->path,
                               L->line, L->name, m->layers[m->nlayers - 1].name, m->layers[m->nlayers - 1].line);
            else if (L->uses == 0)
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the output of '%s' is never used", f->path, L->line, L->name);
        }
        if (!rc && !is_loss(last->desc->kind))
            rc = rm_errorf(e, RM_ERR_PARSE,
                           "%s:%d: the last layer '%s' is not a loss: a model ends with [softmax_xent] or "
                           "[pixel_softmax_xent]",
                           f->path, last->line, last->name);
        if (!rc && m->input_uses == 0)
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the input batch is never used", f->path, net_line);
    }
    free(b.v);
    rm_name_index_free(&b.names);
    if (rc) {
        rm_model_free(m);
        return rc;
    }
    *out = m;
    return RM_OK;
}

int rm_model_parse(rm_model **out, const char *text, const char *path, rm_err *e)
{
    *out = NULL;
    rm_cfg_file *f;
    int rc = rm_cfg_parse(&f, text, path, e);
    if (rc) return rc;
    rc = rm_model_build(out, f, e);
    rm_cfg_free(f);
    return rc;
}

int rm_model_load_input(rm_model **out, const char *path, int height, int width, rm_err *e)
{
    *out = NULL;
    rm_cfg_file *f;
    int rc = rm_cfg_read(&f, path, e);
    if (rc) return rc;
    const int dims[2] = {height, width};
    const char *names[2] = {"height", "width"};
    for (int j = 0; j < 2 && f->nsections > 0 && !strcmp(f->sections[0].type, "net"); j++) {
        rm_cfg_key *k = (rm_cfg_key *)rm_cfg_find(&f->sections[0], names[j]);
        char v[16];
        if (dims[j] <= 0 || !k) continue; /* a missing key is the builder's error */
        snprintf(v, sizeof v, "%d", dims[j]);
        char *copy = strdup(v);
        if (!copy) {
            rm_cfg_free(f);
            return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
        }
        free(k->value);
        k->value = copy;
    }
    rc = rm_model_build(out, f, e);
    rm_cfg_free(f);
    return rc;
}

int rm_model_load(rm_model **out, const char *path, rm_err *e)
{
    *out = NULL;
    rm_cfg_file *f;
    int rc = rm_cfg_read(&f, path, e);
    if (rc) return rc;
    rc = rm_model_build(out, f, e);
    rm_cfg_free(f);
    return rc;
}

int rm_model_open(rm_model **out, const char *path, const rm_onnx_options *onnx, int height, int width,
                  rm_onnx_summary *sum, rm_err *e)
{
    if (!onnx) return rm_model_load_input(out, path, height, width, e);
    rm_onnx_options o = *onnx;
    if (height > 0) o.height = height;
    if (width > 0) o.width = width;
    return rm_onnx_load(out, sum, path, &o, e);
}
