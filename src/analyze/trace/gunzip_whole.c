/* gunzip_whole.c - gzip input through libdeflate when it fits in memory.
 *
 * libdeflate inflates about twice as fast as zlib but only whole buffers:
 * no streaming. So it is used only for regular files whose compressed and
 * decompressed sizes (the latter from each member's ISIZE trailer) fit
 * together in TPA_GUNZIP_MAX_BYTES; bigger files, pipes, and anything
 * libdeflate rejects (corrupt or cut-short streams, whose exact error and
 * truncation point zlib's streaming reader reports) go through zlib. */
#include "analyze/trace/gunzip_whole.h"

#ifdef TP_HAVE_LIBDEFLATE
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool read_all(int fd, char *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, dst + got, n - got, (off_t)got);
        if (k <= 0) return false;
        got += (size_t)k;
    }
    return true;
}

/* ISIZE of the last member: the decompressed size mod 2^32 (a lower bound
 * for multi-member files, so a too-small guess just falls back). */
static size_t trailer_size(const unsigned char *in, size_t n)
{
    return (size_t)in[n - 4] | (size_t)in[n - 3] << 8 | (size_t)in[n - 2] << 16 | (size_t)in[n - 1] << 24;
}

bool tpa_gunzip_whole(int fd, char **out, size_t *out_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 18 ||
        (uint64_t)st.st_size > TPA_GUNZIP_MAX_BYTES)
        return false;
    size_t in_n = (size_t)st.st_size;
    unsigned char magic[2];
    if (pread(fd, magic, 2, 0) != 2 || magic[0] != 0x1f || magic[1] != 0x8b) return false;
    char *in = malloc(in_n);
    if (!in || !read_all(fd, in, in_n)) { free(in); return false; }
    size_t cap = trailer_size((const unsigned char *)in, in_n);
    char *dst = cap && in_n + cap <= TPA_GUNZIP_MAX_BYTES ? malloc(cap) : NULL;
    struct libdeflate_decompressor *d = dst ? libdeflate_alloc_decompressor() : NULL;
    size_t in_used = 0, done = 0;
    bool ok = d != NULL;
    while (ok && in_used < in_n) {  /* one member after another */
        size_t used, produced;
        ok = libdeflate_gzip_decompress_ex(d, in + in_used, in_n - in_used, dst + done, cap - done,
                                           &used, &produced) == LIBDEFLATE_SUCCESS;
        in_used += used;
        done += produced;
    }
    libdeflate_free_decompressor(d);
    free(in);
    if (!ok) { free(dst); return false; }
    *out = dst;
    *out_len = done;
    return true;
}
#else
bool tpa_gunzip_whole(int fd, char **out, size_t *out_len)
{
    (void)fd; (void)out; (void)out_len;
    return false;
}
#endif
