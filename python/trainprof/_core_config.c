/* Config: a tp_config, set from Python values, mappings, YAML files and
 * command lines; ConfigError from the C layer's tp_error. */
#include "_core_internal.h"

#include <string.h>

PyObject *Core_ConfigError;

/* ---- errors --------------------------------------------------------------- */

/* `key` and `suggestion` as the C message names them: the first
 * "profiling.<key>" and the text of "did you mean `...`". */
static PyObject *message_key(const char *msg)
{
    const char *p = strstr(msg, "profiling.");
    if (!p)
        Py_RETURN_NONE;
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    while (n > 0 && p[n - 1] == '.')
        n--;
    return PyUnicode_DecodeUTF8(p, (Py_ssize_t)n, "replace");
}

static PyObject *message_suggestion(const char *msg)
{
    const char *p = strstr(msg, "did you mean `");
    if (!p)
        Py_RETURN_NONE;
    p += strlen("did you mean `");
    const char *q = strchr(p, '`');
    return PyUnicode_DecodeUTF8(p, q ? (Py_ssize_t)(q - p) : (Py_ssize_t)strlen(p), "replace");
}

static int set_attr(PyObject *o, const char *name, PyObject *v)
{
    if (!v)
        return -1;
    int rc = PyObject_SetAttrString(o, name, v);
    Py_DECREF(v);
    return rc;
}

PyObject *core_raise_config_error(const tp_error *e)
{
    const char *msg = e->message[0] ? e->message : "invalid configuration";
    PyObject *exc = PyObject_CallFunction(Core_ConfigError, "s", msg);
    if (!exc)
        return NULL;
    if (set_attr(exc, "key", message_key(msg)) == 0 &&
        set_attr(exc, "file", e->file[0] ? PyUnicode_DecodeFSDefault(e->file) : Py_NewRef(Py_None)) == 0 &&
        set_attr(exc, "line", e->line ? PyLong_FromLong(e->line) : Py_NewRef(Py_None)) == 0 &&
        set_attr(exc, "column", e->column ? PyLong_FromLong(e->column) : Py_NewRef(Py_None)) == 0 &&
        set_attr(exc, "suggestion", message_suggestion(msg)) == 0 &&
        set_attr(exc, "code", PyLong_FromLong(e->code)) == 0)
        PyErr_SetObject(Core_ConfigError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- Python value -> key text ---------------------------------------------- */

static int item_text(PyObject *v, char *buf, size_t n);

/* list/tuple/ListConfig...: comma-separated items (the C text of lists) */
static int sequence_text(PyObject *v, char *buf, size_t n)
{
    PyObject *it = PyObject_GetIter(v);
    if (!it)
        return -1;
    size_t used = 0;
    buf[0] = '\0';
    PyObject *x;
    while ((x = PyIter_Next(it))) {
        char one[512];
        int rc = item_text(x, one, sizeof one);
        Py_DECREF(x);
        if (rc != 0 || used + strlen(one) + 2 > n) {
            Py_DECREF(it);
            if (rc == 0)
                PyErr_SetString(PyExc_ValueError, "list value too long");
            return -1;
        }
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "", one);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return -1;
    if (used == 0)
        snprintf(buf, n, "none");
    return 0;
}

static int item_text(PyObject *v, char *buf, size_t n)
{
    PyObject *s = NULL;
    if (PyBool_Check(v))
        s = PyUnicode_FromString(v == Py_True ? "true" : "false");
    else if (PyUnicode_Check(v))
        s = Py_NewRef(v);
    else if (PyLong_Check(v) || PyFloat_Check(v) || PyIndex_Check(v))
        s = PyObject_Str(v);
    else if (PyObject_HasAttrString(v, "__fspath__"))
        s = PyOS_FSPath(v);
    else
        return PyErr_Format(PyExc_TypeError, "value of type %.100s", Py_TYPE(v)->tp_name), -1;
    if (s && PyBytes_Check(s))
        Py_SETREF(s, PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(s), PyBytes_GET_SIZE(s)));
    Py_ssize_t len;
    const char *c = s ? PyUnicode_AsUTF8AndSize(s, &len) : NULL;
    if (c && (size_t)len >= n)
        PyErr_SetString(PyExc_ValueError, "configuration value too long");
    else if (c)
        memcpy(buf, c, (size_t)len + 1);
    Py_XDECREF(s);
    return c && (size_t)len < n ? 0 : -1;
}

int core_value_text(PyObject *key, PyObject *value, char *buf, size_t n)
{
    if (PyList_Check(value) || PyTuple_Check(value) ||
        (!PyUnicode_Check(value) && !PyBytes_Check(value) &&
         !PyObject_HasAttrString(value, "__fspath__") && !PyObject_HasAttrString(value, "items") &&
         PyObject_HasAttrString(value, "__iter__")))
        return sequence_text(value, buf, n);
    if (item_text(value, buf, n) != 0) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "configuration key %R: value of type %.100s: expected "
                         "bool, int, float, str, a path or a list of them",
                         key, Py_TYPE(value)->tp_name);
        }
        return -1;
    }
    return 0;
}

/* ---- Config type ------------------------------------------------------------- */

ConfigObject *core_config_new(void)
{
    ConfigObject *c = PyObject_New(ConfigObject, &Core_ConfigType);
    if (!c)
        return NULL;
    c->cfg = tp_config_new();
    if (!c->cfg) {
        Py_DECREF(c);
        PyErr_NoMemory();
        return NULL;
    }
    return c;
}

static PyObject *config_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw)))
        return PyErr_Format(PyExc_TypeError, "Config() takes no arguments");
    return (PyObject *)core_config_new();
}

static void config_dealloc(ConfigObject *c)
{
    tp_config_free(c->cfg);
    PyObject_Free(c);
}

int core_config_set(ConfigObject *c, PyObject *key, PyObject *value)
{
    if (!PyUnicode_Check(key)) {
        PyErr_Format(PyExc_TypeError, "configuration key must be str, not %.100s",
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    if (value == Py_None)
        return 0; /* "not set": the default or a lower source stays */
    const char *k = PyUnicode_AsUTF8(key);
    char text[4096];
    if (!k || core_value_text(key, value, text, sizeof text) != 0)
        return -1;
    tp_error e;
    if (tp_config_set(c->cfg, k, text, &e) != 0) {
        core_raise_config_error(&e);
        return -1;
    }
    return 0;
}

static PyObject *config_set(ConfigObject *c, PyObject *const *args, Py_ssize_t n)
{
    if (n != 2)
        return PyErr_Format(PyExc_TypeError, "set(key, value) takes 2 arguments (%zd given)", n);
    if (core_config_set(c, args[0], args[1]) != 0)
        return NULL;
    Py_RETURN_NONE;
}

/* A value that is itself a mapping (has items()). */
static int is_mapping_like(PyObject *v)
{
    return !PyUnicode_Check(v) && PyObject_HasAttrString(v, "items") &&
           PyObject_HasAttrString(v, "keys");
}

/* Mapping-like: dict, OmegaConf DictConfig ...; the `profiling:` section
 * when there is one, else the keys themselves. */
int core_config_update(ConfigObject *c, PyObject *mapping)
{
    if (!is_mapping_like(mapping)) {
        PyErr_Format(PyExc_TypeError, "expected a mapping (dict, DictConfig), not %.100s",
                     Py_TYPE(mapping)->tp_name);
        return -1;
    }
    PyObject *section = NULL;
    PyObject *pkey = PyUnicode_FromString("profiling");
    if (!pkey)
        return -1;
    int has = PySequence_Contains(mapping, pkey);
    if (has < 0) {
        PyErr_Clear();
        has = 0;
    }
    if (has) {
        section = PyObject_GetItem(mapping, pkey);
        if (section && is_mapping_like(section)) {
            Py_DECREF(pkey);
            int rc = core_config_update(c, section);
            Py_DECREF(section);
            return rc;
        }
        Py_XDECREF(section);
        PyErr_Clear();
    }
    Py_DECREF(pkey);
    PyObject *items = PyObject_CallMethod(mapping, "items", NULL);
    PyObject *it = items ? PyObject_GetIter(items) : NULL;
    Py_XDECREF(items);
    if (!it)
        return -1;
    PyObject *kv;
    int rc = 0;
    while (rc == 0 && (kv = PyIter_Next(it))) {
        PyObject *k = NULL, *v = NULL;
        if (PyArg_ParseTuple(kv, "OO", &k, &v) && !is_mapping_like(v))
            rc = core_config_set(c, k, v);
        else if (PyErr_Occurred())
            rc = -1;
        else
            rc = -1, PyErr_Format(PyExc_TypeError, "configuration key %R: a nested mapping is "
                                  "not a value (only a `profiling` section may nest)", k);
        Py_DECREF(kv);
    }
    Py_DECREF(it);
    return rc == 0 && !PyErr_Occurred() ? 0 : -1;
}

static PyObject *config_update(ConfigObject *c, PyObject *mapping)
{
    if (core_config_update(c, mapping) != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *config_load_yaml(ConfigObject *c, PyObject *path)
{
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(path, &b))
        return NULL;
    tp_error e;
    int rc = tp_config_load_file(c->cfg, PyBytes_AS_STRING(b), &e);
    Py_DECREF(b);
    if (rc != 0)
        return core_raise_config_error(&e);
    Py_RETURN_NONE;
}

static PyObject *config_load_env(ConfigObject *c, PyObject *unused)
{
    tp_error e;
    if (tp_config_load_env(c->cfg, &e) != 0)
        return core_raise_config_error(&e);
    Py_RETURN_NONE;
}

/* Consumes the profiling flags of a list of str; returns the rest. */
static PyObject *config_parse_args(ConfigObject *c, PyObject *argv)
{
    PyObject *seq = PySequence_Fast(argv, "parse_args expects a list of str");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char **v = PyMem_Calloc((size_t)n + 2, sizeof *v);
    PyObject *res = NULL;
    if (!v) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    v[0] = "python";
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(a)) {
            PyErr_Format(PyExc_TypeError, "argument %zd is %.100s, not str", i, Py_TYPE(a)->tp_name);
            goto out;
        }
        if (!(v[i + 1] = (char *)PyUnicode_AsUTF8(a)))
            goto out;
    }
    int argc = (int)n + 1;
    tp_error e;
    if (tp_config_parse_args(c->cfg, &argc, v, &e) != 0) {
        core_raise_config_error(&e);
        goto out;
    }
    res = PyList_New(0);
    for (int i = 1; res && i < argc; i++) {
        PyObject *s = PyUnicode_FromString(v[i]);
        if (!s || PyList_Append(res, s) != 0)
            Py_CLEAR(res);
        Py_XDECREF(s);
    }
out:
    PyMem_Free(v);
    Py_DECREF(seq);
    return res;
}

static PyObject *config_get(ConfigObject *c, PyObject *key)
{
    const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (!k) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "key must be str, not %.100s", Py_TYPE(key)->tp_name);
        return NULL;
    }
    const char *v = tp_config_get(c->cfg, k);
    if (!v)
        return PyErr_Format(PyExc_KeyError, "unknown configuration key %R", key);
    return PyUnicode_FromString(v);
}

static PyObject *owned_text(char *s)
{
    if (!s)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
    tp_free(s);
    return r;
}

static PyObject *config_describe(ConfigObject *c, PyObject *const *args, Py_ssize_t n)
{
    int explain = 0;
    if (n > 1)
        return PyErr_Format(PyExc_TypeError, "describe(explain=False) takes 1 argument");
    if (n == 1 && (explain = PyObject_IsTrue(args[0])) < 0)
        return NULL;
    return owned_text(tp_config_describe(c->cfg, explain));
}

static PyObject *config_to_json(ConfigObject *c, PyObject *unused)
{
    return owned_text(tp_config_to_json(c->cfg));
}

static PyMethodDef config_methods[] = {
    {"set", (PyCFunction)(void (*)(void))config_set, METH_FASTCALL,
     "set(key, value): one key (canonical or alias) from a Python value, flag precedence"},
    {"get", (PyCFunction)config_get, METH_O, "get(key) -> the value's canonical text"},
    {"update", (PyCFunction)config_update, METH_O,
     "update(mapping): keys of a dict/DictConfig (or of its `profiling` section)"},
    {"load_yaml", (PyCFunction)config_load_yaml, METH_O,
     "load_yaml(path): the `profiling:` section of a YAML file"},
    {"load_env", (PyCFunction)config_load_env, METH_NOARGS, "TRAINPROF_* variables"},
    {"parse_args", (PyCFunction)config_parse_args, METH_O,
     "parse_args(argv) -> the arguments that are not profiling flags"},
    {"describe", (PyCFunction)(void (*)(void))config_describe, METH_FASTCALL,
     "describe(explain=False) -> 'key = value' lines"},
    {"to_json", (PyCFunction)config_to_json, METH_NOARGS, "the effective configuration as JSON"},
    {NULL, NULL, 0, NULL}};

PyTypeObject Core_ConfigType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof._core.Config",
    .tp_basicsize = sizeof(ConfigObject),
    .tp_dealloc = (destructor)config_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Config(): a trainprof configuration (every key at its default).",
    .tp_methods = config_methods,
    .tp_new = config_new,
};

int core_config_ready(void)
{
    return PyType_Ready(&Core_ConfigType);
}
