/* fuzz_rank_summary.c - the rank summary parser (what `trainprof combine`
 * reads) and the reduce on arbitrary bytes: parsing must never crash or
 * leak, and whatever parses must fold into the reduce and render. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyze/ranks/ranks.h"
#include "analyze/text/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tpa_rank_summary s;
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (tpa_rank_summary_parse((const char *)data, size, &s, &err) != 0)
        return 0;
    tpa_ranks *r = tpa_ranks_new();
    if (r) {
        tpa_ranks_add(r, &s);
        tpa_ranks_add(r, &s); /* a duplicate rank */
        FILE *null = fopen("/dev/null", "w");
        if (null) {
            tpa_ranks_render_text(r, null, false);
            tpa_ranks_render_json(r, null);
            fclose(null);
        }
        tpa_ranks_free(r);
    }
    tpa_rank_summary_free(&s);
    return 0;
}
