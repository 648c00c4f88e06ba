/* run_python.h - `trainprof run` on a Python program (run_python.c). */
#ifndef TP_CLI_RUN_PYTHON_H
#define TP_CLI_RUN_PYTHON_H

#include <stddef.h>

#include "trainprof.h"

/* 1 when `a` is a profiling flag that trainprof run takes before the
 * command (--profiling.KEY, -profiling.KEY, the bare RAVE flags). */
int run_is_profiling_flag(const char *a);

/* Parses the flag argv[i] (and its value argv[i+1] when the config layer
 * takes it) into cfg. Returns the arguments used (1 or 2), or -1 with err
 * naming the key. */
int run_take_flag(tp_config *cfg, int argc, char **argv, int i, tp_error *err);

/* 1 when cmd runs Python: python/python3.X/pypy, or a file whose #! line
 * names python (torchrun, accelerate, ./train.py). */
int run_is_python(char *const *cmd);

/* The trainprof/_bootstrap directory of the Python package beside this CLI
 * (wheel, build tree, virtual environment) or on PYTHONPATH, as an absolute
 * path in out; -1 when none, -2 in a sanitizer build (its package cannot be
 * loaded by an uninstrumented python). */
int run_find_bootstrap(const char *argv0, char *out, size_t n);

/* Puts bootstrap first on PYTHONPATH and the flags into TRAINPROF_RUN_ARGS
 * (a JSON list) in this process's environment, for the command. 0 or -1. */
int run_python_env(const char *bootstrap, char *const *flags, int nflags);

#endif
