/* kwcall.c - the bench-only module `kwcall`: an object whose methods do
 * nothing, declared as trainprof's are (METH_FASTCALL | METH_KEYWORDS), so
 * bench_keywords.py can show what a keyword call costs the interpreter
 * itself: noop.step(8) against noop.step(samples=8) is the same call path
 * as prof.step(8) against prof.step(samples=8), with no work inside.
 * Built with -DTP_BUILD_BENCH=ON (bench/python/CMakeLists.txt); never
 * installed. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
} NoopObject;

/* Accepts anything, by position or keyword, and returns None. */
static PyObject *noop_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    (void)self, (void)args, (void)nargs, (void)kwnames;
    Py_RETURN_NONE;
}

static PyMethodDef noop_methods[] = {
    {"step", (PyCFunction)(void (*)(void))noop_call, METH_FASTCALL | METH_KEYWORDS,
     "step(samples=None): nothing"},
    {"counter", (PyCFunction)(void (*)(void))noop_call, METH_FASTCALL | METH_KEYWORDS,
     "counter(name, value): nothing"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kwcall.Noop",
    .tp_basicsize = sizeof(NoopObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_methods = noop_methods,
    .tp_doc = "Methods that do nothing, called as trainprof.Profiler's are.",
};

static struct PyModuleDef kwcall_module = {
    PyModuleDef_HEAD_INIT, "kwcall", "No-op METH_FASTCALL | METH_KEYWORDS methods (benchmark).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_kwcall(void)
{
    if (PyType_Ready(&NoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&kwcall_module);
    if (m && PyModule_AddObjectRef(m, "Noop", (PyObject *)&NoopType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
