/* fuzz_report_html.c - the HTML report's readers of a run directory's files
 * (operations.json, timing_profile.json, memory_profile.json) on arbitrary
 * bytes, then the memory findings and the page data. The input is split at
 * the first two NUL bytes into the three files' contents; the readers must
 * never crash or leak, and the data must come out whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/html.h"

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[3] = { data, NULL, NULL };
    size_t len[3] = { size, 0, 0 };
    for (int i = 0; i < 2; i++) {  /* split at NULs */
        const uint8_t *z = memchr(part[i], 0, len[i]);
        if (!z) break;
        part[i + 1] = z + 1;
        len[i + 1] = len[i] - (size_t)(z + 1 - part[i]);
        len[i] = (size_t)(z - part[i]);
    }
    tpa_html_model m;
    tpa_html_model_init(&m, "fuzz");
    static const int files[3] = { TPA_HTML_OPERATIONS, TPA_HTML_TIMING, TPA_HTML_MEMORY };
    for (int i = 0; i < 3; i++) {
        if (!part[i]) continue;
        tpa_error err;
        tpa_reader *r = tpa_reader_open_mem(part[i], len[i], &err);
        if (!r) continue;
        tpa_reader_set_max_read(r, 1 + (size % 97));
        tpa_html_feed(&m, files[i], r, &err);
        tpa_reader_close(r);
    }
    tpa_html_memory_findings(&m);
    tpu_buf b = {0}, page = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_object(&j);
    tpa_html_model_members(&m, &j);
    tpa_html_memory_members(&m, &j);
    tpu_json_end_object(&j);
    tpa_html_script_safe(&page, b.data, b.len);
    sink += page.len;
    tpu_buf_free(&b);
    tpu_buf_free(&page);
    tpa_html_model_free(&m);
    return 0;
}
