/* checkpoint_all: being written. */
