/* Helpers for the data loader tests: a private temporary folder per test and
 * writers for the small files the tests build (raw bytes, idx, PNG through
 * stb_image_write, and a hand-made PNG writer for 16-bit and hostile
 * headers, which stb_image_write cannot produce). */
#ifndef REMAT_TEST_DATA_FIXTURES_H
#define REMAT_TEST_DATA_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#define FX_PATH 512

/* mkdtemp under /tmp; asserts on failure. */
void fx_tmpdir(char dir[FX_PATH]);
/* Removes dir and everything under it. */
void fx_rmtree(const char *dir);
/* out = dir "/" rel. */
const char *fx_path(char out[FX_PATH], const char *dir, const char *rel);
/* Creates dir/rel's parent folders and writes n bytes to it. */
void fx_write(const char *dir, const char *rel, const void *bytes, size_t n);
void fx_mkdir(const char *dir, const char *rel);
/* An idx3-ubyte file of n images rows x cols (pixels n*rows*cols) and an
 * idx1-ubyte file of n labels. */
void fx_write_idx3(const char *dir, const char *rel, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                   const uint8_t *pixels);
void fx_write_idx1(const char *dir, const char *rel, uint32_t magic, uint32_t n, const uint8_t *labels);
/* An 8-bit PNG (comp 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), interleaved rows. */
void fx_write_png(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels);
void fx_write_jpg(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels);
void fx_write_bmp(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels);
/* A 16-bit grayscale PNG, values row-major (written by hand, stored deflate). */
void fx_write_png16(const char *dir, const char *rel, int w, int h, const uint16_t *values);
/* A PNG with a valid signature and IHDR claiming w x h and nothing after. */
void fx_write_png_header_only(const char *dir, const char *rel, uint32_t w, uint32_t h);
/* Reads a file fully (malloc'd) and its size. */
uint8_t *fx_read(const char *path, size_t *n);

#endif
