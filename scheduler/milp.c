/* milp: being written. */
