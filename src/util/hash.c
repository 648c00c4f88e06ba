#include "util/hash.h"

#include <string.h>

static inline uint64_t load8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t mix8(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

uint64_t tpu_hash_bytes(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 0x243F6A8885A308D3ULL ^ n;
    if (n >= 64) {
        /* four independent chains, 32 bytes a round: one chain waits on
         * its multiply every 8 bytes, and kernel signatures run to
         * hundreds of bytes */
        uint64_t a = h, b = h ^ 0x13198A2E03707344ULL, c = h ^ 0xA4093822299F31D0ULL, d = h ^ 0x082EFA98EC4E6C89ULL;
        do {
            a = mix8(a, load8(p));
            b = mix8(b, load8(p + 8));
            c = mix8(c, load8(p + 16));
            d = mix8(d, load8(p + 24));
            p += 32;
            n -= 32;
        } while (n >= 32);
        h = mix8(mix8(mix8(a, b), c), d);
    }
    while (n >= 8) {
        h = mix8(h, load8(p));
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
