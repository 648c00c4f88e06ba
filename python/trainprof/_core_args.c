/* Arguments of the METH_FASTCALL | METH_KEYWORDS methods: every documented
 * parameter name is accepted as a keyword (prof.step(samples=8),
 * counter(name=, value=), end_timer(name=, token=)), and integer-likes
 * (numpy.int64, a 0-d integer tensor: anything with __index__) are counts. */
#include "_core_internal.h"

#include <string.h>

/* The slot of keyword `kw` among P's names, or -1. */
static int param_slot(core_params *P, PyObject *kw)
{
    for (int i = 0; i < P->n; i++)
        if (PyUnicode_CompareWithASCIIString(kw, P->names[i]) == 0)
            return i;
    return -1;
}

static int intern_keys(core_params *P)
{
    for (int i = 0; i < P->n; i++)
        if (!P->keys[i] && !(P->keys[i] = PyUnicode_InternFromString(P->names[i])))
            return -1;
    return 0;
}

int core_args_slow(core_params *P, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                   PyObject **out)
{
    if (!P->keys[0] && intern_keys(P) != 0)
        return -1;
    if (nargs > P->n) {
        PyErr_Format(PyExc_TypeError, "%s takes at most %d argument%s (%zd given)", P->fn, P->n,
                     P->n == 1 ? "" : "s", nargs);
        return -1;
    }
    for (int i = 0; i < P->n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int i = param_slot(P, kw);
        if (i < 0) {
            PyErr_Format(PyExc_TypeError, "%s got an unexpected keyword argument %R", P->fn, kw);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s got multiple values for argument '%s'", P->fn,
                         P->names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < P->required; i++) {
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s missing required argument '%s'", P->fn, P->names[i]);
            return -1;
        }
    }
    return 0;
}

int core_count_arg(PyObject *v, const char *what, uint64_t *out)
{
    if (PyBool_Check(v) || !PyIndex_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(v)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(v); /* numpy.int64, a 0-d integer tensor */
    if (!i)
        return -1;
    unsigned long long n = PyLong_AsUnsignedLongLong(i);
    Py_DECREF(i);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be a non-negative int below 2**64", what);
        }
        return -1;
    }
    *out = n;
    return 0;
}
