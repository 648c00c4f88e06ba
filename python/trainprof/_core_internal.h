/*
 * _core_internal.h - the CPython extension trainprof._core: types shared by
 * its files. The extension is one more layer over the public C API: it
 * includes trainprof.h only.
 *
 *   _core.c          module, exceptions, atexit close, version, cli path
 *   _core_config.c   Config (a tp_config), Python values -> key text, errors
 *   _core_profiler.c Profiler (a tp_session): steps, counters, summary, close
 *   _core_zone.c     Zone (context manager / decorator), thread names, timers
 *   _core_memory.c   the device-memory provider called on the sampler thread
 *   _core_args.c     keyword arguments, integer-like counts
 */
#ifndef TRAINPROF_CORE_INTERNAL_H
#define TRAINPROF_CORE_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "trainprof.h"

/* Open start_timer tokens per profiler: a token is (profiler serial << 32)
 * | sequence; the slot of a sequence is sequence % TIMER_SLOTS. More open
 * timers than this overwrite the oldest ones (their end raises). */
#define CORE_TIMER_SLOTS 4096

typedef struct {
    PyObject_HEAD
    tp_config *cfg;
} ConfigObject;

typedef struct ProfilerObject {
    PyObject_HEAD
    tp_session *s;          /* NULL: profiling off, closed or never opened */
    PyObject *config;       /* ConfigObject */
    uint32_t serial;        /* process-unique, never 0 */
    int initialized;
    int closed;             /* 0 open; 1 close() ran: recording raises; 2 closed at
                               exit or by a signal (_close_all): recording is a no-op */
    int queries;            /* summary() calls in the C layer (GIL released) */
    uint64_t final_steps;   /* steps at close */
    long pid;               /* process that opened the session */
    PyObject *run_dir;      /* str or None */
    PyObject *zones;        /* dict: name (str) -> ZoneObject, reused */
    PyObject *final_summary;/* dict, set at close */
    PyObject *provider;     /* device memory provider or NULL */
    PyObject *step_hook;    /* called after each step(), or NULL */
    PyObject *close_hooks;  /* list, called once after the session closed */
    int provider_failed;
    uint32_t timer_seq;
    uint64_t *timer_begin;  /* CORE_TIMER_SLOTS begin ticks, 0 = free */
    uint32_t *timer_id;     /* sequence owning the slot */
    Py_hash_t *timer_hash;  /* hash of the timer's name (end_timer checks it) */
    struct ProfilerObject *next_open, *prev_open; /* closed at exit */
    PyObject *weakrefs;
    PyObject *dict;
} ProfilerObject;

typedef struct {
    PyObject_HEAD
    ProfilerObject *prof;   /* strong reference */
    PyObject *name;         /* str */
    tp_site site;           /* site.name points into `name`'s UTF-8 */
    PyObject *bound[2];     /* __enter__, __exit__ bound to this zone, made once */
} ZoneObject;

extern PyTypeObject Core_ConfigType, Core_ProfilerType, Core_ZoneType, Core_ZoneCallType;
extern PyObject *Core_ConfigError, *Core_ProfilerClosedError;

/* _core_config.c */
int core_config_ready(void);
/* Converts a Python value to the key's text form in buf; -1 with TypeError. */
int core_value_text(PyObject *key, PyObject *value, char *buf, size_t n);
/* Raises ConfigError from a filled tp_error; returns NULL. */
PyObject *core_raise_config_error(const tp_error *e);
ConfigObject *core_config_new(void);
int core_config_set(ConfigObject *c, PyObject *key, PyObject *value);
int core_config_update(ConfigObject *c, PyObject *mapping);

/* _core_profiler.c */
int core_profiler_ready(void);
/* The session to record into, or NULL (off, or closed by a signal: the
 * program goes on recording nothing); -1 with ProfilerClosedError after
 * close(). */
static inline int core_live(ProfilerObject *p, tp_session **s)
{
    if (__builtin_expect(p->closed == 1, 0)) {
        PyErr_SetString(Core_ProfilerClosedError, "the profiler is closed");
        return -1;
    }
    *s = p->s;
    return 0;
}
/* Closes every profiler still open (atexit). */
PyObject *core_close_all(PyObject *mod, PyObject *unused);
/* _set_open_hook(fn): fn(prof) after every Profiler() initialized, profiling
 * off included (None clears). */
PyObject *core_set_open_hook(PyObject *mod, PyObject *fn);
/* _set_closed_hook(fn): fn() after every close, once the outermost close
 * on the stack is over (None clears); _closing(): a close is under way. */
PyObject *core_set_closed_hook(PyObject *mod, PyObject *fn);
PyObject *core_closing(PyObject *mod, PyObject *unused);

/* _core_zone.c */
int core_zone_ready(void);
/* The reusable zone of `name` for p (new reference), created on first use. */
ZoneObject *core_zone_get(ProfilerObject *p, PyObject *name);
/* The UTF-8 of a name (zone, timer, mark, counter); NULL with ValueError
 * when it holds a NUL (the recorder's names are C strings: "a\0b" would be
 * recorded as "a"). */
const char *core_name_utf8(PyObject *name, const char *what);
/* Names the calling thread after threading.current_thread().name, once per
 * thread and profiler. */
void core_name_thread_slow(ProfilerObject *p);
extern __thread uint32_t core_named_serial __attribute__((tls_model("initial-exec")));
static inline void core_name_thread(ProfilerObject *p)
{
    if (__builtin_expect(core_named_serial != p->serial, 0))
        core_name_thread_slow(p);
}
PyObject *core_start_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                           PyObject *kwnames);
PyObject *core_end_timer(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                         PyObject *kwnames);

/* _core_args.c: arguments by position or keyword. A method's parameters:
 * keys[] are its names interned on first use (a call site's keyword names
 * are interned constants, so a pointer comparison finds them). */
#define CORE_MAX_PARAMS 2
typedef struct {
    const char *fn;                      /* "step()", for messages */
    const char *names[CORE_MAX_PARAMS];
    int n, required;                     /* the first `required` must be given */
    PyObject *keys[CORE_MAX_PARAMS];     /* interned names, NULL until first use */
} core_params;
/* out[0..n) gets the parameters (NULL: not given). 0, or -1 with TypeError
 * naming the function and the parameter. */
int core_args_slow(core_params *P, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                   PyObject **out);
static inline int core_args(core_params *P, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames, PyObject **out)
{
    if (__builtin_expect(nargs <= P->n, 1)) {
        for (int i = 0; i < P->n; i++)
            out[i] = i < nargs ? args[i] : NULL;
        if (!kwnames) {
            if (__builtin_expect(nargs >= P->required, 1))
                return 0;
        } else if (P->keys[0]) { /* keywords by pointer: the common spelling */
            Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
            int ok = 1;
            for (Py_ssize_t k = 0; ok && k < nkw; k++) {
                PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
                int i = 0;
                while (i < P->n && P->keys[i] != kw)
                    i++;
                ok = i < P->n && !out[i];
                if (ok)
                    out[i] = args[nargs + k];
            }
            for (int i = 0; ok && i < P->required; i++)
                ok = out[i] != NULL;
            if (ok)
                return 0;
        }
    }
    return core_args_slow(P, args, nargs, kwnames, out);
}
/* A count from an int or an integer-like (__index__: numpy.int64, a 0-d
 * integer tensor); not a bool. -1 with TypeError/ValueError naming `what`. */
int core_count_arg(PyObject *v, const char *what, uint64_t *out);

/* _core_sync.c (multi-rank jobs) */
PyObject *core_sync(ProfilerObject *p, PyObject *barrier);
PyObject *core_clock_offset(ProfilerObject *p, PyObject *unused);

/* _core_capture.c (the flight recorder, docs/CAPTURES.md) */
/* Registers the Python stack dumper hang captures call (no GIL needed). */
void core_capture_attach(ProfilerObject *p);
PyObject *core_capture(ProfilerObject *p, PyObject *const *args, Py_ssize_t n,
                       PyObject *kwnames);
PyObject *core_captures(ProfilerObject *p, void *unused);

/* _core_memory.c */
PyObject *core_set_memory_provider(ProfilerObject *p, PyObject *fn);
void core_memory_detach(ProfilerObject *p);

#endif
