/* problem: being written. */
