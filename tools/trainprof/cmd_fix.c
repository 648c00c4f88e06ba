/* cmd_fix.c - `trainprof fix FILE [-o OUT]`: close a cut-short trace. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "analyze/rewrite/rewrite.h"

static const char USAGE[] =
    "usage: trainprof fix FILE [-o OUT]\n"
    "Makes a trace that was cut short (killed writer, full disk) loadable again:\n"
    "keeps every complete event and closes the JSON document. Without -o, only\n"
    "checks and reports. Zeros or blanks after the cut are dropped; an error with\n"
    "more data after it is damage, not a cut: exit 2 with its byte offset. OUT is\n"
    "written beside and renamed into place, never over FILE.\n\n"
    "  -o, --output OUT  where to write the repaired trace (.gz compresses)\n"
    "  --json            print the result as JSON\n"
    "  -j N              threads that parse each input (default: the cores it may run on)\n"
    "Exit: 0 ok (fixed, or nothing to fix), 1 needs fixing (check only), 2 bad input\n"
    "or damaged, or OUT cannot be written.\n";

int cmd_fix(int argc, char **argv)
{
    cli_init();
    const char *cmd = argv[0], *in = NULL, *out = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        int k = cli_common_arg(argc, argv, &i, USAGE, &json, &out);
        if (k == CLI_ARG_USED) continue;
        if (k != CLI_ARG_NONE) return cli_arg_exit(k);
        if (cli_positional(cmd, argv[i], &in)) return CLI_BAD_INPUT;
    }
    if (!in) return cli_fail(cmd, "no trace file given");
    tpa_write_stats st;
    tpa_error err;
    bool was_ok = false;
    const char *src = in;  /* read to find the end, then copied */
    if (out && cli_stdin_to_file(&src) != 0) return CLI_BAD_INPUT;
    if (tpa_fix(src, out, &st, &was_ok, &err) != 0) return cli_error(&err);
    FILE *f = out && strcmp(out, "-") == 0 ? stderr : stdout;
    const char *state = was_ok ? "complete" : out ? "fixed" : "truncated";
    if (json) {
        fputs("{\"input\": ", f);
        tpa_json_str(f, in, strlen(in));
        fprintf(f, ", \"state\": \"%s\", \"events\": %" PRIu64, state, st.out_events);
        if (out) {
            fputs(", \"output\": ", f);
            tpa_json_str(f, out, strlen(out));
        }
        fprintf(f, "}\n");
    } else if (was_ok) {
        fprintf(f, "%s: complete, %" PRIu64 " events; nothing to fix%s%s\n", in, st.out_events,
                out ? ", copied to " : "", out ? out : "");
    } else if (out) {
        fprintf(f, "%s: truncated; kept %" PRIu64 " complete events -> %s\n", in, st.out_events, out);
    } else {
        fprintf(f, "%s: truncated after %" PRIu64 " complete events; run with -o OUT to repair\n", in, st.out_events);
    }
    return was_ok || out ? CLI_OK : CLI_FINDINGS;
}
