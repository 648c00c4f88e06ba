/* view_memory.c - the Memory view's collector (key "memory").
 *
 * Of a run directory: trainprof's own samples (RSS, system memory, each
 * GPU's allocated / reserved / peak) from memory_profile.json. */
#include "html.h"
#include "view.h"

#include <stdlib.h>
#include <string.h>

typedef struct memview {
    tpa_view_input in;
    tpa_html_model m;        /* memory_profile.json */
} memview;

static void *mem_begin(const tpa_view_input *in)
{
    memview *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->in = *in;
    tpa_html_model_init(&v->m, in->input);
    tpa_error err;
    memset(&err, 0, sizeof err);
    if (in->run_dir) tpa_html_read_run(&v->m, in->input, 1u << TPA_HTML_MEMORY, false, &err);
    return v;
}

static void mem_json(void *state, tpu_json *j)
{
    memview *v = state;
    if (!v->m.memory.points) { tpu_json_null(j); return; }
    tpu_json_begin_object(j);
    tpa_html_memory_members(&v->m, j);
    tpu_json_end_object(j);
}

static void mem_free(void *state)
{
    memview *v = state;
    tpa_html_model_free(&v->m);
    free(v);
}

const tpa_view_class tpa_view_memory = {
    .key = "memory",
    .begin = mem_begin,
    .json = mem_json,
    .free = mem_free,
};
