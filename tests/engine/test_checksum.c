/* CRC-32 and Adler-32: the standard check values, running values continued
 * across any split, and the table-driven / column-summed fast paths equal to
 * the plain definitions on every length and alignment around their block
 * sizes. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "checksum.h"

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1u ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static uint32_t adler_bytewise(const uint8_t *p, size_t n)
{
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < n; i++) a = (a + p[i]) % 65521u, b = (b + a) % 65521u;
    return b << 16 | a;
}

Test(checksum, check_values)
{
    cr_expect_eq(rm_crc32(0, "123456789", 9), 0xcbf43926u);
    cr_expect_eq(rm_adler32(1, "Wikipedia", 9), 0x11e60398u);
    cr_expect_eq(rm_crc32(0, "", 0), 0u);
    cr_expect_eq(rm_adler32(1, "", 0), 1u);
}

Test(checksum, fast_paths_match_the_definitions)
{
    /* All 0xFF is the worst case for the sums' overflow bounds. */
    const size_t n = 3 * 5552 + 100;
    uint8_t *buf = malloc(n + 8);
    for (int fill = 0; fill < 2; fill++) {
        for (size_t i = 0; i < n + 8; i++) buf[i] = fill ? 0xff : (uint8_t)(i * 2654435761u >> 13);
        static const size_t lens[] = {0,   1,    7,    8,    15,   16,   17,    31,
                                      255, 5551, 5552, 5553, 5567, 5568, 11104, 3 * 5552 + 100};
        for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
            for (size_t off = 0; off < 8; off += 3) {
                cr_expect_eq(rm_crc32(0, buf + off, lens[l]), crc_bitwise(buf + off, lens[l]), "crc len %zu", lens[l]);
                cr_expect_eq(rm_adler32(1, buf + off, lens[l]), adler_bytewise(buf + off, lens[l]), "adler len %zu",
                             lens[l]);
            }
        /* Continued from a running value, split anywhere. */
        for (size_t cut = 0; cut < n; cut += 1237) {
            cr_expect_eq(rm_crc32(rm_crc32(0, buf, cut), buf + cut, n - cut), crc_bitwise(buf, n));
            cr_expect_eq(rm_adler32(rm_adler32(1, buf, cut), buf + cut, n - cut), adler_bytewise(buf, n));
        }
    }
    free(buf);
}
