/* Test fixtures for the data loaders: temporary folders and file writers.
 * The one stb_image_write implementation of the test binary lives here. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "data_fixtures.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checksum.h"
#include "cli_fixture.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

void fx_tmpdir(char dir[FX_PATH])
{
    snprintf(dir, FX_PATH, "/tmp/remat_data_XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void fx_rmtree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fx_path(char out[FX_PATH], const char *dir, const char *rel)
{
    snprintf(out, FX_PATH, "%s/%s", dir, rel);
    return out;
}

/* mkdir -p of every folder in dir/rel up to its last '/' (or all of it). */
static void make_parents(const char *dir, const char *rel, int include_last)
{
    char p[FX_PATH];
    fx_path(p, dir, rel);
    size_t start = strlen(dir) + 1, n = strlen(p);
    for (size_t i = start; i <= n; i++) {
        if (p[i] == '/' || (include_last && p[i] == '\0')) {
            char c = p[i];
            p[i] = '\0';
            mkdir(p, 0755);
            p[i] = c;
        }
    }
}

void fx_mkdir(const char *dir, const char *rel)
{
    make_parents(dir, rel, 1);
}

void fx_write(const char *dir, const char *rel, const void *bytes, size_t n)
{
    make_parents(dir, rel, 0);
    char p[FX_PATH];
    FILE *fp = fopen(fx_path(p, dir, rel), "wb");
    cr_assert_not_null(fp, "cannot write %s", p);
    if (n) cr_assert_eq(fwrite(bytes, 1, n, fp), n);
    fclose(fp);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

void fx_write_idx3(const char *dir, const char *rel, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols,
                   const uint8_t *pixels)
{
    size_t body = (size_t)n * rows * cols;
    uint8_t *buf = malloc(16 + body);
    put_be32(buf, magic), put_be32(buf + 4, n), put_be32(buf + 8, rows), put_be32(buf + 12, cols);
    if (body) memcpy(buf + 16, pixels, body);
    fx_write(dir, rel, buf, 16 + body);
    free(buf);
}

void fx_write_idx1(const char *dir, const char *rel, uint32_t magic, uint32_t n, const uint8_t *labels)
{
    uint8_t *buf = malloc(8 + (size_t)n);
    put_be32(buf, magic), put_be32(buf + 4, n);
    if (n) memcpy(buf + 8, labels, n);
    fx_write(dir, rel, buf, 8 + (size_t)n);
    free(buf);
}

void fx_write_png(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels)
{
    make_parents(dir, rel, 0);
    char p[FX_PATH];
    cr_assert(stbi_write_png(fx_path(p, dir, rel), w, h, comp, pixels, w * comp), "cannot write %s", p);
}

void fx_write_jpg(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels)
{
    make_parents(dir, rel, 0);
    char p[FX_PATH];
    cr_assert(stbi_write_jpg(fx_path(p, dir, rel), w, h, comp, pixels, 100), "cannot write %s", p);
}

void fx_write_bmp(const char *dir, const char *rel, int w, int h, int comp, const uint8_t *pixels)
{
    make_parents(dir, rel, 0);
    char p[FX_PATH];
    cr_assert(stbi_write_bmp(fx_path(p, dir, rel), w, h, comp, pixels), "cannot write %s", p);
}

/* Appends a PNG chunk (length, type, data, CRC of type + data). */
static size_t put_chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t n)
{
    put_be32(out, n);
    memcpy(out + 4, type, 4);
    if (n) memcpy(out + 8, data, n);
    put_be32(out + 8 + n, rm_crc32(0, out + 4, 4 + (size_t)n));
    return 12 + (size_t)n;
}

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static void ihdr(uint8_t d[13], uint32_t w, uint32_t h, uint8_t depth, uint8_t color)
{
    put_be32(d, w), put_be32(d + 4, h);
    d[8] = depth, d[9] = color, d[10] = 0, d[11] = 0, d[12] = 0;
}

void fx_write_png16(const char *dir, const char *rel, int w, int h, const uint16_t *values)
{
    /* Raw scanlines: filter byte 0, then big-endian 16-bit samples. */
    size_t row = 1 + 2 * (size_t)w, raw_n = row * (size_t)h;
    uint8_t *raw = malloc(raw_n);
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * row] = 0;
        for (int x = 0; x < w; x++) {
            uint16_t v = values[(size_t)y * (size_t)w + (size_t)x];
            raw[(size_t)y * row + 1 + 2 * (size_t)x] = (uint8_t)(v >> 8);
            raw[(size_t)y * row + 2 + 2 * (size_t)x] = (uint8_t)v;
        }
    }
    /* zlib: header, stored deflate blocks, Adler-32. */
    size_t blocks = raw_n / 65535 + 1, z_n = 2 + raw_n + 5 * blocks + 4, at = 0;
    uint8_t *z = malloc(z_n);
    z[at++] = 0x78, z[at++] = 0x01;
    size_t left = raw_n, pos = 0;
    do {
        uint16_t len = (uint16_t)(left > 65535 ? 65535 : left);
        z[at++] = left <= 65535 ? 1 : 0;
        z[at++] = (uint8_t)len, z[at++] = (uint8_t)(len >> 8);
        z[at++] = (uint8_t)~len, z[at++] = (uint8_t)(~len >> 8);
        memcpy(z + at, raw + pos, len);
        at += len, pos += len, left -= len;
    } while (left > 0);
    put_be32(z + at, rm_adler32(1, raw, raw_n));
    at += 4;
    uint8_t *png = malloc(8 + 25 + 12 + at + 12), hd[13];
    size_t n = 0;
    memcpy(png, png_sig, 8), n = 8;
    ihdr(hd, (uint32_t)w, (uint32_t)h, 16, 0);
    n += put_chunk(png + n, "IHDR", hd, 13);
    n += put_chunk(png + n, "IDAT", z, (uint32_t)at);
    n += put_chunk(png + n, "IEND", NULL, 0);
    fx_write(dir, rel, png, n);
    free(raw), free(z), free(png);
}

void fx_write_png_header_only(const char *dir, const char *rel, uint32_t w, uint32_t h)
{
    uint8_t png[8 + 25], hd[13];
    memcpy(png, png_sig, 8);
    ihdr(hd, w, h, 8, 2);
    size_t n = 8 + put_chunk(png + 8, "IHDR", hd, 13);
    fx_write(dir, rel, png, n);
}

uint8_t *fx_read(const char *path, size_t *n)
{
    uint8_t *buf = cf_read(path, n);
    cr_assert_not_null(buf, "cannot read %s", path);
    return buf;
}
