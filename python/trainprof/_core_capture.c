/* _core_capture.c - the flight recorder from Python (docs/CAPTURES.md):
 * Profiler.capture(reason, detail) (tp_session_capture), Profiler.captures,
 * and the stack dumper a hang capture calls on the collector thread:
 * CPython's faulthandler dump of every thread (_Py_DumpTracebackThreads,
 * the function faulthandler's own watchdog thread calls), which reads the
 * interpreter's thread states without the GIL: the stuck thread may hold
 * it. Looked up at run time; a Python without it gets a line saying so. */
#include "_core_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef const char *(*dump_threads_fn)(int fd, PyInterpreterState *interp,
                                       PyThreadState *current);
static dump_threads_fn g_dump;
static int g_looked_up;

static void dump_python_stacks(int fd, void *interp)
{
    if (!g_dump) {
        dprintf(fd, "(this Python has no _Py_DumpTracebackThreads: no Python stacks; "
                    "`py-spy dump --pid %d` shows them)\n", (int)getpid());
        return;
    }
    const char *err = g_dump(fd, (PyInterpreterState *)interp, NULL);
    if (err)
        dprintf(fd, "(%s)\n", err);
}

void core_capture_attach(ProfilerObject *p)
{
    if (!p->s)
        return;
    if (!g_looked_up) {
        g_looked_up = 1;
        g_dump = (dump_threads_fn)dlsym(RTLD_DEFAULT, "_Py_DumpTracebackThreads");
    }
    tp_session_set_stack_dumper(p->s, dump_python_stacks, PyInterpreterState_Get());
}

static core_params CAPTURE_PARAMS = {"capture()", {"reason", "detail"}, 2, 0, {NULL}};

PyObject *core_capture(ProfilerObject *p, PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    tp_session *s;
    PyObject *a[2];
    if (core_args(&CAPTURE_PARAMS, args, n, kwnames, a) != 0 || core_live(p, &s) != 0)
        return NULL;
    const char *reason = "user", *detail = NULL;
    if (a[0] && a[0] != Py_None) {
        if (!PyUnicode_Check(a[0]))
            return PyErr_Format(PyExc_TypeError, "capture(): reason must be str, not %.100s",
                                Py_TYPE(a[0])->tp_name);
        reason = PyUnicode_AsUTF8(a[0]);
        if (!reason)
            return NULL;
    }
    if (a[1] && a[1] != Py_None) {
        if (!PyUnicode_Check(a[1]))
            return PyErr_Format(PyExc_TypeError, "capture(): detail must be str, not %.100s",
                                Py_TYPE(a[1])->tp_name);
        detail = PyUnicode_AsUTF8(a[1]);
        if (!detail)
            return NULL;
    }
    if (!s)
        Py_RETURN_FALSE; /* profiling off, or closed by a signal */
    int rc = tp_session_capture(s, reason, detail);
    if (rc == TP_ERR_INVALID)
        return PyErr_Format(PyExc_ValueError,
                            "capture(): reason %R is not 1 to 31 of [a-z0-9_]", a[0]);
    return PyBool_FromLong(rc == 0);
}

PyObject *core_captures(ProfilerObject *p, void *unused)
{
    return PyLong_FromUnsignedLongLong(tp_session_captures(p->s));
}
