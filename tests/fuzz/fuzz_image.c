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
 * limit checks are the same code whatever the value). */
#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"
#include "harnesses.h"

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
        rm_fuzz_write(path, sizeof path, rel, data, size);
        rc = rm_dataset_image_folder_open(&ds, root, &o, &e);
    } else {
        size_t len = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
        data += size >= 2 ? 2 : size, size -= size >= 2 ? 2 : size;
        if (len > size) len = size;
        snprintf(rel, sizeof rel, "root/images/x.%s", ext[(mode >> 2) & 3]);
        rm_fuzz_write(path, sizeof path, rel, data, len);
        snprintf(rel, sizeof rel, "root/masks/x.%s", mext[(mode >> 6) & 3]);
        rm_fuzz_write(path, sizeof path, rel, data + len, size - len);
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
