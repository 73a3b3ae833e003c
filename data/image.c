/* The image pipeline shared by image folders and segmentation pairs:
 * stb_image decoding with the dimensions bounded before and after decoding
 * (stb_image is not hardened against hostile headers), and a preallocated
 * bilinear cover-resize + center-crop. The resampler is ours rather than
 * stb_image_resize so that it allocates nothing per image and its geometry is
 * a documented formula the tests check (exactly where no interpolation happens). */
#include "data_util.h"

#include "checksum.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* stb_image 2.27 checks neither a PNG's chunk CRCs nor the Adler-32 that
 * ends its zlib stream, so a PNG corrupted on disk decoded to wrong pixels
 * without an error. The CRCs are checked before stb_image sees the file
 * (png_walk); the Adler-32 needs the inflated bytes, which only exist inside
 * stb_image's PNG reader, between inflating and unfiltering. So its single
 * call of stbi__create_png_image (the unfiltering), made with the reader's
 * state z, is redirected to png_adler_hook, which checks the Adler-32 and
 * then calls the original, renamed stbi__create_png_image_checked. Inflating
 * a second time to get the bytes would cost about half a decode; this costs
 * one pass over them.
 * The macro pastes its first argument's first token onto RM_STBI_PNG_: the
 * definition's "stbi__png *a" selects the renamed definition, the call's "z"
 * the hook. A stb_image whose code differs here fails to compile (or, at the
 * least, the Adler-32 tests in tests/data/test_image_checks.c fail) rather
 * than going unchecked. */
static int png_adler_hook(void *z, unsigned char *data, uint32_t len, int out_n, int depth, int color, int interlace);
#define stbi__create_png_image(first, ...) RM_STBI_PNG_##first, __VA_ARGS__)
#define RM_STBI_PNG_stbi__png stbi__create_png_image_checked(stbi__png
#define RM_STBI_PNG_z png_adler_hook((void *)z

/* The only stb_image implementation in remat (so nothing may also link
 * Debian's libstb, which defines the same symbols). Not STB_IMAGE_STATIC:
 * GCC's "declared static but never defined" for its unconditional
 * declarations cannot be silenced around the include. Only the formats
 * data_is_image_name accepts are compiled in, which keeps the attack surface
 * small: PNM is left out because 2.27's 16-bit PNM path reads out of bounds
 * (nothings/stb#1166), GIF and HDR because they have had the most bugs. */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_LINEAR
#define STBI_FAILURE_USERMSG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

void rm_image_options_default(rm_image_options *o, int c, int h, int w)
{
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, std[3] = {0.229f, 0.224f, 0.225f};
    memset(o, 0, sizeof *o);
    o->c = c, o->h = h, o->w = w;
    for (int k = 0; k < 3; k++) {
        /* One channel is stb_image's luma of RGB, so it gets the average
         * of the three statistics. */
        o->mean[k] = c == 1 ? 0.449f : mean[k];
        o->std[k] = c == 1 ? 0.226f : std[k];
    }
    o->max_pixels = RM_IMAGE_MAX_PIXELS;
}

int data_image_options_resolve(rm_image_options *dst, const rm_image_options *src, const char *root, rm_err *e)
{
    if (!src) return rm_errorf(e, RM_ERR_INVALID, "%s: no image options given", root);
    *dst = *src;
    if (dst->c != 1 && dst->c != 3)
        return rm_errorf(e, RM_ERR_INVALID, "%s: images can be loaded with 1 or 3 channels, not %d", root, dst->c);
    if (dst->h < 1 || dst->w < 1 || dst->h > RM_IMAGE_MAX_SIDE || dst->w > RM_IMAGE_MAX_SIDE)
        return rm_errorf(e, RM_ERR_INVALID, "%s: input size %dx%d must be 1 to %d pixels a side", root, dst->h, dst->w,
                         RM_IMAGE_MAX_SIDE);
    for (int k = 0; k < dst->c; k++)
        if (!(dst->std[k] > 0) || !isfinite(dst->std[k]) || !isfinite(dst->mean[k]))
            return rm_errorf(e, RM_ERR_INVALID, "%s: channel %d has mean %g, std %g; need finite values, std > 0", root,
                             k, (double)dst->mean[k], (double)dst->std[k]);
    if (dst->max_pixels <= 0) dst->max_pixels = RM_IMAGE_MAX_PIXELS;
    return RM_OK;
}

/* stb_image 2.27 trusts the symbol counts of a JPEG Huffman table (DHT):
 * counts summing past 256 overflow its fixed tables (nothings/stb#1289, fixed
 * upstream after 2.27, which is what Debian ships). So every DHT segment is
 * checked here before stb_image sees the file: at most 256 symbols, and
 * counts that fit the code space of their lengths. So is every scan header
 * (SOS): the tables it uses must have been defined (jpeg_check_sos). The
 * scan walks the marker segments, skipping entropy-coded data (where 0xFF is
 * followed by 0x00 or a restart marker), because progressive JPEGs define
 * tables between scans. With until_sof it stops at the frame header, which
 * is as far as stbi_info reads. Returns NULL when the tables are sound (or
 * the data is not a JPEG), else what is wrong. */
typedef struct byte_reader {
    const unsigned char *buf;
    size_t len, pos;
    FILE *fp;
} byte_reader;

static int rd_byte(byte_reader *r)
{
    if (r->fp) return getc(r->fp);
    return r->pos < r->len ? r->buf[r->pos++] : EOF;
}

static int rd_skip(byte_reader *r, long n)
{
    if (r->fp) return fseek(r->fp, n, SEEK_CUR) == 0 ? 0 : -1;
    if ((size_t)n > r->len - r->pos) return -1;
    r->pos += (size_t)n;
    return 0;
}

/* One DHT segment; each table it defines is added to *defined (bit 4 x
 * class + id: DC 0-3, then AC 0-3). */
static const char *jpeg_check_dht(byte_reader *r, long len, unsigned *defined)
{
    while (len > 0) {
        if (len < 17) return "truncated Huffman table";
        int q = rd_byte(r);
        if (q == EOF) return "truncated Huffman table";
        if ((q >> 4) > 1 || (q & 15) > 3) return "bad Huffman table id";
        *defined |= 1u << ((q >> 4) * 4 + (q & 15));
        long n = 0, code = 0;
        for (int j = 1; j <= 16; j++) {
            int count = rd_byte(r);
            if (count == EOF) return "truncated Huffman table";
            n += count;
            code += count;
            if (code > (1L << j)) return "Huffman code lengths overflow the code space";
            code <<= 1;
        }
        if (n > 256) return "Huffman table with more than 256 symbols";
        len -= 17 + n;
        if (len < 0 || rd_skip(r, n)) return "truncated Huffman table";
    }
    return NULL;
}

/* stb_image 2.27 does not check that the Huffman tables a scan selects were
 * defined: it decodes with whatever its tables hold, and they are malloc'ed,
 * not cleared, so what was left in that memory made it read outside them
 * (found by fuzzing: tests/fuzz/crashes/image; upstream clears the memory
 * since 2.28, nothings/stb#1297). So every table a scan will use must have
 * been defined before it: a sequential frame's scans use the DC and AC tables
 * of each of their components; a progressive frame's first DC scans (Ss = 0,
 * Ah = 0) use the DC tables and its AC scans (Ss > 0) the AC tables, and
 * nothing else (DC refinement reads raw bits). progressive is -1 before the
 * frame header (stb_image refuses such a scan anyway). */
static const char *jpeg_check_sos(byte_reader *r, long len, unsigned defined, int progressive)
{
    int ns = rd_byte(r);
    if (ns == EOF) return "truncated scan header";
    if (ns < 1 || ns > 4 || len != 4 + 2L * ns) return "bad scan header";
    int sel[4];
    for (int k = 0; k < ns; k++) {
        int id = rd_byte(r);
        sel[k] = rd_byte(r);
        if (id == EOF || sel[k] == EOF) return "truncated scan header";
    }
    int ss = rd_byte(r), se = rd_byte(r), a = rd_byte(r);
    if (ss == EOF || se == EOF || a == EOF) return "truncated scan header";
    int uses_dc = progressive != 1 || (ss == 0 && a >> 4 == 0), uses_ac = progressive != 1 || ss > 0;
    for (int k = 0; k < ns; k++) {
        int dc = sel[k] >> 4, ac = sel[k] & 15;
        if (dc > 3 || ac > 3) return "bad Huffman table selector";
        if (uses_dc && !(defined >> dc & 1)) return "a scan uses a DC Huffman table that was never defined";
        if (uses_ac && !(defined >> (4 + ac) & 1)) return "a scan uses an AC Huffman table that was never defined";
    }
    return NULL;
}

static const char *jpeg_check_tables(byte_reader *r, int until_sof)
{
    /* stb_image skips fill bytes before any marker, the start of image
     * included, so FF FF D8 is a JPEG to it and must be one here (found by
     * fuzzing: such a file's tables went unchecked, tests/fuzz/crashes/image). */
    if (rd_byte(r) != 0xFF) return NULL; /* not a JPEG: nothing to check */
    int soi;
    do soi = rd_byte(r);
    while (soi == 0xFF);
    if (soi != 0xD8) return NULL;
    unsigned defined = 0; /* the Huffman tables defined so far */
    int progressive = -1; /* the frame's kind, once its header is seen */
    for (;;) {
        int c = rd_byte(r);
        if (c == EOF) return NULL; /* truncation is stb_image's to report */
        if (c != 0xFF) continue;   /* entropy-coded data */
        int m;
        do m = rd_byte(r);
        while (m == 0xFF); /* fill bytes */
        if (m == EOF) return NULL;
        if (m == 0x00 || (m >= 0xD0 && m <= 0xD7) || m == 0x01) continue; /* stuffed byte, restart, TEM */
        if (m == 0xD9) return NULL;                                       /* end of image */
        int hi = rd_byte(r), lo = rd_byte(r);
        if (hi == EOF || lo == EOF) return NULL;
        long len = (long)(hi << 8 | lo) - 2;
        if (len < 0) return "bad marker segment length";
        if (m == 0xC4 || m == 0xDA) {
            const char *why =
                m == 0xC4 ? jpeg_check_dht(r, len, &defined) : jpeg_check_sos(r, len, defined, progressive);
            if (why) return why;
            continue;
        }
        int sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
        if (sof && until_sof) return NULL;
        if (progressive < 0 && m >= 0xC0 && m <= 0xC2) progressive = m == 0xC2; /* the frames stb_image reads */
        if (rd_skip(r, len)) return NULL;
    }
}

static int is_png(const unsigned char *buf, size_t len)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return len >= 8 && memcmp(buf, sig, 8) == 0;
}

/* What png_walk found. */
typedef struct png_info {
    uint64_t idat_bytes;   /* the zlib stream: all IDAT data, concatenated */
    unsigned char tail[4]; /* its last 4 bytes, the Adler-32 */
    int cgbi;              /* Apple's CgBI variant: raw deflate, no Adler-32 */
    char why[64];          /* what is wrong, when png_walk fails */
} png_info;

/* A chunk type for messages: its four letters, or hex when it has others
 * (hostile files are not text). */
static void chunk_name(char out[16], const unsigned char *t)
{
    int letters = 1;
    for (int i = 0; i < 4; i++) letters &= (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= 'a' && t[i] <= 'z');
    if (letters)
        snprintf(out, 16, "%c%c%c%c", t[0], t[1], t[2], t[3]);
    else
        snprintf(out, 16, "0x%08x", (unsigned)data_be32(t));
}

/* Walks a PNG's chunks (buf starts with the signature) up to IEND. Every
 * chunk must lie inside the data, length, type, payload and CRC: stb_image
 * 2.27 grows its IDAT buffer to the length a chunk header claims before it
 * reads the chunk, so a few hundred bytes whose IDAT claimed 2 GiB made it
 * allocate 2 GiB (found by fuzzing, tests/fuzz/crashes/image), and a PNG cut
 * short is corrupt anyway. With check_crc every chunk's CRC-32 (over type and
 * payload) must match, which stb_image never checks. Returns 0 at IEND, else
 * -1 with pi->why. */
static int png_walk(const unsigned char *buf, size_t len, int check_crc, png_info *pi)
{
    memset(pi, 0, sizeof *pi);
    char name[16];
    for (size_t pos = 8;;) {
        if (len - pos < 12) {
            snprintf(pi->why, sizeof pi->why, "truncated: %s", pos == len ? "no IEND chunk" : "chunk header cut short");
            return -1;
        }
        uint32_t n = data_be32(buf + pos);
        const unsigned char *type = buf + pos + 4, *data = type + 4;
        chunk_name(name, type);
        if (n > len - pos - 12) {
            snprintf(pi->why, sizeof pi->why, "truncated: chunk %s longer than the file", name);
            return -1;
        }
        if (check_crc && rm_crc32(0, type, 4 + (size_t)n) != data_be32(data + n)) {
            snprintf(pi->why, sizeof pi->why, "chunk %s CRC mismatch", name);
            return -1;
        }
        if (memcmp(type, "IDAT", 4) == 0) {
            /* Keep the stream's last 4 bytes, which may span chunks. */
            uint32_t k = n < 4 ? n : 4;
            memmove(pi->tail, pi->tail + k, 4 - k);
            memcpy(pi->tail + 4 - k, data + n - k, k);
            pi->idat_bytes += n;
        }
        if (memcmp(type, "CgBI", 4) == 0) pi->cgbi = 1;
        if (memcmp(type, "IEND", 4) == 0) return 0;
        pos += 12 + (size_t)n;
    }
}

/* Called by stb_image's PNG reader between inflating the image data and
 * unfiltering it (see the include above): the inflated bytes must match the
 * Adler-32 that ends the zlib stream. image.c decodes from memory only, so
 * the whole file is at img_buffer_original. CgBI files (raw deflate) have no
 * Adler-32 to check. */
static int png_adler_hook(void *zv, unsigned char *data, uint32_t len, int out_n, int depth, int color, int interlace)
{
    stbi__png *z = zv;
    stbi__context *s = z->s;
    if (s->io.read) return stbi__err("PNG stream", "PNG Adler-32 check needs the file in memory");
    png_info pi;
    if (png_walk(s->img_buffer_original, (size_t)(s->img_buffer_original_end - s->img_buffer_original), 0, &pi))
        return stbi__err("PNG walk", "PNG chunks unreadable");
    if (!pi.cgbi && (pi.idat_bytes < 6 || rm_adler32(1, data, len) != data_be32(pi.tail)))
        return stbi__err("PNG Adler-32", "PNG zlib data fails its Adler-32 check");
    return stbi__create_png_image_checked(z, data, len, out_n, depth, color, interlace);
}

/* stb_image's BMP reader returns zeros for bytes past the end of the file,
 * so a BMP cut short decoded with black rows and no error. For the
 * uncompressed layouts it reads (BI_RGB, BI_BITFIELDS) the pixel rows must
 * lie inside the file: |h| rows of w * bpp bits padded to 4 bytes from the
 * data offset, the last row's padding excepted (some writers omit it). w, h
 * are the checked header's. Returns NULL when they do (or this is no BMP
 * stb_image would read), else what is wrong. */
static const char *bmp_check_size(const unsigned char *buf, size_t len, int w, int h)
{
    if (len < 30 || buf[0] != 'B' || buf[1] != 'M') return NULL;
    uint32_t offset = (uint32_t)buf[10] | (uint32_t)buf[11] << 8 | (uint32_t)buf[12] << 16 | (uint32_t)buf[13] << 24;
    uint32_t hsz = (uint32_t)buf[14] | (uint32_t)buf[15] << 8 | (uint32_t)buf[16] << 16 | (uint32_t)buf[17] << 24;
    size_t at = hsz == 12 ? 24 : 28; /* bits per pixel: after w, h (16 or 32 bits each) and the planes */
    int bpp = buf[at] | buf[at + 1] << 8;
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) return NULL; /* stb_image refuses */
    uint64_t row = ((uint64_t)w * (uint64_t)bpp + 7) / 8, stride = (row + 3) / 4 * 4;
    uint64_t need = (uint64_t)offset + stride * (uint64_t)(h - 1) + row;
    return need > len ? "BMP pixel rows run past the end of the file (truncated)" : NULL;
}

/* stb_image's info gives a BMP's height as stored: negative for a top-down
 * BMP (rows first to last), which is valid and which its loader flips. Only
 * a BMP's height can be negative (PNG and JPEG sizes are unsigned and
 * bounded), so the absolute value is the image's height. */
static int stored_height(int h)
{
    return h < 0 && h > INT_MIN ? -h : h;
}

static int check_dims(int w, int h, int64_t max_pixels, const char *path, rm_err *e)
{
    if (w <= 0 || h <= 0) return rm_errorf(e, RM_ERR_PARSE, "%s: image header gives an empty size %dx%d", path, w, h);
    if (w > RM_IMAGE_MAX_SIDE || h > RM_IMAGE_MAX_SIDE)
        return rm_errorf(e, RM_ERR_PARSE, "%s: image header gives %dx%d; sides above %d pixels are refused", path, w, h,
                         RM_IMAGE_MAX_SIDE);
    if ((int64_t)w * h > max_pixels)
        return rm_errorf(e, RM_ERR_PARSE, "%s: image header gives %dx%d = %lld pixels, above the limit of %lld", path,
                         w, h, (long long)w * h, (long long)max_pixels);
    return RM_OK;
}

int data_image_probe(data_image_header *hd, const char *path, int64_t max_pixels, rm_err *e)
{
    FILE *fp;
    int64_t size;
    int rc = data_open(&fp, &size, path, e);
    if (rc) return rc;
    if (size == 0) {
        fclose(fp);
        return rm_errorf(e, RM_ERR_PARSE, "%s: empty file", path);
    }
    if (size > INT_MAX) { /* stb_image takes an int length */
        fclose(fp);
        return rm_errorf(e, RM_ERR_PARSE, "%s: %lld bytes; image files above 2 GiB are refused", path, (long long)size);
    }
    byte_reader rd = {NULL, 0, 0, fp};
    const char *why = jpeg_check_tables(&rd, 1);
    if (why || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt JPEG header: %s", path, why ? why : "cannot rewind");
    }
    int w, h, comp;
    if (!stbi_info_from_file(fp, &w, &h, &comp)) {
        fclose(fp);
        return rm_errorf(e, RM_ERR_PARSE, "%s: not a readable image (corrupt or unsupported header: %s)", path,
                         stbi_failure_reason());
    }
    int is16 = stbi_is_16_bit_from_file(fp);
    fclose(fp);
    h = stored_height(h);
    rc = check_dims(w, h, max_pixels, path, e);
    if (rc) return rc;
    hd->w = w;
    hd->h = h;
    hd->comp = comp;
    hd->is16 = is16;
    hd->file_size = size;
    return RM_OK;
}

int data_image_decode(void **pixels, const unsigned char *buf, size_t len, int channels, int want16,
                      const data_image_header *hd, int64_t max_pixels, const char *path, rm_err *e)
{
    *pixels = NULL;
    byte_reader rd = {buf, len, 0, NULL};
    const char *why = jpeg_check_tables(&rd, 0);
    if (why) return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt JPEG: %s", path, why);
    png_info pi;
    if (is_png(buf, len) && png_walk(buf, len, 1, &pi))
        return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt image: PNG %s", path, pi.why);
    int w, h, comp;
    /* Checked again on the bytes actually decoded: the file may have been
     * replaced since open, and stb_image allocates from the header. */
    if (!stbi_info_from_memory(buf, (int)len, &w, &h, &comp))
        return rm_errorf(e, RM_ERR_PARSE, "%s: not a readable image (corrupt or unsupported header: %s)", path,
                         stbi_failure_reason());
    h = stored_height(h);
    int rc = check_dims(w, h, max_pixels, path, e);
    if (rc) return rc;
    if ((why = bmp_check_size(buf, len, w, h))) return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt image: %s", path, why);
    if (w != hd->w || h != hd->h)
        return rm_errorf(e, RM_ERR_IO, "%s: image is now %dx%d, was %dx%d when the dataset was opened", path, w, h,
                         hd->w, hd->h);
    int x = 0, y = 0, n = 0;
    void *px = want16 ? (void *)stbi_load_16_from_memory(buf, (int)len, &x, &y, &n, channels)
                      : (void *)stbi_load_from_memory(buf, (int)len, &x, &y, &n, channels);
    if (!px) return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt image: %s", path, stbi_failure_reason());
    if (x != w || y != h) {
        stbi_image_free(px);
        return rm_errorf(e, RM_ERR_PARSE, "%s: decoded %dx%d pixels but the header says %dx%d", path, x, y, w, h);
    }
    *pixels = px;
    return RM_OK;
}

void data_image_release(void *pixels)
{
    stbi_image_free(pixels);
}

data_crop data_crop_cover(int w, int h, int out_w, int out_h)
{
    data_crop c;
    /* Compare out_w/w with out_h/h in integers: the binding side keeps its
     * full extent exactly, the other is cut symmetrically. */
    if ((int64_t)out_w * h >= (int64_t)out_h * w) {
        c.cw = w;
        c.ch = (double)out_h * w / out_w;
    } else {
        c.ch = h;
        c.cw = (double)out_w * h / out_h;
    }
    c.x0 = (w - c.cw) / 2;
    c.y0 = (h - c.ch) / 2;
    return c;
}

/* Upper bound on the input pixels one output pixel reads along an axis. */
static int max_taps(int max_in, int out)
{
    double scale = (double)max_in / out;
    if (scale < 1) scale = 1;
    return (int)ceil(2 * scale) + 2;
}

int data_resampler_init(data_resampler *r, int max_w, int max_h, int out_w, int out_h, int c, rm_err *e)
{
    memset(r, 0, sizeof *r);
    r->out_w = out_w, r->out_h = out_h, r->c = c, r->max_w = max_w, r->max_h = max_h;
    r->taps_x = max_taps(max_w, out_w);
    r->taps_y = max_taps(max_h, out_h);
    r->x_start = malloc((size_t)out_w * sizeof *r->x_start);
    r->x_count = malloc((size_t)out_w * sizeof *r->x_count);
    r->x_weight = malloc((size_t)out_w * (size_t)r->taps_x * sizeof *r->x_weight);
    r->y_start = malloc((size_t)out_h * sizeof *r->y_start);
    r->y_count = malloc((size_t)out_h * sizeof *r->y_count);
    r->y_weight = malloc((size_t)out_h * (size_t)r->taps_y * sizeof *r->y_weight);
    r->tmp = malloc((size_t)c * (size_t)max_h * (size_t)out_w * sizeof *r->tmp);
    r->nn_x = malloc((size_t)out_w * sizeof *r->nn_x);
    r->nn_y = malloc((size_t)out_h * sizeof *r->nn_y);
    if (!r->x_start || !r->x_count || !r->x_weight || !r->y_start || !r->y_count || !r->y_weight || !r->tmp ||
        !r->nn_x || !r->nn_y) {
        data_resampler_destroy(r);
        return rm_errorf(e, RM_ERR_NOMEM, "image resampler: out of memory for %dx%d inputs", max_w, max_h);
    }
    return RM_OK;
}

void data_resampler_destroy(data_resampler *r)
{
    free(r->x_start), free(r->x_count), free(r->x_weight);
    free(r->y_start), free(r->y_count), free(r->y_weight);
    free(r->tmp), free(r->nn_x), free(r->nn_y);
    memset(r, 0, sizeof *r);
}

/* Triangle-filter weights of the out output pixels along one axis, reading
 * the source interval [r0, r0 + len) of an axis of `in` pixels. Output pixel
 * o is centred at r0 + (o + 0.5) * len / out; the triangle's half-width is one
 * source pixel when enlarging (plain bilinear interpolation between the two
 * nearest pixel centres) and len/out when shrinking (so every source pixel
 * contributes, as PIL and torchvision's antialiased resize do). Source pixels
 * outside the image get no weight and the rest are renormalized. */
static void axis_weights(int *start, int *count, float *weight, int taps, int out, int in, double r0, double len)
{
    double scale = len / out, support = scale > 1 ? scale : 1;
    for (int o = 0; o < out; o++) {
        double center = r0 + (o + 0.5) * scale;
        int lo = (int)floor(center - support), hi = (int)ceil(center + support);
        if (lo < 0) lo = 0;
        if (hi > in - 1) hi = in - 1;
        /* Two passes (sum, then normalized weights) instead of a scratch
         * array: taps can reach thousands when shrinking a huge image. */
        int first = -1, k = 0;
        double sum = 0;
        for (int i = lo; i <= hi && k < taps; i++) {
            double wgt = 1 - fabs(i + 0.5 - center) / support;
            if (wgt <= 0) {
                if (first >= 0) break; /* the positive weights are contiguous */
                continue;
            }
            if (first < 0) first = i;
            k++;
            sum += wgt;
        }
        start[o] = first;
        count[o] = k;
        for (int j = 0; j < k; j++)
            weight[(size_t)o * taps + j] = (float)((1 - fabs(first + j + 0.5 - center) / support) / sum);
    }
}

void data_resample_bilinear(data_resampler *r, float *out, const uint8_t *in, int w, int h, const float *mean,
                            const float *std)
{
    const int ow = r->out_w, oh = r->out_h, c = r->c;
    data_crop cr = data_crop_cover(w, h, ow, oh);
    axis_weights(r->x_start, r->x_count, r->x_weight, r->taps_x, ow, w, cr.x0, cr.cw);
    axis_weights(r->y_start, r->y_count, r->y_weight, r->taps_y, oh, h, cr.y0, cr.ch);
    /* Horizontal pass over only the source rows the vertical pass reads. */
    int ylo = r->y_start[0], yhi = r->y_start[oh - 1] + r->y_count[oh - 1] - 1;
    int rows = yhi - ylo + 1;
    for (int k = 0; k < c; k++)
        for (int y = 0; y < rows; y++) {
            const uint8_t *row = in + (size_t)(ylo + y) * (size_t)w * (size_t)c;
            float *dst = r->tmp + ((size_t)k * (size_t)rows + (size_t)y) * (size_t)ow;
            for (int ox = 0; ox < ow; ox++) {
                const float *wt = r->x_weight + (size_t)ox * (size_t)r->taps_x;
                const uint8_t *src = row + (size_t)r->x_start[ox] * (size_t)c + (size_t)k;
                float acc = 0;
                for (int t = 0; t < r->x_count[ox]; t++) acc += wt[t] * (float)src[(size_t)t * (size_t)c];
                dst[ox] = acc;
            }
        }
    for (int k = 0; k < c; k++) {
        const float *plane = r->tmp + (size_t)k * (size_t)rows * (size_t)ow;
        for (int oy = 0; oy < oh; oy++) {
            const float *wt = r->y_weight + (size_t)oy * (size_t)r->taps_y;
            const float *src = plane + (size_t)(r->y_start[oy] - ylo) * (size_t)ow;
            float *dst = out + ((size_t)k * (size_t)oh + (size_t)oy) * (size_t)ow;
            for (int ox = 0; ox < ow; ox++) {
                float acc = 0;
                for (int t = 0; t < r->y_count[oy]; t++) acc += wt[t] * src[(size_t)t * (size_t)ow + (size_t)ox];
                dst[ox] = (acc / 255.0f - mean[k]) / std[k];
            }
        }
    }
}

static void nearest_axis(int *map, int out, int in, double r0, double len)
{
    for (int o = 0; o < out; o++) {
        int i = (int)floor(r0 + (o + 0.5) * len / out);
        map[o] = i < 0 ? 0 : i >= in ? in - 1 : i;
    }
}

void data_resample_nearest_map(data_resampler *r, int w, int h)
{
    data_crop cr = data_crop_cover(w, h, r->out_w, r->out_h);
    nearest_axis(r->nn_x, r->out_w, w, cr.x0, cr.cw);
    nearest_axis(r->nn_y, r->out_h, h, cr.y0, cr.ch);
}
