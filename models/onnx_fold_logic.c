/* Folded at import: ConstantOfShape, Equal and Where on constants, the shape
 * logic PyTorch writes around an expand (ViT's class token:
 * Where(Equal(shape, -1), ones, shape) turns [N, -1, -1] into [N, 1, 1]).
 * The batch size is a symbol: Equal may compare it only where the answer
 * does not depend on its value (with itself, or with a number below 1,
 * which no batch size is). */
#include <string.h>

#include "onnx_internal.h"

/* Element q of a constant broadcast to count elements (a single value repeats). */
static size_t at(const onnx_const *k, size_t q)
{
    return k->count == 1 ? 0 : q;
}

/* Inputs a and b have equal shapes, or one is a single value: the other's shape. */
static int broadcast(const onnx_const **big, onnx_import *c, const onnx_const *a, const onnx_const *b)
{
    int same = a->rank == b->rank && a->count == b->count;
    for (int k = 0; same && k < a->rank; k++) same = a->dims[k] == b->dims[k];
    if (!same && a->count != 1 && b->count != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "broadcasts constants of different shapes; remat folds equal shapes or a single value");
    *big = a->count >= b->count ? a : b;
    return RM_OK;
}

int onnx_op_constant_of_shape(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"value", NULL};
    onnx_value *s;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&s, c, n, 0, ONNX_CONST, "shape");
    if (rc) return rc;
    if (!s->c.is_int || s->c.rank != 1 || s->c.count > RM_ONNX_MAX_RANK)
        return onnx_fail(c, RM_ERR_PARSE, "its shape is not a list of at most %d integers", RM_ONNX_MAX_RANK);
    size_t count = 1;
    for (size_t k = 0; k < s->c.count; k++) {
        if (s->c.i[k] == ONNX_BATCH)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "a constant as long as the batch, which an import does not know");
        if (s->c.i[k] < 0 || __builtin_mul_overflow(count, (size_t)s->c.i[k], &count) || count > ONNX_MAX_FOLDED)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "a shape of a negative dimension or more than %zu elements",
                             ONNX_MAX_FOLDED);
    }
    onnx_const v = {0}, k;
    const Onnx__AttributeProto *a = onnx_attr(n, "value");
    if (a && (!a->t || (rc = onnx_const_from_tensor(&v, a->t, c->path, "its value", c->e)))) {
        return rc ? rc : onnx_fail(c, RM_ERR_PARSE, "its value is no tensor");
    }
    if (a && v.count != 1) {
        onnx_const_free(&v);
        return onnx_fail(c, RM_ERR_PARSE, "its value holds %zu elements, not one", v.count);
    }
    rc = onnx_const_alloc(&k, a ? v.is_int : 0, (int)s->c.count, s->c.i, c->path, c->e);
    for (size_t q = 0; !rc && a && q < k.count; q++) {
        if (k.is_int)
            k.i[q] = v.i[0];
        else
            k.f[q] = v.f[0];
    }
    onnx_const_free(&v);
    return rc ? rc : onnx_fold_done(c, n, &k);
}

int onnx_op_equal(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *a, *b;
    const onnx_const *big;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&a, c, n, 0, ONNX_CONST, "input A");
    if (!rc) rc = onnx_need_input(&b, c, n, 1, ONNX_CONST, "input B");
    if (!rc) rc = broadcast(&big, c, &a->c, &b->c);
    if (rc) return rc;
    if (a->c.is_int != b->c.is_int) return onnx_fail(c, RM_ERR_PARSE, "compares integers with floats");
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, 1, big->rank, big->dims, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) {
        if (!a->c.is_int) {
            k.i[q] = a->c.f[at(&a->c, q)] == b->c.f[at(&b->c, q)];
            continue;
        }
        int64_t x = a->c.i[at(&a->c, q)], y = b->c.i[at(&b->c, q)];
        int64_t other = x == ONNX_BATCH ? y : x;
        if ((x == ONNX_BATCH) != (y == ONNX_BATCH) && other >= 1) {
            onnx_const_free(&k);
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "compares the batch size with %lld, which an import cannot answer",
                             (long long)other);
        }
        k.i[q] = x == y;
    }
    return onnx_fold_done(c, n, &k);
}

int onnx_op_where(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *w, *a, *b;
    const onnx_const *ab, *big;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&w, c, n, 0, ONNX_CONST, "condition");
    if (!rc) rc = onnx_need_input(&a, c, n, 1, ONNX_CONST, "X");
    if (!rc) rc = onnx_need_input(&b, c, n, 2, ONNX_CONST, "Y");
    if (!rc) rc = broadcast(&ab, c, &a->c, &b->c);
    if (!rc) rc = broadcast(&big, c, ab, &w->c);
    if (rc) return rc;
    if (!w->c.is_int || a->c.is_int != b->c.is_int)
        return onnx_fail(c, RM_ERR_PARSE, "a condition that is not boolean, or X and Y of two types");
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, a->c.is_int, big->rank, big->dims, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) {
        const onnx_const *from = w->c.i[at(&w->c, q)] ? &a->c : &b->c;
        if (k.is_int)
            k.i[q] = from->i[at(from, q)];
        else
            k.f[q] = from->f[at(from, q)];
    }
    return onnx_fold_done(c, n, &k);
}
