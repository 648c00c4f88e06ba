/* _core_sync.c - Profiler.sync(barrier) and Profiler.clock_offset(): the
 * ranks' clocks aligned to rank 0 across the job's own barrier
 * (tp_session_sync, docs/DISTRIBUTED.md). */
#include "_core_internal.h"

typedef struct barrier_call {
    PyObject *fn;
    int raised; /* the callable raised: its exception is pending */
} barrier_call;

static int call_barrier(void *user)
{
    barrier_call *b = user;
    PyObject *r = PyObject_CallNoArgs(b->fn);
    if (!r) {
        b->raised = 1;
        return -1; /* tp_session_sync calls no further barrier */
    }
    Py_DECREF(r);
    return 0;
}

/* Collective: a disabled or closed profiler still calls the barrier as
 * often as the profiled ranks do (tp_session_sync with a NULL session). */
PyObject *core_sync(ProfilerObject *p, PyObject *barrier)
{
    if (!PyCallable_Check(barrier))
        return PyErr_Format(PyExc_TypeError,
                            "sync(barrier): barrier must be a callable with no arguments "
                            "(e.g. torch.distributed.barrier), not %.100s",
                            Py_TYPE(barrier)->tp_name);
    barrier_call b = {barrier, 0};
    tp_error err;
    int rc = tp_session_sync(p->closed ? NULL : p->s, call_barrier, &b, &err);
    if (b.raised)
        return NULL;
    if (rc != 0)
        return PyErr_Format(PyExc_RuntimeError, "%s", err.message);
    Py_RETURN_NONE;
}

PyObject *core_clock_offset(ProfilerObject *p, PyObject *unused)
{
    (void)unused;
    int64_t offset;
    uint64_t error;
    if (p->closed || !tp_session_clock_offset(p->s, &offset, &error))
        Py_RETURN_NONE;
    return Py_BuildValue("(LK)", (long long)offset, (unsigned long long)error);
}
