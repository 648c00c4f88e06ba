/* cmd_slice.c - `trainprof slice FILE ... -o OUT`: a viewer-sized piece. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "analyze/rewrite/rewrite.h"

static const char USAGE[] =
    "usage: trainprof slice FILE [filters] -o OUT\n"
    "Copies the events that pass every filter into OUT (.gz compresses), byte for\n"
    "byte, plus all metadata (M) events and the file's top-level members.\n\n"
    "  --steps A-B     events overlapping ProfilerStep#A..#B\n"
    "  --time A-B      events overlapping this window, relative to the first event;\n"
    "                  units us (default), ns, ms, s: e.g. 10ms-20ms\n"
    "  --min-dur D     complete (X) events lasting at least D, e.g. 5us\n"
    "  --cat LIST      only these categories, e.g. kernel,gpu_memcpy\n"
    "  -o, --output OUT  output path ('-' = stdout)\n"
    "  --json          print a summary as JSON\n"
    "  -j N            threads that parse each input (default: the cores it may run on)\n"
    "OUT is written beside and renamed into place (the old OUT stays on any error),\n"
    "never over an input. Exit: 0 ok, 2 bad input or OUT cannot be written.\n";

int cmd_slice(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *in = NULL, *out = NULL, *v;
    tpa_slice_opts o;
    memset(&o, 0, sizeof o);
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, USAGE, &json, &out);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return cli_arg_exit(k);
        if (cli_opt(argc, argv, &i, "--steps", &v)) {
            if (!v || !tpa_parse_range(v, &o.steps)) return cli_fail(cmd, "--steps needs N or A-B");
        } else if (cli_opt(argc, argv, &i, "--time", &v)) {
            if (!v || !tpa_parse_time_range(v, &o.time_us)) return cli_fail(cmd, "--time needs A-B, e.g. 0-5ms or 10ms-20ms");
        } else if (cli_opt(argc, argv, &i, "--min-dur", &v)) {
            if (!v || !tpa_parse_duration(v, &o.min_dur_ns)) return cli_fail(cmd, "--min-dur needs a duration, e.g. 5us");
            o.has_min_dur = true;
        } else if (cli_opt(argc, argv, &i, "--cat", &v)) {
            if (!v || !*v) return cli_fail_missing(cmd, "--cat");
            o.cats = v;
        } else if (cli_positional(cmd, argv[i], &in)) {
            return CLI_BAD_INPUT;
        }
    }
    if (!in) return cli_fail(cmd, "no trace file given");
    if (!out) return cli_fail(cmd, "no output given (-o OUT)");
    tpa_write_stats st;
    tpa_error err;
    const char *src = in;  /* step windows need a first pass over the input */
    if ((o.steps.set || o.time_us.set) && cli_stdin_to_file(&src) != 0) return CLI_BAD_INPUT;
    if (tpa_slice(src, out, &o, &st, &err) != 0) return cli_error(&err);
    if (st.truncated) fprintf(stderr, "trainprof: warning: %s is truncated; sliced what was there\n", in);
    FILE *f = strcmp(out, "-") == 0 ? stderr : stdout;
    if (json) {
        fputs("{\"input\": ", f);
        tpa_json_str(f, in, strlen(in));
        fputs(", \"output\": ", f);
        tpa_json_str(f, out, strlen(out));
        fprintf(f, ", \"events_in\": %" PRIu64 ", \"events_out\": %" PRIu64 "}\n", st.in_events, st.out_events);
    } else fprintf(f, "%s: kept %" PRIu64 " of %" PRIu64 " events -> %s\n", in, st.out_events, st.in_events, out);
    return CLI_OK;
}
