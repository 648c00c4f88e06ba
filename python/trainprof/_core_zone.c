/* Zone: a named operation of one profiler, made once per name and reused
 * (`with zone:`, `@zone`); timers (start_timer/end_timer); thread names. */
#include "_core_internal.h"

#include <string.h>

/* Zones cached per profiler; names beyond this many get a fresh zone per
 * call (the C name registry is bounded as well). */
#define ZONE_CACHE_MAX 4096

__thread uint32_t core_named_serial __attribute__((tls_model("initial-exec")));

void core_name_thread_slow(ProfilerObject *p)
{
    core_named_serial = p->serial;
    if (!p->s)
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mod = PyImport_ImportModule("threading");
    PyObject *t = mod ? PyObject_CallMethod(mod, "current_thread", NULL) : NULL;
    PyObject *name = t ? PyObject_GetAttrString(t, "name") : NULL;
    const char *c = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (c)
        tp_thread_name(p->s, c);
    Py_XDECREF(name);
    Py_XDECREF(t);
    Py_XDECREF(mod);
    PyErr_Clear(); /* a thread without a readable name keeps its OS name */
    PyErr_Restore(et, ev, tb);
}

/* ---- Zone -------------------------------------------------------------------- */

static PyMethodDef zone_methods[3];

/* `with zone:` looks __enter__ and __exit__ up on the type, and a method
 * descriptor would allocate a bound method for each at every `with`. The
 * type holds these descriptors instead: they return the zone's own bound
 * methods, made once with the zone. */
typedef struct {
    PyObject_HEAD
    int which; /* 0 __enter__, 1 __exit__ */
} BoundDescrObject;

static PyObject *bound_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    return Py_NewRef(((ZoneObject *)obj)->bound[((BoundDescrObject *)self)->which]);
}

/* Zone.__enter__(zone) / Zone.__exit__(zone, ...) called on the class */
static PyObject *bound_descr_call(PyObject *self, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) < 1 || !PyObject_TypeCheck(PyTuple_GET_ITEM(args, 0), &Core_ZoneType))
        return PyErr_Format(PyExc_TypeError, "expects a trainprof Zone as first argument");
    PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    PyObject *m = bound_descr_get(self, PyTuple_GET_ITEM(args, 0), NULL);
    PyObject *r = rest && m ? PyObject_Call(m, rest, kw) : NULL;
    Py_XDECREF(rest);
    Py_XDECREF(m);
    return r;
}

static PyTypeObject BoundDescrType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof._core.zone_method",
    .tp_basicsize = sizeof(BoundDescrObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_descr_get = bound_descr_get,
    .tp_call = bound_descr_call,
};

const char *core_name_utf8(PyObject *name, const char *what)
{
    Py_ssize_t n;
    const char *c = PyUnicode_AsUTF8AndSize(name, &n);
    if (c && strlen(c) != (size_t)n) { /* the C side would record only up to the NUL */
        PyErr_Format(PyExc_ValueError, "%s name %R contains a NUL character", what, name);
        return NULL;
    }
    return c;
}

static ZoneObject *zone_new(ProfilerObject *p, PyObject *name)
{
    const char *c = core_name_utf8(name, "zone");
    if (!c)
        return NULL;
    ZoneObject *z = PyObject_GC_New(ZoneObject, &Core_ZoneType);
    if (!z)
        return NULL;
    z->prof = (ProfilerObject *)Py_NewRef(p);
    z->name = Py_NewRef(name);
    z->site.name = c; /* UTF-8 cached inside the str object `name` */
    z->site.file = "<python>";
    z->site.line = 0;
    z->site.id = 0;
    z->bound[0] = z->bound[1] = NULL;
    PyObject_GC_Track(z);
    for (int i = 0; i < 2; i++) {
        if (!(z->bound[i] = PyCFunction_New(&zone_methods[i], (PyObject *)z))) {
            Py_DECREF(z);
            return NULL;
        }
    }
    return z;
}

ZoneObject *core_zone_get(ProfilerObject *p, PyObject *name)
{
    PyObject *z = p->zones ? PyDict_GetItemWithError(p->zones, name) : NULL;
    if (z)
        return (ZoneObject *)Py_NewRef(z);
    if (PyErr_Occurred())
        return NULL;
    ZoneObject *n = zone_new(p, name);
    if (n && p->zones && PyDict_GET_SIZE(p->zones) < ZONE_CACHE_MAX &&
        PyDict_SetItem(p->zones, name, (PyObject *)n) != 0)
        Py_CLEAR(n);
    return n;
}

static PyObject *closed_error(void)
{
    return PyErr_Format(Core_ProfilerClosedError, "the profiler is closed");
}

static PyObject *zone_enter(ZoneObject *z, PyObject *unused)
{
    ProfilerObject *p = z->prof;
    tp_session *s = p->s;
    if (__builtin_expect(s != NULL, 1)) {
        core_name_thread(p);
        tp_zone_begin_site(s, &z->site);
    } else if (p->closed == 1) {
        return closed_error();
    }
    return Py_NewRef(z);
}

/* Ends the zone whatever the exception; never suppresses it. A profiler
 * closed inside the zone has nothing left to end. Each zone ends its own
 * interval: A entered, B entered, A exited, B exited records A and B as
 * they were (the overlap is counted and warned about by the C layer). */
static PyObject *zone_exit(ZoneObject *z, PyObject *const *args, Py_ssize_t n)
{
    tp_session *s = z->prof->s;
    if (__builtin_expect(s != NULL, 1))
        tp_zone_end_site(s, &z->site); /* its own zone, even out of order */
    Py_RETURN_FALSE;
}

typedef struct {
    PyObject_HEAD
    ZoneObject *zone;
    PyObject *func;
    PyObject *dict;
    vectorcallfunc vectorcall;
} ZoneCallObject;

static PyObject *update_wrapper; /* functools.update_wrapper */
static PyObject *zonecall_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames);

/* @zone: a callable that runs func inside the zone (functools.wraps'
 * metadata copied; binds as a method like a function does). */
static PyObject *zone_call(ZoneObject *z, PyObject *args, PyObject *kw)
{
    PyObject *func;
    if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_UnpackTuple(args, "Zone", 1, 1, &func))
        return PyErr_Format(PyExc_TypeError, "a zone decorates one callable: @prof.zone(name)");
    if (!PyCallable_Check(func))
        return PyErr_Format(PyExc_TypeError, "a zone decorates a callable, not %.100s",
                            Py_TYPE(func)->tp_name);
    ZoneCallObject *w = PyObject_GC_New(ZoneCallObject, &Core_ZoneCallType);
    if (!w)
        return NULL;
    w->zone = (ZoneObject *)Py_NewRef(z);
    w->func = Py_NewRef(func);
    w->dict = NULL;
    w->vectorcall = NULL;
    PyObject_GC_Track(w);
    w->vectorcall = (vectorcallfunc)zonecall_vectorcall;
    if (!update_wrapper) {
        PyObject *ft = PyImport_ImportModule("functools");
        update_wrapper = ft ? PyObject_GetAttrString(ft, "update_wrapper") : NULL;
        Py_XDECREF(ft);
    }
    PyObject *r = update_wrapper ? PyObject_CallFunctionObjArgs(update_wrapper, w, func, NULL) : NULL;
    if (!r) {
        Py_DECREF(w);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *)w;
}

static PyObject *zonecall_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ZoneCallObject *w = (ZoneCallObject *)self;
    ProfilerObject *p = w->zone->prof;
    tp_session *s = p->s;
    if (s) {
        core_name_thread(p);
        tp_zone_begin_site(s, &w->zone->site);
    } else if (p->closed == 1) {
        return closed_error();
    }
    PyObject *r = PyObject_Vectorcall(w->func, args, nargsf, kwnames);
    if (s && p->s == s) /* still open: the call may have closed it */
        tp_zone_end_site(s, &w->zone->site);
    return r;
}

static PyObject *zonecall_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static int zonecall_traverse(ZoneCallObject *w, visitproc visit, void *arg)
{
    Py_VISIT(w->zone);
    Py_VISIT(w->func);
    Py_VISIT(w->dict);
    return 0;
}

static int zonecall_clear(ZoneCallObject *w)
{
    Py_CLEAR(w->zone);
    Py_CLEAR(w->func);
    Py_CLEAR(w->dict);
    return 0;
}

static void zonecall_dealloc(ZoneCallObject *w)
{
    PyObject_GC_UnTrack(w);
    zonecall_clear(w);
    PyObject_GC_Del(w);
}

static PyObject *zonecall_repr(ZoneCallObject *w)
{
    return PyUnicode_FromFormat("<trainprof zone %R around %R>", w->zone->name, w->func);
}

static PyGetSetDef zonecall_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Core_ZoneCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof._core.ZoneCall",
    .tp_basicsize = sizeof(ZoneCallObject),
    .tp_dealloc = (destructor)zonecall_dealloc,
    .tp_vectorcall_offset = offsetof(ZoneCallObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)zonecall_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A function decorated with a trainprof zone.",
    .tp_traverse = (traverseproc)zonecall_traverse,
    .tp_clear = (inquiry)zonecall_clear,
    .tp_descr_get = zonecall_get,
    .tp_getset = zonecall_getset,
    .tp_dictoffset = offsetof(ZoneCallObject, dict),
};

static int zone_traverse(ZoneObject *z, visitproc visit, void *arg)
{
    Py_VISIT(z->prof);
    Py_VISIT(z->bound[0]);
    Py_VISIT(z->bound[1]);
    return 0;
}

static int zone_clear(ZoneObject *z)
{
    Py_CLEAR(z->prof);
    Py_CLEAR(z->bound[0]);
    Py_CLEAR(z->bound[1]);
    return 0;
}

static void zone_dealloc(ZoneObject *z)
{
    PyObject_GC_UnTrack(z);
    zone_clear(z);
    Py_CLEAR(z->name);
    PyObject_GC_Del(z);
}

static PyObject *zone_repr(ZoneObject *z)
{
    return PyUnicode_FromFormat("<trainprof zone %R>", z->name);
}

static PyObject *zone_get_name(ZoneObject *z, void *unused) { return Py_NewRef(z->name); }

static PyGetSetDef zone_getset[] = {
    {"name", (getter)zone_get_name, NULL, "the operation's name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* Not the type's tp_methods: bound once per zone (see BoundDescrObject). */
static PyMethodDef zone_methods[3] = {
    {"__enter__", (PyCFunction)zone_enter, METH_NOARGS, "begins the zone"},
    {"__exit__", (PyCFunction)(void (*)(void))zone_exit, METH_FASTCALL,
     "ends the zone (exceptions propagate)"},
    {NULL, NULL, 0, NULL}};

PyTypeObject Core_ZoneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof._core.Zone",
    .tp_basicsize = sizeof(ZoneObject),
    .tp_dealloc = (destructor)zone_dealloc,
    .tp_repr = (reprfunc)zone_repr,
    .tp_call = (ternaryfunc)zone_call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A named operation: `with zone:` or `@zone` (reusable, reentrant).",
    .tp_traverse = (traverseproc)zone_traverse,
    .tp_clear = (inquiry)zone_clear,
    .tp_getset = zone_getset,
};

/* ---- timers ------------------------------------------------------------------- */

static core_params START_PARAMS = {"start_timer()", {"name"}, 1, 1, {NULL}};
static core_params END_PARAMS = {"end_timer()", {"name", "token"}, 2, 2, {NULL}};

PyObject *core_start_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                           PyObject *kwnames)
{
    PyObject *a[1];
    if (core_args(&START_PARAMS, args, n, kwnames, a) != 0)
        return NULL;
    if (!PyUnicode_Check(a[0]))
        return PyErr_Format(PyExc_TypeError, "timer name must be str, not %.100s",
                            Py_TYPE(a[0])->tp_name);
    if (p->closed == 1)
        return closed_error();
    if (!core_name_utf8(a[0], "timer"))
        return NULL;
    Py_hash_t h = PyObject_Hash(a[0]); /* cached in the str */
    if (h == -1)
        return NULL;
    uint32_t seq = ++p->timer_seq;
    if (seq == 0)
        seq = ++p->timer_seq;
    uint32_t slot = seq % CORE_TIMER_SLOTS;
    uint64_t now = tp_session_now(p->s);
    p->timer_begin[slot] = now ? now : 1;
    p->timer_id[slot] = seq;
    p->timer_hash[slot] = h;
    return PyLong_FromUnsignedLongLong((uint64_t)p->serial << 32 | seq);
}

PyObject *core_end_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                         PyObject *kwnames)
{
    PyObject *a[2];
    if (core_args(&END_PARAMS, args, n, kwnames, a) != 0)
        return NULL;
    args = a;
    if (!PyUnicode_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "timer name must be str, not %.100s",
                            Py_TYPE(args[0])->tp_name);
    if (PyBool_Check(args[1]) || !PyIndex_Check(args[1]))
        return PyErr_Format(PyExc_TypeError, "timer token must be the int start_timer returned, "
                            "not %.100s", Py_TYPE(args[1])->tp_name);
    if (p->closed == 1)
        return closed_error();
    uint64_t t;
    if (core_count_arg(args[1], "timer token", &t) != 0) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError))
            return NULL;
        PyErr_Clear(), t = 0; /* negative or huge: not a token */
    }
    uint32_t seq = (uint32_t)t, slot = seq % CORE_TIMER_SLOTS;
    if (t >> 32 != p->serial)
        return PyErr_Format(PyExc_ValueError, "end_timer(%R): the token was not made by this "
                            "profiler's start_timer", args[0]);
    if (p->timer_id[slot] != seq || p->timer_begin[slot] == 0)
        return PyErr_Format(PyExc_ValueError, "end_timer(%R): the token was already ended (or "
                            "more than %d timers were open at once)", args[0], CORE_TIMER_SLOTS);
    Py_hash_t h = PyObject_Hash(args[0]);
    if (h == -1)
        return NULL;
    if (h != p->timer_hash[slot])
        return PyErr_Format(PyExc_ValueError, "end_timer(%R): the token was made by start_timer "
                            "of another name (the timer stays open)", args[0]);
    uint64_t begin = p->timer_begin[slot];
    p->timer_begin[slot] = 0;
    tp_session *s = p->s;
    if (!s)
        Py_RETURN_NONE;
    ZoneObject *z = core_zone_get(p, args[0]);
    if (!z)
        return NULL;
    core_name_thread(p);
    tp_zone_complete(s, &z->site, begin);
    Py_DECREF(z);
    Py_RETURN_NONE;
}

int core_zone_ready(void)
{
    if (PyType_Ready(&BoundDescrType) < 0 || PyType_Ready(&Core_ZoneType) < 0 ||
        PyType_Ready(&Core_ZoneCallType) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        BoundDescrObject *d = PyObject_New(BoundDescrObject, &BoundDescrType);
        if (!d)
            return -1;
        d->which = i;
        int rc = PyDict_SetItemString(Core_ZoneType.tp_dict, zone_methods[i].ml_name, (PyObject *)d);
        Py_DECREF(d);
        if (rc != 0)
            return -1;
    }
    PyType_Modified(&Core_ZoneType);
    return 0;
}
