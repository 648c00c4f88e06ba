/* report_html.c - tp_report_html, the public entry to the HTML report that
 * the CLI (`trainprof report --html`) and session close both call. */
#include "analyze/page/html.h"
#include "trainprof.h"

#include <string.h>

int tp_report_html(const char *input, const char *out, tp_error *err)
{
    if (err) memset(err, 0, sizeof *err);
    if (!input || !*input || !out || !*out) {
        if (err) {
            err->code = TP_ERR_INVALID;
            snprintf(err->message, sizeof err->message, "tp_report_html: input and output paths are required");
        }
        return TP_ERR_INVALID;
    }
    tpa_error e;
    memset(&e, 0, sizeof e);
    if (tpa_report_html(input, out, &e) == 0) return 0;
    int code = e.code == TPA_ERR_IO ? TP_ERR_IO : TP_ERR_PARSE;
    if (err) {
        err->code = code;
        snprintf(err->file, sizeof err->file, "%s", e.file[0] ? e.file : input);
        if (e.offset)
            snprintf(err->message, sizeof err->message, "%.255s: byte %llu: %.255s", err->file,
                     (unsigned long long)e.offset, e.msg);
        else
            snprintf(err->message, sizeof err->message, "%.255s: %.255s", err->file, e.msg);
    }
    return code;
}
