/*
 * tp_mpi.h - MPI collectives recorded as trainprof zones, with their byte
 * counts. Header-only: include it after <mpi.h> and "trainprof.h".
 *
 *   tp_mpi_allreduce(prof, MPI_IN_PLACE, grad, n, MPI_FLOAT, MPI_SUM, comm);
 *
 * records a zone "all_reduce" around MPI_Allreduce and, after it, a counter
 * sample "all_reduce.bytes" = count * sizeof(type) (the payload of this
 * rank). The time in the zone is transfer plus waiting for the slowest rank;
 * `trainprof analyze JOB_DIR` separates the two across ranks. The call's
 * result and arguments go to MPI unchanged; a NULL session records nothing.
 *
 * tp_mpi_barrier is a tp_barrier_fn for tp_session_sync; user points to the
 * MPI_Comm:  tp_session_sync(prof, tp_mpi_barrier, &comm, &err);
 */
#ifndef TP_MPI_H
#define TP_MPI_H

#include <mpi.h>

#include "trainprof.h"

static inline int tp_mpi_allreduce(tp_session *s, const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    static tp_site site = {"all_reduce", __FILE__, __LINE__, 0};
    int type_size = 0;
    if (s)
        tp_zone_begin_site(s, &site);
    int rc = MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    if (s) {
        tp_zone_end(s);
        MPI_Type_size(type, &type_size);
        tp_counter(s, "all_reduce.bytes", (double)count * (double)type_size);
    }
    return rc;
}

static inline int tp_mpi_barrier(void *comm)
{
    return MPI_Barrier(*(MPI_Comm *)comm) == MPI_SUCCESS ? 0 : -1;
}

#endif
