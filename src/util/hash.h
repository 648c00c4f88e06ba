/*
 * hash.h - the one byte-string hash of the tree (name registry, sink maps,
 * analyzer tables). Not cryptographic; fast on long names (kernel
 * signatures): word at a time, multiply/xorshift mixing, four words at
 * once from 64 bytes on.
 */
#ifndef TP_UTIL_HASH_H
#define TP_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Hash of the n bytes at p (p may be NULL when n == 0). */
uint64_t tpu_hash_bytes(const void *p, size_t n);

/* A cheap mark of n >= 1 bytes at p: their length and first, middle and
 * last 8 bytes. For caches of recent strings, checked byte for byte on a
 * hit (names repeat: it spares the hash and the probe of a large table). */
static inline uint64_t tpu_hash_mark(const char *p, size_t n)
{
    uint64_t a = 0, b = 0, c = 0;
    size_t k = n < 8 ? n : 8;
    __builtin_memcpy(&a, p, k);
    __builtin_memcpy(&b, p + (n - k) / 2, k);
    __builtin_memcpy(&c, p + n - k, k);
    uint64_t x = (a ^ (b * 0x9E3779B97F4A7C15ULL) ^ (c * 0xC2B2AE3D27D4EB4FULL) ^ n) * 0xFF51AFD7ED558CCDULL;
    return x ^ (x >> 29);
}

#endif
