/* fuzz_report_html.c - the report page on arbitrary bytes.
 *
 * An input starting "TRACE\n" is a trace: every view's collector is fed
 * from it (tpa_html_build_mem). One starting "BIG\n" is a trace template
 * whose every '@' becomes a 50 MB name (128 KB in a TP_SMALL_LIMITS build) of hostile text (<!--, </script,
 * <script, U+2028, U+2029, quotes, backslashes). Any other input is a run
 * directory's three files (operations.json, timing_profile.json,
 * memory_profile.json) split at the first two NUL bytes, read by the page's
 * run-directory readers, then the memory findings.
 *
 * Whatever the input, nothing crashes or leaks, the page data is one whole
 * JSON value, and once made safe for the page's <script> element it holds
 * no '<' and no raw U+2028/U+2029 (so no "</script", "<!--" or "<script"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page/html.h"
#include "analyze/json/json_scan.h"

static volatile size_t sink;

static void check_page_data(const tpu_buf *b)
{
    if (!b->len) return;
    const char *p = b->data;
    tpa_scanerr e;
    if (tpa_skip_value(&p, b->data + b->len, &e, 0) != SC_OK || p != b->data + b->len) abort();
    tpu_buf safe = {0};
    tpa_html_script_safe(&safe, b->data, b->len);
    for (size_t i = 0; i < safe.len; i++) {
        if (safe.data[i] == '<') abort();
        if ((unsigned char)safe.data[i] == 0xE2 && i + 2 < safe.len && (unsigned char)safe.data[i + 1] == 0x80 &&
            ((unsigned char)safe.data[i + 2] == 0xA8 || (unsigned char)safe.data[i + 2] == 0xA9))
            abort();
    }
    sink += safe.len;
    tpu_buf_free(&safe);
}

static void run_files(const uint8_t *data, size_t size)
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
    tpu_buf b = {0};
    tpu_json j;
    tpu_json_init(&j, &b, 0);
    tpu_json_begin_object(&j);
    tpa_html_model_members(&m, &j);
    tpa_html_memory_members(&m, &j);
    tpu_json_end_object(&j);
    check_page_data(&b);
    tpu_buf_free(&b);
    tpa_html_model_free(&m);
}

static void run_trace(const uint8_t *data, size_t size, size_t max_read)
{
    tpu_buf b = {0};
    tpa_error err;
    if (tpa_html_build_mem(data, size, max_read, &b, &err) == 0) check_page_data(&b);
    tpu_buf_free(&b);
}

/* The template with each '@' replaced by a 50 MB hostile name (JSON string text). */
static void run_big(const uint8_t *data, size_t size)
{
    static const char unit[] = "<!--<script></script \xE2\x80\xA8\xE2\x80\xA9 \\\" \\\\ ";
#ifdef TP_SMALL_LIMITS
    const size_t big = (size_t)128 << 10, ul = sizeof unit - 1;  /* small buffers rescan a long string per refill */
#else
    const size_t big = (size_t)50 << 20, ul = sizeof unit - 1;
#endif
    size_t n_at = 0;
    for (size_t i = 0; i < size; i++) n_at += data[i] == '@';
    if (n_at > 2) return;  /* bounded: at most 100 MB of names */
    tpu_buf t = {0};
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '@') { tpu_buf_putc(&t, (char)data[i]); continue; }
        for (size_t k = 0; k + ul <= big; k += ul) tpu_buf_append(&t, unit, ul);
    }
    run_trace((const uint8_t *)t.data, t.len, 0);
    tpu_buf_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 6 && memcmp(data, "TRACE\n", 6) == 0) run_trace(data + 6, size - 6, 1 + (size % 97));
    else if (size >= 4 && memcmp(data, "BIG\n", 4) == 0) run_big(data + 4, size - 4);
    else run_files(data, size);
    return 0;
}
