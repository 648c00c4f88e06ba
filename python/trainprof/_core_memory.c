/* The device-memory provider: a Python callable the C sampler calls (on its
 * own thread, the collector's or the closing one) through
 * tp_set_device_memory_callback, with the GIL taken. A provider that raises
 * or returns junk is reported once on stderr and switched off. */
#include "_core_internal.h"

#include <string.h>

/* One byte count of a device's dict; 0 when absent. -1 with an exception. */
static int bytes_field(PyObject *row, const char *key, uint64_t *out)
{
    *out = 0;
    PyObject *v = PyMapping_GetItemString(row, key);
    if (!v) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (!PyIndex_Check(v) || PyBool_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s is %.100s, not an int", key, Py_TYPE(v)->tp_name);
        Py_DECREF(v);
        return -1;
    }
    unsigned long long b = PyLong_AsUnsignedLongLong(v);
    Py_DECREF(v);
    if (b == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = b;
    return 0;
}

static int first_field(PyObject *row, const char *a, const char *b, uint64_t *out)
{
    if (bytes_field(row, a, out) != 0)
        return -1;
    return *out ? 0 : bytes_field(row, b, out);
}

/* {"cuda:0": {"bytes_in_use": int, "peak_bytes_in_use": int,
 * "bytes_reserved": int, "bytes_limit": int}, ...} -> out; count or -1. */
static int parse_devices(PyObject *r, tp_device_memory *out, int max)
{
    if (!PyDict_Check(r)) {
        PyErr_Format(PyExc_TypeError, "returned %.100s, not a dict {device: {...}}", Py_TYPE(r)->tp_name);
        return -1;
    }
    PyObject *k, *row;
    Py_ssize_t pos = 0;
    int n = 0;
    while (n < max && PyDict_Next(r, &pos, &k, &row)) {
        const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
        if (!name || !name[0] || strlen(name) >= sizeof out[n].device) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "device name %R is not a str of 1 to %d bytes", k,
                             (int)sizeof out[n].device - 1);
            return -1;
        }
        if (!PyMapping_Check(row) || PyUnicode_Check(row)) {
            PyErr_Format(PyExc_TypeError, "device %s: %.100s, not a dict", name, Py_TYPE(row)->tp_name);
            return -1;
        }
        tp_device_memory *d = &out[n];
        memset(d, 0, sizeof *d);
        strcpy(d->device, name);
        PyObject *has = PyUnicode_FromString("bytes_in_use");
        int present = has ? PySequence_Contains(row, has) : -1;
        Py_XDECREF(has);
        if (present != 1) {
            if (present == 0)
                PyErr_Format(PyExc_ValueError, "device %s: no bytes_in_use", name);
            return -1;
        }
        if (bytes_field(row, "bytes_in_use", &d->allocated_bytes) != 0 ||
            bytes_field(row, "peak_bytes_in_use", &d->peak_bytes) != 0 ||
            first_field(row, "bytes_reserved", "reserved_bytes", &d->reserved_bytes) != 0 ||
            first_field(row, "bytes_limit", "total_bytes", &d->total_bytes) != 0)
            return -1;
        n++;
    }
    return n;
}

static void provider_failed(ProfilerObject *p)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_NormalizeException(&et, &ev, &tb);
    PyObject *msg = ev ? PyObject_Str(ev) : NULL;
    const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
    fprintf(stderr, "trainprof: warning: the memory provider failed (%s: %s); switched off\n",
            et ? ((PyTypeObject *)et)->tp_name : "error", m ? m : "?");
    PyErr_Clear();
    Py_XDECREF(msg);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    __atomic_store_n(&p->provider_failed, 1, __ATOMIC_RELAXED);
}

static int provider_cb(void *user, tp_device_memory *out, int max)
{
    ProfilerObject *p = user;
    if (__atomic_load_n(&p->provider_failed, __ATOMIC_RELAXED) || _Py_IsFinalizing())
        return 0;
    PyGILState_STATE g = PyGILState_Ensure();
    int n = 0;
    PyObject *fn = p->provider ? Py_NewRef(p->provider) : NULL;
    if (fn && !p->provider_failed) {
        PyObject *r = PyObject_CallNoArgs(fn);
        n = r ? parse_devices(r, out, max) : -1;
        Py_XDECREF(r);
        if (n < 0) {
            provider_failed(p);
            n = 0;
        }
    }
    Py_XDECREF(fn);
    PyGILState_Release(g);
    return n;
}

PyObject *core_set_memory_provider(ProfilerObject *p, PyObject *fn)
{
    if (p->closed)
        return PyErr_Format(Core_ProfilerClosedError, "the profiler is closed");
    if (fn != Py_None && !PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "the memory provider must be callable (or None), "
                            "not %.100s", Py_TYPE(fn)->tp_name);
    Py_XSETREF(p->provider, fn == Py_None ? NULL : Py_NewRef(fn));
    __atomic_store_n(&p->provider_failed, 0, __ATOMIC_RELAXED);
    tp_set_device_memory_callback(p->s, p->provider ? provider_cb : NULL, p->provider ? p : NULL);
    Py_RETURN_NONE;
}

void core_memory_detach(ProfilerObject *p)
{
    Py_CLEAR(p->provider);
}
