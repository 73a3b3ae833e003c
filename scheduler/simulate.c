/* simulate: being written. */
