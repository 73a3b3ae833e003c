/* test_simulate: being written. */
