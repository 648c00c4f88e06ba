/*
 * proc.c - readers for /proc/<pid>/stat and /proc/<pid>/status, under a
 * root that tests can move (tpi_proc_set_root).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/probe_internal.h"

static char proc_root[512] = "/proc";

void tpi_proc_set_root(const char *root)
{
    snprintf(proc_root, sizeof proc_root, "%s", root ? root : "/proc");
}

const char *tpi_proc_root(void) { return proc_root; }

int tpi_proc_open(const char *rel)
{
    char path[768];
    snprintf(path, sizeof path, "%s/%s", proc_root, rel);
    return open(path, O_RDONLY | O_CLOEXEC);
}

long tpi_proc_pread(int fd, char *buf, size_t cap)
{
    if (cap == 0) {
        errno = EINVAL;
        return -1;
    }
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t r = pread(fd, buf + len, cap - 1 - len, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    return (long)len;
}

long tpi_proc_read(const char *rel, char *buf, size_t cap)
{
    if (cap == 0) {
        errno = EINVAL;
        return -1;
    }
    int fd = tpi_proc_open(rel);
    if (fd < 0)
        return -1;
    long len = tpi_proc_pread(fd, buf, cap);
    int e = errno;
    close(fd);
    errno = e;
    return len;
}

/* Reads the next unsigned decimal field after spaces; 0 on success. */
static int next_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '-')          /* negative fields (priority) read as 0 */
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    *out = v;
    *p = s;
    return 0;
}

int tpi_proc_parse_stat(const char *text, tpi_proc_stat *out)
{
    memset(out, 0, sizeof *out);
    out->pid = atoi(text);
    const char *p = strrchr(text, ')'); /* comm may contain ')' itself */
    if (!p || p[1] != ' ' || !p[2])
        return -1;
    out->state = p[2];
    p += 3;
    /* fields 4.. after state: ppid(4) ... utime(14) stime(15) ... threads(20)
     * ... starttime(22) vsize(23) rss(24) */
    uint64_t v[21];
    for (int i = 4; i <= 24; i++)
        if (next_u64(&p, &v[i - 4]) != 0)
            return -1;
    out->ppid = (int)v[0];
    out->utime_ticks = v[14 - 4];
    out->stime_ticks = v[15 - 4];
    out->threads = (int)v[20 - 4];
    out->starttime_ticks = v[22 - 4];
    out->rss_pages = v[24 - 4];
    return 0;
}

int tpi_proc_read_stat(int pid, tpi_proc_stat *out)
{
    char rel[32], buf[1024];
    if (pid > 0)
        snprintf(rel, sizeof rel, "%d/stat", pid);
    else
        snprintf(rel, sizeof rel, "self/stat");
    if (tpi_proc_read(rel, buf, sizeof buf) < 0)
        return -1;
    if (tpi_proc_parse_stat(buf, out) != 0) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

int tpi_proc_kb_field(const char *text, const char *key, uint64_t *bytes)
{
    size_t klen = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) != 0 || p[klen] != ':')
            continue;
        const char *s = p + klen + 1;
        uint64_t v;
        if (next_u64(&s, &v) != 0)
            return -1;
        while (*s == ' ')
            s++;
        *bytes = strncmp(s, "kB", 2) == 0 ? v * 1024 : v;
        return 0;
    }
    return -1;
}

int tpi_proc_parse_status(const char *text, uint64_t *rss, uint64_t *hwm, int *threads)
{
    uint64_t t = 0;
    int bad = 0;
    bad |= tpi_proc_kb_field(text, "VmRSS", rss);
    if (tpi_proc_kb_field(text, "VmHWM", hwm) != 0)
        *hwm = *rss;
    bad |= tpi_proc_kb_field(text, "Threads", &t);
    *threads = (int)t;
    return bad ? -1 : 0;
}
