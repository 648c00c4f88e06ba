#include "util/hash.h"

#include <string.h>

uint64_t tpu_hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x243F6A8885A308D3ULL ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t t = 0;
    if (n)
        memcpy(&t, p, n);
    h = (h ^ t) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    return h;
}
