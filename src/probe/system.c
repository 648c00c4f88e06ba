/* system.c - system memory from /proc/meminfo. */
#include <errno.h>

#include "probe/probe_internal.h"

int tpi_system_read(uint64_t *total, uint64_t *available, double *used_percent)
{
    char buf[4096]; /* MemTotal/MemFree/MemAvailable are the first lines */
    if (tpi_proc_read("meminfo", buf, sizeof buf) < 0)
        return -1;
    if (tpi_proc_kb_field(buf, "MemTotal", total) != 0 || *total == 0) {
        errno = EPROTO;
        return -1;
    }
    if (tpi_proc_kb_field(buf, "MemAvailable", available) != 0) {
        uint64_t fr = 0, cached = 0, bufs = 0; /* kernels before 3.14 */
        tpi_proc_kb_field(buf, "MemFree", &fr);
        tpi_proc_kb_field(buf, "Cached", &cached);
        tpi_proc_kb_field(buf, "Buffers", &bufs);
        *available = fr + cached + bufs;
    }
    if (*available > *total)
        *available = *total;
    *used_percent = 100.0 * (double)(*total - *available) / (double)*total;
    return 0;
}
