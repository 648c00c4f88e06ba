/*
 * flight_hang.c - the text file of a `hang` capture: where every thread of
 * the process is. Written on the collector thread with plain write(2), and
 * never takes the GIL or any lock a stuck thread may hold: the open zones
 * come from the collector's own state, the kernel's view from
 * /proc/self/task/<tid>/{comm,stat,wchan,syscall}, and the Python stacks
 * from the stack dumper the Python package registers
 * (tp_session_set_stack_dumper: CPython's faulthandler dump of all threads,
 * the one its watchdog thread uses).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/collector_internal.h"
#include "core/flight.h"
#include "sink/seed_json.h"

/* Reads a small /proc file into buf (trailing newline cut); "" when it cannot. */
static void read_small(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t got = read(fd, buf, n - 1);
    close(fd);
    if (got <= 0) {
        buf[0] = '\0';
        return;
    }
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
        buf[--got] = '\0';
}

/* The system calls threads of a training process usually wait in. */
static const char *syscall_name(long nr)
{
#if defined(__x86_64__)
    static const struct { long nr; const char *name; } T[] = {
        {0, "read"}, {1, "write"}, {7, "poll"}, {23, "select"}, {34, "pause"},
        {35, "nanosleep"}, {44, "sendto"}, {45, "recvfrom"}, {46, "sendmsg"}, {47, "recvmsg"},
        {61, "wait4"}, {202, "futex"}, {230, "clock_nanosleep"}, {232, "epoll_wait"},
        {270, "pselect6"}, {271, "ppoll"}, {281, "epoll_pwait"}, {288, "accept4"},
        {247, "waitid"}, {16, "ioctl"}, {43, "accept"}, {42, "connect"}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (T[i].nr == nr)
            return T[i].name;
#else
    (void)nr;
#endif
    return NULL;
}

static const char *state_name(char c)
{
    switch (c) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "uninterruptible wait (I/O, driver)";
    case 'T': return "stopped";
    case 't': return "traced";
    case 'Z': return "zombie";
    default: return "?";
    }
}

static void task_line(int fd, const char *tid)
{
    char path[128], comm[64], stat[512], wchan[128], sc[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
    read_small(path, comm, sizeof comm);
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
    read_small(path, stat, sizeof stat);
    snprintf(path, sizeof path, "/proc/self/task/%s/wchan", tid);
    read_small(path, wchan, sizeof wchan);
    snprintf(path, sizeof path, "/proc/self/task/%s/syscall", tid);
    read_small(path, sc, sizeof sc);
    const char *paren = strrchr(stat, ')');
    char state = paren && paren[1] == ' ' ? paren[2] : '?';
    dprintf(fd, "tid %s \"%s\": %s", tid, comm, state_name(state));
    if (wchan[0] && strcmp(wchan, "0") != 0)
        dprintf(fd, ", kernel wait channel %s", wchan);
    if (sc[0] == 'r')
        dprintf(fd, ", running in user space");
    else if (sc[0] && sc[0] != '-') {
        long nr = strtol(sc, NULL, 10);
        const char *name = syscall_name(nr);
        dprintf(fd, ", in system call %s%s%ld%s", name ? name : "", name ? " (" : "", nr,
                name ? ")" : "");
    }
    dprintf(fd, "\n");
}

static void tasks(int fd)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        dprintf(fd, "(/proc/self/task cannot be read)\n");
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            task_line(fd, e->d_name);
    closedir(d);
}

/* The zone stack of each thread, outermost first, with how long each has
 * been open. */
static void zones(int fd, tpi_collector *c, uint64_t now)
{
    dprintf(fd, "step %llu in progress for %.3f s (thread %u)\n", (unsigned long long)c->step,
            (double)(now - c->step_begin_ns) / 1e9, c->s->opener_tid);
    for (uint32_t i = 0; i < c->n_th; i++) {
        tpi_thread_state *t = c->th[i];
        const char *name = t->name_id ? tpi_names_get(t->name_id) : "";
        dprintf(fd, "thread %u \"%s\":", t->tid, name);
        if (t->depth == 0)
            dprintf(fd, " no zone open");
        for (int d = 0; d < t->depth; d++)
            dprintf(fd, "%s %s (open %.3f s)", d ? " >" : "", tpi_names_get(t->zs[d].name_id),
                    (double)(now - t->zs[d].begin_ns) / 1e9);
        dprintf(fd, "\n");
    }
}

int tpi_capture_hang_dump(tpi_flight *f, const char *path, const char *detail, uint64_t now)
{
    tpi_collector *c = f->c;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "trainprof: warning: cannot write %s\n", path);
        return -1;
    }
    char iso[64];
    tpi_seed_iso_time(iso, sizeof iso, c->s->env.wall_base_ns + now);
    dprintf(fd, "trainprof hang dump: %s\n", detail);
    dprintf(fd, "run %s, rank %d, pid %d, host %s, at %s\n\n", c->s->run_dir, c->s->env.rank,
            c->s->pid, c->s->host, iso);
    dprintf(fd, "== trainprof: zones open on each thread (outermost first) ==\n");
    zones(fd, c, now);
    dprintf(fd, "\n== threads of the process (kernel view: state, wait channel, system call) ==\n");
    tasks(fd);
    pthread_mutex_lock(&f->lock);
    void (*dumper)(int, void *) = f->dumper;
    void *user = f->dumper_user;
    pthread_mutex_unlock(&f->lock);
    if (dumper) {
        dprintf(fd, "\n== Python: every thread's stack (most recent call first) ==\n");
        dumper(fd, user);
        dprintf(fd, "\n");
    }
    fsync(fd); /* the process may be killed next (a launcher's timeout); unsupported is fine */
    return close(fd) == 0 ? 0 : -1;
}
