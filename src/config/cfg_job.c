/*
 * cfg_job.c - what the launcher tells a process about its job: rank, local
 * rank, world size, job id, and which ranks profile (profiling.ranks).
 *
 * Each launcher exports one family of variables; the family that gives the
 * rank also gives the local rank and world size, so a process started by
 * mpirun inside a SLURM allocation reads Open MPI's numbers, not SLURM's
 * (the allocation's task count need not be the MPI world).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/settings.h"
#include "util/fileio.h"

typedef struct launcher_vars {
    const char *rank, *local_rank, *world_size, *name;
} launcher_vars;

/* In order of precedence: RANK first, as torchrun sets it even under SLURM. */
static const launcher_vars FAMILIES[] = {
    {"RANK", "LOCAL_RANK", "WORLD_SIZE", "torchrun"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "openmpi"},
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "slurm"},
    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "mpich"},
    /* not PMIX_RANK: a process that merely calls MPI_Init (mpi4py imported
     * by Lightning) becomes a PMIx singleton with PMIX_RANK=0 */
};

static int env_int(const char *name, int *out)
{
    const char *text = name ? getenv(name) : NULL;
    char *end;
    if (!text || !*text)
        return -1;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* The name the launcher gives the job, shared by all its ranks; "" when
 * none. torchrun without --rdzv-id/--standalone sets TORCHELASTIC_RUN_ID to
 * "none": its workers on one node are children of one agent process, whose
 * pid then names the job (per node). */
static void launcher_job_id(char *out, size_t outlen)
{
    const char *te = getenv("TORCHELASTIC_RUN_ID"), *job = getenv("SLURM_JOB_ID");
    const char *step = getenv("SLURM_STEP_ID"), *pmix = getenv("PMIX_NAMESPACE");
    if (!step || !*step)
        step = getenv("SLURM_STEPID"); /* the older spelling */
    out[0] = '\0';
    if (te && *te && strcmp(te, "none") != 0)
        snprintf(out, outlen, "%s", te);
    else if (job && *job)
        snprintf(out, outlen, "%s%s%s", job, step && *step ? "." : "", step ? step : "");
    else if (pmix && *pmix)
        snprintf(out, outlen, "%s", pmix);
    else if (te && *te)
        snprintf(out, outlen, "torchrun-%ld", (long)getppid());
}

/* SLURM's batch step: the job script and what it runs directly, one process
 * (SLURM_PROCID 0) whatever --ntasks asked for; SLURM_NTASKS counts the
 * tasks srun would start. Only srun's tasks have a step id. */
static int slurm_batch_step(void)
{
    const char *step = getenv("SLURM_STEP_ID"), *old = getenv("SLURM_STEPID");
    return !(step && *step) && !(old && *old);
}

void tpi_job_detect(const tpi_settings *s, tpi_job_info *out)
{
    memset(out, 0, sizeof *out);
    out->rank = out->local_rank = out->world_size = -1;
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        const launcher_vars *f = &FAMILIES[i];
        if (env_int(f->rank, &out->rank) != 0)
            continue;
        env_int(f->local_rank, &out->local_rank);
        env_int(f->world_size, &out->world_size);
        const char *name = f->name;
        if (i == 0 && !getenv("TORCHELASTIC_RUN_ID"))
            name = "env"; /* RANK set by hand or by another launcher */
        if (strcmp(f->name, "slurm") == 0 && slurm_batch_step())
            out->world_size = 1, out->local_rank = 0;
        snprintf(out->launcher, sizeof out->launcher, "%s", name);
        break;
    }
    if (s && s->rank >= 0)
        out->rank = s->rank;
    if (s && s->job_id[0] && strcmp(s->job_id, "auto") != 0)
        snprintf(out->job_id, sizeof out->job_id, "%s", s->job_id);
    else
        launcher_job_id(out->job_id, sizeof out->job_id);
    if (out->job_id[0])
        tpu_sanitize_component(out->job_id);
}

/* One element of a ranks list: "N" or "N-M". Returns the text after it. */
static const char *range(const char *p, long *lo, long *hi)
{
    char *end;
    if (*p < '0' || *p > '9')
        return NULL;
    *lo = *hi = strtol(p, &end, 10);
    if (*end == '-') {
        if (end[1] < '0' || end[1] > '9')
            return NULL;
        *hi = strtol(end + 1, &end, 10);
    }
    if (*lo > *hi || *hi > INT_MAX)
        return NULL;
    return end;
}

int tpi_ranks_select(const char *text, int rank, int *selected)
{
    int hit = 0;
    long want = rank < 0 ? 0 : rank;
    if (!text)
        return -1;
    if (strcmp(text, "all") == 0) {
        if (selected)
            *selected = 1;
        return 0;
    }
    for (const char *p = text;;) {
        long lo, hi;
        while (*p == ' ')
            p++;
        p = range(p, &lo, &hi);
        if (!p)
            return -1;
        hit |= want >= lo && want <= hi;
        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return -1;
    }
    if (selected)
        *selected = hit;
    return 0;
}
