/* Fuzz harness: image and mask decoding (data/image.c's bounded stb_image
 * pipeline, through the public openers of data/image_folder.c and
 * data/segmentation.c). Opening reads every header; rm_dataset_validate then
 * decodes, resamples and (for masks) checks every pixel, which is where
 * stb_image meets the hostile bytes.
 *
 * Input: a mode byte, then the file(s).
 *   bit 0     0: image folder (root/cls/x.EXT); 1: segmentation pair
 *             (root/images/x.EXT + root/masks/x.MEXT, 4 classes), where two
 *             little-endian bytes give the image's length and the rest is
 *             the mask
 *   bit 1     model input channels: 1 or 3
 *   bits 2-3  EXT: png jpg bmp jpeg (stb_image sniffs the content; the
 *             name only decides which files are samples)
 *   bits 4-5  model input size: 4x4, 5x7, 16x16, 3x1
 *   bits 6-7  MEXT: png bmp jpg (a lossy mask, refused) png
 * The pixel limit is 2^18 (the default allows 64 Mi pixels, which would
 * make each oversized-but-legal header cost a huge allocation per run; the
 * limit checks are the same code whatever the value).
 *
 * A PNG's checksums are made right before it is written (png_fix_checksums):
 * the readers refuse a chunk whose CRC-32 or a zlib stream whose Adler-32 is
 * wrong, and a mutation almost never keeps them right, so without this
 * nearly every mutated PNG would stop at the checks and stb_image's chunk
 * parser, inflater and unfiltering would go unfuzzed. The checks themselves
 * are tested in tests/data/test_image_checks.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "dataset.h"
#include "harnesses.h"

/* stb_image's inflater, compiled into data/image.c; it returns malloc'ed
 * bytes. */
char *stbi_zlib_decode_malloc_guesssize_headerflag(const char *buffer, int len, int initial_size, int *outlen,
                                                   int parse_header);

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (24 - 8 * i));
}

/* When b is a PNG: the Adler-32 at the end of its IDAT data becomes that of
 * what the data inflates to (when it inflates), and every chunk that lies
 * inside b gets its right CRC. */
static void png_fix_checksums(uint8_t *b, size_t n)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n < 8 || memcmp(b, sig, 8) != 0) return;
    uint8_t *z = malloc(n);
    size_t zn = 0;
    if (!z) abort();
    for (size_t pos = 8; n - pos >= 12 && be32(b + pos) <= n - pos - 12; pos += 12 + (size_t)be32(b + pos))
        if (memcmp(b + pos + 4, "IDAT", 4) == 0) memcpy(z + zn, b + pos + 8, be32(b + pos)), zn += be32(b + pos);
    int outlen;
    char *out = zn >= 6 ? stbi_zlib_decode_malloc_guesssize_headerflag((char *)z, (int)zn, 4096, &outlen, 1) : NULL;
    if (out) {
        put_be32(z + zn - 4, rm_adler32(1, out, (size_t)outlen));
        free(out);
        /* Back into the chunks, which may split the trailer. */
        size_t at = 0;
        for (size_t pos = 8; n - pos >= 12 && be32(b + pos) <= n - pos - 12; pos += 12 + (size_t)be32(b + pos))
            if (memcmp(b + pos + 4, "IDAT", 4) == 0) memcpy(b + pos + 8, z + at, be32(b + pos)), at += be32(b + pos);
    }
    free(z);
    for (size_t pos = 8; n - pos >= 12 && be32(b + pos) <= n - pos - 12; pos += 12 + (size_t)be32(b + pos))
        put_be32(b + pos + 8 + be32(b + pos), rm_crc32(0, b + pos + 4, 4 + (size_t)be32(b + pos)));
}

/* Writes a file of the input, checksums fixed. */
static void write_fixed(char *path, size_t len, const char *rel, const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) abort();
    if (size) memcpy(copy, data, size);
    png_fix_checksums(copy, size);
    rm_fuzz_write(path, len, rel, copy, size);
    free(copy);
}

int rm_fuzz_image(const uint8_t *data, size_t size)
{
    if (size < 1) return RM_ERR_INVALID;
    static const char *const ext[4] = {"png", "jpg", "bmp", "jpeg"}, *const mext[4] = {"png", "bmp", "jpg", "png"};
    static const int sizes[4][2] = {{4, 4}, {5, 7}, {16, 16}, {3, 1}};
    const int mode = data[0], seg = mode & 1, channels = mode & 2 ? 3 : 1;
    data++, size--;
    rm_image_options o;
    rm_image_options_default(&o, channels, sizes[(mode >> 4) & 3][0], sizes[(mode >> 4) & 3][1]);
    o.max_pixels = 1 << 18;
    rm_fuzz_clear();
    char path[256], rel[64], root[256];
    snprintf(root, sizeof root, "%s/root", rm_fuzz_dir());
    rm_dataset *ds = NULL;
    rm_err e = {RM_OK, ""};
    int rc;
    if (!seg) {
        snprintf(rel, sizeof rel, "root/cls/x.%s", ext[(mode >> 2) & 3]);
        write_fixed(path, sizeof path, rel, data, size);
        rc = rm_dataset_image_folder_open(&ds, root, &o, &e);
    } else {
        size_t len = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
        data += size >= 2 ? 2 : size, size -= size >= 2 ? 2 : size;
        if (len > size) len = size;
        snprintf(rel, sizeof rel, "root/images/x.%s", ext[(mode >> 2) & 3]);
        write_fixed(path, sizeof path, rel, data, len);
        snprintf(rel, sizeof rel, "root/masks/x.%s", mext[(mode >> 6) & 3]);
        write_fixed(path, sizeof path, rel, data + len, size - len);
        rc = rm_dataset_segmentation_open(&ds, root, 4, &o, &e);
    }
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (ds) abort();
        return rc;
    }
    char line[512];
    rm_dataset_describe(ds, line, sizeof line);
    rm_err ve = {RM_OK, ""};
    rc = rm_dataset_validate(ds, &ve); /* a corrupt body is found here: still a normal error */
    rm_fuzz_check_err(rc, &ve);
    rm_dataset_free(ds);
    return rc;
}
