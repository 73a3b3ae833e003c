/* test_milp: being written. */
