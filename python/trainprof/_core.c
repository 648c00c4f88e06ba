/*
 * _core.c - the trainprof._core module: the types of the other _core_*.c
 * files, the exceptions, the version, the CLI's path, and closing every
 * open profiler at interpreter exit (see _core_internal.h).
 */
#include "_core_internal.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

/* Directory of this extension module, for the CLI shipped beside it. */
static PyObject *module_dir(void)
{
    Dl_info info;
    if (!dladdr((void *)&module_dir, &info) || !info.dli_fname)
        Py_RETURN_NONE;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash)
        return PyUnicode_FromString(".");
    return PyUnicode_DecodeFSDefaultAndSize(info.dli_fname, slash - info.dli_fname);
}

/* The `trainprof` CLI shipped inside the package (bin/trainprof beside
 * this module, in the wheel and in the build tree), or None. */
static PyObject *core_cli_path(PyObject *m, PyObject *unused)
{
    PyObject *dir = module_dir();
    if (!dir || dir == Py_None)
        return dir;
    PyObject *path = PyUnicode_FromFormat("%U/bin/trainprof", dir);
    Py_DECREF(dir);
    PyObject *b = NULL;
    if (!path || !PyUnicode_FSConverter(path, &b)) {
        Py_XDECREF(path);
        return NULL;
    }
    int ok = access(PyBytes_AS_STRING(b), X_OK) == 0;
    Py_DECREF(b);
    if (ok)
        return path;
    Py_DECREF(path);
    Py_RETURN_NONE;
}

static PyObject *core_version(PyObject *m, PyObject *unused)
{
    return PyUnicode_FromString(tp_version());
}

/* report_html(input, out): tp_report_html (a run directory or one trace
 * file -> a self-contained page); OSError or ValueError naming the file. */
static PyObject *core_report_html(PyObject *m, PyObject *args)
{
    PyObject *in = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "O&O&:report_html", PyUnicode_FSConverter, &in,
                          PyUnicode_FSConverter, &out)) {
        Py_XDECREF(in);
        return NULL;
    }
    tp_error e;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tp_report_html(PyBytes_AS_STRING(in), PyBytes_AS_STRING(out), &e);
    Py_END_ALLOW_THREADS
    Py_DECREF(in);
    Py_DECREF(out);
    if (rc == 0)
        Py_RETURN_NONE;
    return PyErr_Format(rc == TP_ERR_IO ? PyExc_OSError : PyExc_ValueError, "%s", e.message);
}

static PyObject *g_signal_hook; /* trainprof._signals._handler */

/* _on_signal(signum, frame): the handler trainprof._signals installs. It
 * calls the hook (_signals._handler: closes the run); when the hook returns
 * a handler to run now (the program's, or Python's default_int_handler),
 * that handler is called from here, where no trainprof frame is left on
 * the stack: the KeyboardInterrupt it raises carries the program's frames
 * only, and its traceback ends where the program was. */
static PyObject *core_on_signal(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (!g_signal_hook)
        Py_RETURN_NONE;
    PyObject *next = PyObject_Vectorcall(g_signal_hook, args, (size_t)n, NULL);
    if (!next || next == Py_None)
        return next;
    PyObject *r = PyObject_Vectorcall(next, args, (size_t)n, NULL);
    Py_DECREF(next);
    return r;
}

static PyObject *core_set_signal_hook(PyObject *m, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError, "_set_signal_hook: %R is not callable", fn);
    Py_XSETREF(g_signal_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"report_html", core_report_html, METH_VARARGS,
     "report_html(input, out): the HTML report of a run directory or trace file"},
    {"cli_path", core_cli_path, METH_NOARGS, "path of the bundled `trainprof` CLI, or None"},
    {"version", core_version, METH_NOARGS, "tp_version(): the C library's version"},
    {"_set_open_hook", core_set_open_hook, METH_O,
     "_set_open_hook(fn): fn(profiler) after every Profiler() (profiling off too; None clears)"},
    {"_close_all", core_close_all, METH_NOARGS, "closes every open profiler (run at exit)"},
    {"_set_closed_hook", core_set_closed_hook, METH_O,
     "_set_closed_hook(fn): fn() after every close, once no close is under way (None clears)"},
    {"_closing", core_closing, METH_NOARGS, "_closing() -> True while a close is under way"},
    {"_on_signal", (PyCFunction)(void (*)(void))core_on_signal, METH_FASTCALL,
     "_on_signal(signum, frame): SIGTERM/SIGINT handler (trainprof._signals)"},
    {"_set_signal_hook", core_set_signal_hook, METH_O,
     "_set_signal_hook(fn): fn(signum, frame) -> a handler to call next, or None"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "trainprof._core",
    "trainprof's CPython extension over the C library (libtrainprof).", -1, module_methods,
    NULL, NULL, NULL, NULL};

static int add_exceptions(PyObject *m)
{
    Core_ConfigError = PyErr_NewExceptionWithDoc(
        "trainprof.ConfigError",
        "A bad configuration key or value. Attributes (None when the C layer does not say): "
        "key, file, line, column, suggestion, code.",
        PyExc_ValueError, NULL);
    Core_ProfilerClosedError = PyErr_NewExceptionWithDoc(
        "trainprof.ProfilerClosedError", "The profiler was used after close().",
        PyExc_RuntimeError, NULL);
    if (!Core_ConfigError || !Core_ProfilerClosedError)
        return -1;
    const char *attrs[] = {"key", "file", "line", "column", "suggestion", "code"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (PyObject_SetAttrString(Core_ConfigError, attrs[i], Py_None) != 0)
            return -1;
    if (PyModule_AddObjectRef(m, "ConfigError", Core_ConfigError) != 0 ||
        PyModule_AddObjectRef(m, "ProfilerClosedError", Core_ProfilerClosedError) != 0)
        return -1;
    return 0;
}

/* atexit.register(_close_all): profilers are closed while the interpreter
 * still runs (the memory provider may be called during the close). */
static int register_atexit(PyObject *m)
{
    PyObject *atexit = PyImport_ImportModule("atexit");
    PyObject *fn = PyObject_GetAttrString(m, "_close_all");
    PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
    Py_XDECREF(atexit);
    Py_XDECREF(fn);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static int add_type(PyObject *m, const char *name, PyTypeObject *t)
{
    return PyModule_AddObjectRef(m, name, (PyObject *)t);
}

PyMODINIT_FUNC PyInit__core(void)
{
    if (core_config_ready() < 0 || core_profiler_ready() < 0 || core_zone_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    if (add_exceptions(m) != 0 || add_type(m, "Config", &Core_ConfigType) != 0 ||
        add_type(m, "Profiler", &Core_ProfilerType) != 0 ||
        add_type(m, "Zone", &Core_ZoneType) != 0 ||
        PyModule_AddStringConstant(m, "__version__", tp_version()) != 0 ||
        PyModule_AddIntConstant(m, "TIMER_SLOTS", CORE_TIMER_SLOTS) != 0 ||
        register_atexit(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
