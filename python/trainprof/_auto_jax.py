"""trainprof._auto_jax: what automatic profiling finds in an unmodified JAX
script. Installed by trainprof._auto right after the program imports jax.

jax.jit is wrapped: every function it returns is counted and timed (zone
`jit(<name>)`: the call, which is JAX's dispatch, not the device work) when
called outside a trace. The first such call opens the session. The steps
are the calls of one jitted function: the one profiling.jax_step names, or
else the first one called twice (the train step of a training loop: the
functions called once, such as the initialisation, are passed over). A step
runs from one call of that function to the next (the last ends at exit), so
there are as many steps as calls. Compilation is zone jax.compile (JAX's
compile_or_get_cached, inside the call that compiles), apart from the rest.
At exit, when another jitted function was called more often than the step
function, a note names it (profiling.jax_step picks it).
"""
import functools
import weakref

from . import _auto

_prof = None
_ZCOMPILE = None
_step_fn = None        # the _Jitted whose calls are the steps
_step_name = "auto"
_step_open = False     # a step was begun and not ended
_wrappers = weakref.WeakSet()
_top_level = None      # () -> True outside any JAX trace


def _set_session(prof):
    global _prof, _ZCOMPILE, _step_name, _step_open
    _prof = prof
    _step_open = False
    if prof is None:
        _ZCOMPILE = None
        return
    _ZCOMPILE = prof.zone("jax.compile")
    _step_name = prof.config_get("jax_step") or "auto"


class _Jitted:
    """A jitted function, counted and timed; everything else (lower, trace,
    eval_shape, clear_cache, ...) is the jitted function's own."""

    def __init__(self, fn):
        self.__dict__["_tp_fn"] = fn
        self.__dict__["_tp_calls"] = 0
        self.__dict__["_tp_zone"] = None
        self.__dict__["_tp_owner"] = None
        name = getattr(fn, "__name__", None) or getattr(getattr(fn, "__wrapped__", None), "__name__", "fn")
        self.__dict__["_tp_name"] = name
        for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__wrapped__"):
            try:
                self.__dict__[attr] = getattr(fn, attr)
            except AttributeError:
                pass
        _wrappers.add(self)

    def __call__(self, *args, **kwargs):
        fn = self._tp_fn
        if _prof is None:
            if _auto.status() != "idle" or not _top_level():
                return fn(*args, **kwargs)
            if _auto.session() is None:
                return fn(*args, **kwargs)
        elif not _top_level():  # called while another function is traced: no device work
            return fn(*args, **kwargs)
        prof = _prof
        self._tp_calls += 1
        _count_step(self, prof)
        zone = self._tp_zone
        if self._tp_owner is not prof:
            zone = self.__dict__["_tp_zone"] = prof.zone(f"jit({self._tp_name})")
            self.__dict__["_tp_owner"] = prof
        with zone:
            return fn(*args, **kwargs)

    def __get__(self, obj, objtype=None):  # a jitted method
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __getattr__(self, name):
        return getattr(self.__dict__["_tp_fn"], name)

    def __repr__(self):
        return repr(self._tp_fn)

    def __hash__(self):
        return hash(self._tp_fn)

    def __eq__(self, other):
        return self._tp_fn == (other._tp_fn if isinstance(other, _Jitted) else other)


def _count_step(fn, prof):
    """Step boundaries at the calls of the step function."""
    global _step_fn, _step_open
    if _step_fn is None:
        if _step_name != "auto":
            if fn._tp_name != _step_name:
                return
        elif fn._tp_calls == 1:
            prof.step_begin()  # perhaps the step function's first call: step 0 begins here
            _step_open = True
            return
        _step_fn = fn
        if _step_name != "auto" and fn._tp_calls == 1:
            prof.step_begin()
            _step_open = True
            return
    if fn is not _step_fn:
        return
    prof.step()
    _step_open = True


def _at_exit(prof):
    """The last step ends at exit; a note when another jitted function was
    called more often than the step function."""
    global _step_open
    if _step_fn is None or prof is not _prof:
        return
    if _step_open:
        prof.step()
        _step_open = False
    most = max(list(_wrappers), key=lambda w: w._tp_calls, default=None)
    if most is not None and most is not _step_fn and most._tp_calls > _step_fn._tp_calls:
        _auto.say(f"JAX steps were the {_step_fn._tp_calls} calls of jitted `{_step_fn._tp_name}`; "
                  f"`{most._tp_name}` was called {most._tp_calls} times: "
                  f"--profiling.jax_step {most._tp_name} makes its calls the steps")


def _wrap_jit(orig):
    @functools.wraps(orig)
    def jit(*args, **kwargs):
        out = orig(*args, **kwargs)
        if args:  # jax.jit(f, ...): the jitted function
            return _Jitted(out)

        @functools.wraps(out)
        def decorate(fn):  # jax.jit(static_argnums=...)(f)
            return _Jitted(out(fn))
        return decorate
    jit._trainprof_auto = True
    return jit


def _wrap_compile(orig):
    @functools.wraps(orig)
    def compile_or_get_cached(*args, **kwargs):
        z = _ZCOMPILE
        if z is None:
            return orig(*args, **kwargs)
        with z:
            return orig(*args, **kwargs)
    return compile_or_get_cached


def patch_jax(jax):
    """Installs the wrappers (trainprof._auto, right after `import jax`)."""
    global _top_level
    from jax._src import core
    ctx = core.trace_ctx
    if hasattr(ctx, "is_top_level"):
        _top_level = ctx.is_top_level
    else:
        _top_level = lambda: isinstance(ctx.trace, core.EvalTrace)  # noqa: E731
    if getattr(jax.jit, "_trainprof_auto", False):
        return
    jax.jit = _wrap_jit(jax.jit)
    try:
        from jax._src import compiler
        compiler.compile_or_get_cached = _wrap_compile(compiler.compile_or_get_cached)
    except (ImportError, AttributeError):  # another JAX: compilation stays inside the calls
        pass
    _auto.add_listener(_set_session)
    _auto.add_exit_hook(_at_exit)
