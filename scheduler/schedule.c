/* schedule: being written. */
