/* The builder's name -> index table: adds, finds, reports a name already
 * there, and keeps working when names collide in the table. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "name_index.h"

Test(name_index, add_find_and_duplicates)
{
    rm_name_index x;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_name_index_init(&x, 3, "test", &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_name_index_find(&x, "a"), -1, "empty");
    cr_assert_eq(rm_name_index_add(&x, "a", 0), -1);
    cr_assert_eq(rm_name_index_add(&x, "b", 1), -1);
    cr_assert_eq(rm_name_index_add(&x, "a", 2), 0, "a name already there gives its index");
    cr_assert_eq(rm_name_index_add(&x, "", 3), -1, "the empty name is a name");
    cr_assert_eq(rm_name_index_find(&x, "a"), 0, "and keeps it");
    cr_assert_eq(rm_name_index_find(&x, "b"), 1);
    cr_assert_eq(rm_name_index_find(&x, ""), 3);
    cr_assert_eq(rm_name_index_find(&x, "ab"), -1);
    rm_name_index_free(&x);
    cr_assert_null(x.slots);
    rm_name_index_free(&x); /* twice is harmless */
}

/* As many names as it was made for, sharing long prefixes as repeat names
 * do: every one is found, at its own index, whatever collides. */
Test(name_index, full_with_similar_names)
{
    enum { N = 20000 };
    char(*names)[32] = malloc(N * sizeof *names);
    cr_assert_not_null(names);
    rm_name_index x;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_name_index_init(&x, N, "test", &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "layer4.%d.relu1", i);
        cr_assert_eq(rm_name_index_add(&x, names[i], i), -1);
    }
    for (int i = 0; i < N; i++) cr_assert_eq(rm_name_index_find(&x, names[i]), i);
    cr_assert_eq(rm_name_index_find(&x, "layer4.20000.relu1"), -1);
    cr_assert_eq(rm_name_index_add(&x, names[N / 2], -7), N / 2);
    rm_name_index_free(&x);
    free(names);
}
