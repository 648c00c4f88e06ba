/* Profiler: one tp_session. Opening, closing (explicitly, on exit, on
 * garbage collection: once), steps, counters, marks and the summary. */
#include "_core_internal.h"

#include <string.h>
#include <unistd.h>

PyObject *Core_ProfilerClosedError;

static uint32_t g_next_serial = 1;
static ProfilerObject *g_open; /* profilers with a session, closed at exit */
static PyObject *g_open_hook;  /* trainprof.torch: fn(prof) after each open */
static PyObject *g_closed_hook; /* trainprof._signals: fn() after each close */
static int g_closing;          /* closes under way on this thread's stack */

PyObject *core_set_open_hook(PyObject *mod, PyObject *fn)
{
    Py_XSETREF(g_open_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

PyObject *core_set_closed_hook(PyObject *mod, PyObject *fn)
{
    Py_XSETREF(g_closed_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

PyObject *core_closing(PyObject *mod, PyObject *unused)
{
    return PyBool_FromLong(g_closing > 0);
}

/* A hook that raises is reported (as unraisable) and does not stop the
 * profiler. */
/* fn(arg) or fn(); an Exception it raises is printed, never raised. Returns
 * -1 with the error set for what ends a program (KeyboardInterrupt,
 * SystemExit: a signal handler that ran inside fn). fn may close the
 * profiler that holds it (a signal's close): it is kept alive meanwhile. */
static int call_hook(PyObject *fn, PyObject *arg)
{
    Py_INCREF(fn);
    PyObject *r = arg ? PyObject_CallOneArg(fn, arg) : PyObject_CallNoArgs(fn);
    int rc = 0;
    if (!r && !PyErr_ExceptionMatches(PyExc_Exception))
        rc = -1;
    else if (!r)
        PyErr_WriteUnraisable(fn);
    Py_XDECREF(r);
    Py_DECREF(fn);
    return rc;
}

/* call_hook where nothing may be raised. */
static void call_hook_quietly(PyObject *fn, PyObject *arg)
{
    if (call_hook(fn, arg) != 0)
        PyErr_WriteUnraisable(fn);
}

/* 1 in the process that opened p; 0 in a forked child (a DataLoader
 * worker), where p's Python hooks (trainprof.torch's windows, merge and
 * report rewrite) must not run: they would write into the parent's run. */
static int opened_here(const ProfilerObject *p)
{
    return p->pid == (long)getpid();
}

static void list_add(ProfilerObject *p)
{
    p->next_open = g_open;
    p->prev_open = NULL;
    if (g_open)
        g_open->prev_open = p;
    g_open = p;
}

static void list_remove(ProfilerObject *p)
{
    if (p->prev_open)
        p->prev_open->next_open = p->next_open;
    else if (g_open == p)
        g_open = p->next_open;
    if (p->next_open)
        p->next_open->prev_open = p->prev_open;
    p->next_open = p->prev_open = NULL;
}

/* ---- open ---------------------------------------------------------------- */

static PyObject *profiler_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
    ProfilerObject *p = (ProfilerObject *)t->tp_alloc(t, 0);
    if (!p)
        return NULL;
    p->serial = g_next_serial++;
    if (g_next_serial == 0)
        g_next_serial = 1;
    p->zones = PyDict_New();
    p->run_dir = Py_NewRef(Py_None);
    p->timer_begin = PyMem_Calloc(CORE_TIMER_SLOTS, sizeof *p->timer_begin);
    p->timer_id = PyMem_Calloc(CORE_TIMER_SLOTS, sizeof *p->timer_id);
    p->timer_hash = PyMem_Calloc(CORE_TIMER_SLOTS, sizeof *p->timer_hash);
    if (!p->zones || !p->timer_begin || !p->timer_id || !p->timer_hash) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    return (PyObject *)p;
}

/* config: None, a Config, a mapping (dict, DictConfig) or a YAML path. */
static ConfigObject *config_from(PyObject *config)
{
    if (config && PyObject_TypeCheck(config, &Core_ConfigType))
        return (ConfigObject *)Py_NewRef(config);
    ConfigObject *c = core_config_new();
    if (!c || !config || config == Py_None)
        return c;
    PyObject *r = NULL;
    if (PyUnicode_Check(config) || PyBytes_Check(config) || PyObject_HasAttrString(config, "__fspath__"))
        r = PyObject_CallMethod((PyObject *)c, "load_yaml", "O", config);
    else if (PyObject_HasAttrString(config, "items"))
        r = core_config_update(c, config) == 0 ? Py_NewRef(Py_None) : NULL;
    else
        PyErr_Format(PyExc_TypeError, "config must be None, a trainprof Config, a mapping or a "
                     "YAML path, not %.100s", Py_TYPE(config)->tp_name);
    if (!r)
        Py_CLEAR(c);
    Py_XDECREF(r);
    return c;
}

static int profiler_init(ProfilerObject *p, PyObject *args, PyObject *kw)
{
    PyObject *config = NULL;
    if (!PyArg_UnpackTuple(args, "Profiler", 0, 1, &config))
        return -1;
    if (config == Py_None)
        config = NULL;
    if (p->initialized) {
        PyErr_SetString(PyExc_RuntimeError, "Profiler.__init__ called twice");
        return -1;
    }
    if (kw && PyDict_GetItemString(kw, "config")) {
        if (config) {
            PyErr_SetString(PyExc_TypeError, "config given twice");
            return -1;
        }
        config = PyDict_GetItemString(kw, "config");
    }
    ConfigObject *c = config_from(config);
    if (!c)
        return -1;
    Py_XSETREF(p->config, (PyObject *)c);
    tp_error e;
    if (tp_config_load_env(c->cfg, &e) != 0) {
        core_raise_config_error(&e);
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kw && PyDict_Next(kw, &pos, &k, &v)) {
        if (PyUnicode_Check(k) && PyUnicode_CompareWithASCIIString(k, "config") == 0)
            continue;
        if (core_config_set(c, k, v) != 0)
            return -1;
    }
    tp_session *s;
    Py_BEGIN_ALLOW_THREADS
    s = tp_session_open(c->cfg, &e);
    Py_END_ALLOW_THREADS
    if (!s && e.code != TP_OK) {
        if (e.code == TP_ERR_IO)
            PyErr_Format(PyExc_OSError, "%s", e.message);
        else
            core_raise_config_error(&e);
        return -1;
    }
    p->s = s;
    p->initialized = 1;
    p->pid = (long)getpid();
    if (s) {
        Py_SETREF(p->run_dir, PyUnicode_DecodeFSDefault(tp_session_dir(s)));
        if (!p->run_dir)
            return -1;
        list_add(p);
        core_capture_attach(p);
    }
    if (g_open_hook) /* profiling off too: the program's profiler all the same */
        call_hook_quietly(g_open_hook, (PyObject *)p);
    return 0;
}

/* ---- close ---------------------------------------------------------------- */

static PyObject *summary_dict(const tp_op_stat *ops, int n)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < n; i++) {
        const tp_op_stat *o = &ops[i];
        PyObject *row = Py_BuildValue(
            "{s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "count", (unsigned long long)o->count,
            "total_time", o->total_s, "avg_time", o->mean_s, "self_time", o->self_s, "min",
            o->min_s, "max", o->max_s, "p50", o->p50_s, "p90", o->p90_s, "p99", o->p99_s);
        if (!row || PyDict_SetItemString(d, o->name, row) != 0)
            Py_CLEAR(d);
        Py_XDECREF(row);
    }
    return d;
}

/* The session's operations now; the GIL is released while the C layer
 * drains (it may call the memory provider, which takes the GIL). */
static PyObject *live_summary(ProfilerObject *p)
{
    tp_op_stat *ops = NULL;
    tp_error e;
    int n;
    tp_session *s = p->s;
    p->queries++; /* close() waits for it: s stays valid */
    Py_BEGIN_ALLOW_THREADS
    n = tp_session_operations(s, &ops, &e);
    Py_END_ALLOW_THREADS
    p->queries--;
    if (n < 0)
        return PyErr_NoMemory();
    PyObject *d = summary_dict(ops, n);
    tp_free(ops);
    return d;
}

static int profiler_close_run(ProfilerObject *p);

/* Closes once; 0, or -1 with an exception (an I/O error when writing).
 * _closing() is true meanwhile; the closed hook runs when the outermost
 * close is over (a signal that came during the close is handled then). */
static int profiler_close_impl(ProfilerObject *p)
{
    if (p->closed)
        return 0;
    g_closing++;
    int rc = profiler_close_run(p);
    if (--g_closing == 0 && g_closed_hook) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        call_hook_quietly(g_closed_hook, NULL);
        PyErr_Restore(et, ev, tb);
    }
    return rc;
}

static int profiler_close_run(ProfilerObject *p)
{
    if (p->s && !p->final_summary) {
        p->final_summary = live_summary(p);
        if (!p->final_summary)
            PyErr_Clear();
    }
    tp_session *s = p->s;
    p->s = NULL; /* from here no Python thread can reach the session */
    p->closed = 1;
    list_remove(p);
    if (!s)
        return 0;
    p->final_steps = tp_session_steps(s);
    while (p->queries > 0) { /* summary() running in another thread */
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    tp_error e;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tp_session_close(s, &e);
    Py_END_ALLOW_THREADS
    core_memory_detach(p);
    Py_CLEAR(p->step_hook);
    PyObject *hooks = p->close_hooks;
    p->close_hooks = NULL;
    for (Py_ssize_t i = 0; hooks && opened_here(p) && i < PyList_GET_SIZE(hooks); i++)
        call_hook_quietly(PyList_GET_ITEM(hooks, i), NULL);
    Py_XDECREF(hooks);
    if (rc != 0) {
        PyErr_Format(PyExc_OSError, "trainprof: closing the session: %s", e.message);
        return -1;
    }
    return 0;
}

static PyObject *profiler_close(ProfilerObject *p, PyObject *unused)
{
    if (profiler_close_impl(p) != 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Closes with the exception (if any) printed, never raised. */
static void close_quietly(ProfilerObject *p)
{
    if (profiler_close_impl(p) != 0)
        PyErr_WriteUnraisable((PyObject *)p);
}

PyObject *core_close_all(PyObject *mod, PyObject *unused)
{
    while (g_open) {
        ProfilerObject *p = (ProfilerObject *)Py_NewRef(g_open);
        close_quietly(p);
        p->closed = 2; /* the program did not ask: its later calls record nothing */
        Py_DECREF(p);
    }
    Py_RETURN_NONE;
}

static void profiler_finalize(ProfilerObject *p)
{
    if (!p->s || p->closed)
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (opened_here(p))
        PyErr_WarnFormat(PyExc_ResourceWarning, 1, "trainprof: profiler %R garbage-collected "
                         "without close(): closed now", p->run_dir);
    if (PyErr_Occurred())
        PyErr_WriteUnraisable((PyObject *)p);
    close_quietly(p);
    PyErr_Restore(et, ev, tb);
}

static int profiler_traverse(ProfilerObject *p, visitproc visit, void *arg)
{
    Py_VISIT(p->config);
    Py_VISIT(p->zones);
    Py_VISIT(p->final_summary);
    Py_VISIT(p->provider);
    Py_VISIT(p->step_hook);
    Py_VISIT(p->close_hooks);
    Py_VISIT(p->dict);
    return 0;
}

static int profiler_clear(ProfilerObject *p)
{
    Py_CLEAR(p->zones);
    Py_CLEAR(p->final_summary);
    Py_CLEAR(p->provider);
    Py_CLEAR(p->step_hook);
    Py_CLEAR(p->close_hooks);
    Py_CLEAR(p->dict);
    return 0;
}

static void profiler_dealloc(ProfilerObject *p)
{
    if (PyObject_CallFinalizerFromDealloc((PyObject *)p) < 0)
        return; /* resurrected */
    PyObject_GC_UnTrack(p);
    if (p->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)p);
    profiler_clear(p);
    Py_CLEAR(p->config);
    Py_CLEAR(p->run_dir);
    PyMem_Free(p->timer_begin);
    PyMem_Free(p->timer_id);
    PyMem_Free(p->timer_hash);
    Py_TYPE(p)->tp_free(p); /* a subclass's type is released by subtype_dealloc */
}

/* ---- recording ------------------------------------------------------------ */

static PyObject *profiler_enter(ProfilerObject *p, PyObject *unused)
{
    if (p->closed)
        return PyErr_Format(Core_ProfilerClosedError, "the profiler is closed");
    return Py_NewRef(p);
}

static PyObject *profiler_exit(ProfilerObject *p, PyObject *const *args, Py_ssize_t n)
{
    if (profiler_close_impl(p) != 0)
        return NULL;
    Py_RETURN_FALSE;
}

static core_params STEP_PARAMS = {"step()", {"samples"}, 1, 0, {NULL}};

static PyObject *profiler_step(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames)
{
    tp_session *s;
    PyObject *a[1];
    uint64_t samples = 0;
    if (core_args(&STEP_PARAMS, args, n, kwnames, a) != 0 || core_live(p, &s) != 0)
        return NULL;
    if (a[0] && a[0] != Py_None && core_count_arg(a[0], "samples", &samples) != 0)
        return NULL;
    if (s) {
        core_name_thread(p);
        tp_step_end(s, samples);
        if (p->step_hook && opened_here(p) && call_hook(p->step_hook, NULL) != 0)
            return NULL; /* Ctrl-C (or a handler's sys.exit) during the hook */
    }
    Py_RETURN_NONE;
}

static PyObject *profiler_step_begin(ProfilerObject *p, PyObject *unused)
{
    tp_session *s;
    if (core_live(p, &s) != 0)
        return NULL;
    if (s) {
        core_name_thread(p);
        tp_step_begin(s);
    }
    Py_RETURN_NONE;
}

static PyObject *profiler_epoch_end(ProfilerObject *p, PyObject *unused)
{
    tp_session *s;
    if (core_live(p, &s) != 0)
        return NULL;
    tp_epoch_end(s);
    Py_RETURN_NONE;
}

static const char *name_arg(PyObject *name, const char *what)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "%s name must be str, not %.100s", what, Py_TYPE(name)->tp_name);
        return NULL;
    }
    return core_name_utf8(name, what);
}

static core_params COUNTER_PARAMS = {"counter()", {"name", "value"}, 2, 2, {NULL}};

static PyObject *profiler_counter(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                                  PyObject *kwnames)
{
    tp_session *s;
    PyObject *a[2];
    if (core_args(&COUNTER_PARAMS, args, n, kwnames, a) != 0 ||
        core_live(p, &s) != 0)
        return NULL;
    const char *name = name_arg(a[0], "counter");
    if (!name)
        return NULL;
    if (!PyFloat_Check(a[1]) && !PyLong_Check(a[1]) && !PyNumber_Check(a[1]))
        return PyErr_Format(PyExc_TypeError, "counter value must be a number, not %.100s",
                            Py_TYPE(a[1])->tp_name);
    double v = PyFloat_AsDouble(a[1]); /* __float__: numpy scalars, 0-d tensors */
    if (v == -1.0 && PyErr_Occurred())
        return NULL;
    if (s) {
        core_name_thread(p);
        tp_counter(s, name, v);
    }
    Py_RETURN_NONE;
}

static core_params MARK_PARAMS = {"mark()", {"name"}, 1, 1, {NULL}};
static core_params ZONE_PARAMS = {"zone()", {"name"}, 1, 1, {NULL}};

static PyObject *profiler_mark(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames)
{
    tp_session *s;
    PyObject *a[1];
    if (core_args(&MARK_PARAMS, args, n, kwnames, a) != 0 || core_live(p, &s) != 0)
        return NULL;
    const char *c = name_arg(a[0], "mark");
    if (!c)
        return NULL;
    if (s) {
        core_name_thread(p);
        tp_mark(s, c);
    }
    Py_RETURN_NONE;
}

static PyObject *profiler_zone(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                               PyObject *kwnames)
{
    PyObject *a[1];
    if (core_args(&ZONE_PARAMS, args, n, kwnames, a) != 0)
        return NULL;
    if (p->closed == 1)
        return PyErr_Format(Core_ProfilerClosedError, "the profiler is closed");
    if (!PyUnicode_Check(a[0]))
        return PyErr_Format(PyExc_TypeError, "zone name must be str, not %.100s", Py_TYPE(a[0])->tp_name);
    return (PyObject *)core_zone_get(p, a[0]);
}

static PyObject *profiler_summary(ProfilerObject *p, PyObject *unused)
{
    if (p->final_summary)
        return PyDict_Copy(p->final_summary);
    if (!p->s)
        return PyDict_New();
    return live_summary(p);
}

static PyObject *profiler_stats(ProfilerObject *p, PyObject *unused)
{
    tp_session_stats st;
    tp_session_get_stats(p->s, &st);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:d}", "steps", (unsigned long long)st.steps,
                         "events_recorded", (unsigned long long)st.events_recorded,
                         "events_dropped", (unsigned long long)st.events_dropped,
                         "unbalanced_zones", (unsigned long long)st.unbalanced_zones,
                         "io_errors", (unsigned long long)st.io_errors,
                         "trace_files", (unsigned long long)st.trace_files,
                         "mean_step_seconds", st.mean_step_seconds);
}

static PyObject *profiler_config_get(ProfilerObject *p, PyObject *key)
{
    if (!p->config)
        return PyErr_Format(PyExc_RuntimeError, "the profiler was never initialized");
    PyObject *v = PyObject_CallMethod(p->config, "get", "O", key);
    if (!v && PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return v;
}

static PyObject *profiler_start_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                                      PyObject *kwnames)
{
    return core_start_timer(p, args, n, kwnames);
}

static PyObject *profiler_end_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                                    PyObject *kwnames)
{
    return core_end_timer(p, args, n, kwnames);
}

static PyObject *profiler_set_step_hook(ProfilerObject *p, PyObject *fn)
{
    Py_XSETREF(p->step_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *profiler_add_close_hook(ProfilerObject *p, PyObject *fn)
{
    if (p->closed)
        return PyErr_Format(Core_ProfilerClosedError, "the profiler is closed");
    if (!p->close_hooks && !(p->close_hooks = PyList_New(0)))
        return NULL;
    if (PyList_Append(p->close_hooks, fn) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *profiler_set_memory_provider(ProfilerObject *p, PyObject *fn)
{
    return core_set_memory_provider(p, fn);
}

/* ---- constructors from each project's configuration spelling -------------- */

static PyObject *make(PyObject *cls, ConfigObject *c)
{
    PyObject *kw = Py_BuildValue("{s:O}", "config", (PyObject *)c);
    PyObject *empty = PyTuple_New(0);
    PyObject *p = kw && empty ? PyObject_Call(cls, empty, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    return p;
}

static PyObject *profiler_from_args(PyObject *cls, PyObject *argv)
{
    ConfigObject *c = core_config_new();
    PyObject *rest = c ? PyObject_CallMethod((PyObject *)c, "parse_args", "O", argv) : NULL;
    PyObject *p = rest ? make(cls, c) : NULL;
    PyObject *r = p ? PyTuple_Pack(2, p, rest) : NULL;
    Py_XDECREF(c);
    Py_XDECREF(rest);
    Py_XDECREF(p);
    return r;
}

static PyObject *profiler_from_yaml(PyObject *cls, PyObject *path)
{
    ConfigObject *c = core_config_new();
    PyObject *r = c ? PyObject_CallMethod((PyObject *)c, "load_yaml", "O", path) : NULL;
    PyObject *p = r ? make(cls, c) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(c);
    return p;
}

static PyObject *profiler_from_mapping(PyObject *cls, PyObject *mapping)
{
    ConfigObject *c = core_config_new();
    PyObject *p = c && core_config_update(c, mapping) == 0 ? make(cls, c) : NULL;
    Py_XDECREF(c);
    return p;
}

/* ---- attributes ----------------------------------------------------------- */

static PyObject *get_run_dir(ProfilerObject *p, void *unused) { return Py_NewRef(p->run_dir); }
static PyObject *get_closed(ProfilerObject *p, void *unused) { return PyBool_FromLong(p->closed); }
static PyObject *get_enabled(ProfilerObject *p, void *unused)
{
    return PyBool_FromLong(p->run_dir != Py_None);
}
static PyObject *get_steps(ProfilerObject *p, void *unused)
{
    return PyLong_FromUnsignedLongLong(p->closed ? p->final_steps : tp_session_steps(p->s));
}
static PyObject *get_config(ProfilerObject *p, void *unused)
{
    return Py_NewRef(p->config ? p->config : Py_None);
}

static PyGetSetDef profiler_getset[] = {
    {"run_dir", (getter)get_run_dir, NULL, "the run directory (str), None when profiling is off", NULL},
    {"closed", (getter)get_closed, NULL, "True once close() ran", NULL},
    {"enabled", (getter)get_enabled, NULL, "False when profiling.enabled is false", NULL},
    {"steps", (getter)get_steps, NULL, "steps ended so far", NULL},
    {"captures", (getter)core_captures, NULL,
     "flight-recorder captures written so far (0 once closed; captures.json lists them)", NULL},
    {"config", (getter)get_config, NULL, "the trainprof._core.Config the session was opened with", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define FAST(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef profiler_methods[] = {
    {"__enter__", (PyCFunction)profiler_enter, METH_NOARGS, NULL},
    {"__exit__", FAST(profiler_exit), METH_FASTCALL, NULL},
    {"close", (PyCFunction)profiler_close, METH_NOARGS,
     "close(): writes every output file; idempotent"},
    {"step", FAST(profiler_step), METH_FASTCALL | METH_KEYWORDS,
     "step(samples=None): ends the current step and begins the next"},
    {"step_begin", (PyCFunction)profiler_step_begin, METH_NOARGS,
     "step_begin(): marks where a step starts (optional; step() ends it)"},
    {"epoch_end", (PyCFunction)profiler_epoch_end, METH_NOARGS, "marks the end of an epoch"},
    {"zone", FAST(profiler_zone), METH_FASTCALL | METH_KEYWORDS,
     "zone(name) -> a reusable Zone: `with prof.zone(n):` or `@prof.zone(n)`"},
    {"counter", FAST(profiler_counter), METH_FASTCALL | METH_KEYWORDS, "counter(name, value): a counter sample"},
    {"mark", FAST(profiler_mark), METH_FASTCALL | METH_KEYWORDS, "mark(name): an instant event"},
    {"capture", FAST(core_capture), METH_FASTCALL | METH_KEYWORDS,
     "capture(reason='user', detail=None) -> bool: the flight recorder writes its last steps "
     "into captures/ (on the collector thread; False when capture is off)"},
    {"summary", (PyCFunction)profiler_summary, METH_NOARGS,
     "summary() -> {op: {count, total_time, avg_time, self_time, min, max, p50, p90, p99}} (s)"},
    {"stats", (PyCFunction)profiler_stats, METH_NOARGS,
     "stats() -> session counts: steps, events, dropped, unbalanced_zones, io_errors ..."},
    {"config_get", (PyCFunction)profiler_config_get, METH_O,
     "config_get(key) -> the effective value's canonical text"},
    {"start_timer", FAST(profiler_start_timer), METH_FASTCALL | METH_KEYWORDS, "start_timer(name) -> token"},
    {"sync", (PyCFunction)core_sync, METH_O,
     "sync(barrier): align this rank's clock to rank 0's across barrier() (every rank calls it)"},
    {"clock_offset", (PyCFunction)core_clock_offset, METH_NOARGS,
     "clock_offset() -> (offset_ns, error_ns) to rank 0 after sync(), else None"},
    {"end_timer", FAST(profiler_end_timer), METH_FASTCALL | METH_KEYWORDS,
     "end_timer(name, token): records the time since start_timer as a zone"},
    {"set_memory_provider", (PyCFunction)profiler_set_memory_provider, METH_O,
     "set_memory_provider(fn): fn() -> {device: {bytes_in_use, peak_bytes_in_use, ...}}"},
    {"_set_step_hook", (PyCFunction)profiler_set_step_hook, METH_O,
     "_set_step_hook(fn): fn() after each step() (None clears)"},
    {"_add_close_hook", (PyCFunction)profiler_add_close_hook, METH_O,
     "_add_close_hook(fn): fn() once, after the session closed (files final)"},
    {"from_args", (PyCFunction)profiler_from_args, METH_O | METH_CLASS,
     "from_args(argv) -> (profiler, the arguments that are not profiling flags)"},
    {"from_yaml", (PyCFunction)profiler_from_yaml, METH_O | METH_CLASS,
     "from_yaml(path): the `profiling:` section of a training YAML"},
    {"from_mapping", (PyCFunction)profiler_from_mapping, METH_O | METH_CLASS,
     "from_mapping(d): a dict or DictConfig (its `profiling` section when it has one)"},
    {NULL, NULL, 0, NULL}};

PyTypeObject Core_ProfilerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof._core.Profiler",
    .tp_basicsize = sizeof(ProfilerObject),
    .tp_dealloc = (destructor)profiler_dealloc,
    .tp_finalize = (destructor)profiler_finalize,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Profiler(config=None, **overrides): one trainprof session.",
    .tp_traverse = (traverseproc)profiler_traverse,
    .tp_clear = (inquiry)profiler_clear,
    .tp_weaklistoffset = offsetof(ProfilerObject, weakrefs),
    .tp_dictoffset = offsetof(ProfilerObject, dict),
    .tp_methods = profiler_methods,
    .tp_getset = profiler_getset,
    .tp_init = (initproc)profiler_init,
    .tp_new = profiler_new,
};

int core_profiler_ready(void)
{
    return PyType_Ready(&Core_ProfilerType);
}
