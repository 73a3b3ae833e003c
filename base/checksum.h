/* The two checksums remat's readers verify: CRC-32 (snapshot files, PNG
 * chunks) and Adler-32 (the zlib streams inside PNGs). One implementation of
 * each, so every format checks with the same, tested code. */
#ifndef REMAT_CHECKSUM_H
#define REMAT_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320: zlib's, PNG's and the
 * snapshot format's) of n bytes, continuing from crc (0 to start). */
uint32_t rm_crc32(uint32_t crc, const void *data, size_t n);

/* Adler-32 (RFC 1950, zlib's trailer) of n bytes, continuing from adler (1 to
 * start). */
uint32_t rm_adler32(uint32_t adler, const void *data, size_t n);

#endif
