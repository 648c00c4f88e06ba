/* Helpers shared by every sink. */
#include <sys/stat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>

#include "sink/sink.h"

int tpi_sink_run_dir_gone(const tpi_sink_env *env)
{
    struct stat st;
    if (!env->run_dir || !env->run_dir[0] || !env->run_dir_ino)
        return 0;
    return stat(env->run_dir, &st) != 0 || (uint64_t)st.st_dev != env->run_dir_dev ||
           (uint64_t)st.st_ino != env->run_dir_ino;
}

void tpi_sink_fail(tpi_sink *k, const char *what, const char *path, int errnum)
{
    k->io_errors++;
    if (k->failed)
        return;
    k->failed = 1;
    fprintf(stderr, "trainprof: warning: %s sink stopped: %s '%s': %s (training goes on)\n",
            k->ops && k->ops->name ? k->ops->name : "a", what, path ? path : "",
            errnum ? strerror(errnum) : "error");
}

/* ---- files of sinks, and fork ----------------------------------------------
 * A fork child inherits copies of the sinks' stdio buffers. If the child
 * flushed them (fclose, or simply exit()), bytes the parent writes later
 * would appear twice in the parent's files. Sinks therefore open their
 * files through tpi_sink_fopen, and the atfork child handler empties the
 * buffers of every such file. */
#define TPI_MAX_SINK_FILES 64
static pthread_mutex_t g_files_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_files[TPI_MAX_SINK_FILES];

FILE *tpi_sink_fopen(const char *path, const char *mode)
{
    FILE *f = fopen(path, mode);
    if (!f)
        return NULL;
    pthread_mutex_lock(&g_files_lock);
    for (int i = 0; i < TPI_MAX_SINK_FILES; i++) {
        if (!g_files[i]) {
            g_files[i] = f;
            break;
        }
    }
    pthread_mutex_unlock(&g_files_lock);
    return f;
}

int tpi_sink_fclose(FILE *f)
{
    pthread_mutex_lock(&g_files_lock);
    for (int i = 0; i < TPI_MAX_SINK_FILES; i++)
        if (g_files[i] == f)
            g_files[i] = NULL;
    pthread_mutex_unlock(&g_files_lock);
    return fclose(f);
}

void tpi_sink_files_after_fork_child(void)
{
    /* only this thread exists now; the lock may have been held by another */
    pthread_mutex_init(&g_files_lock, NULL);
    for (int i = 0; i < TPI_MAX_SINK_FILES; i++) {
        if (g_files[i])
            __fpurge(g_files[i]);
        g_files[i] = NULL; /* never flushed or closed by the child */
    }
}
