/*
 * cfg_resolve.c - from layered slots to one effective value per key.
 *
 * 1. Each canonical key takes its value from the highest layer that set it
 *    (default < file < env < flag).
 * 2. Derived keys (spellings of other systems) then write their targets:
 *      start_step S             -> skip_first=S, wait=0, warmup=0
 *      end_step E               -> active=E-(start_step or 0), repeat=1
 *      profile_steps N          -> active=N, repeat=1
 *      schedule_every_n_steps N -> wait=N-warmup-active, repeat=0
 *      log_to_wandb true        -> metrics += jsonl
 *      activities cpu,cuda      -> cuda = (list names cuda)
 *    A derived key set at a higher layer than a target's own value wins; a
 *    lower one loses. Two writers of one target in the SAME layer contradict
 *    each other (`start_step` and `wait` both given as flags): an error that
 *    says why, since neither can be preferred.
 * 3. The typed tpi_settings are filled from the effective values.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg_internal.h"
#include "util/fileio.h"

/* Why a derived key writes its targets (for contradiction messages). */
static const char *why(int k)
{
    switch (k) {
    case TPC_K_START_STEP:
        return "start_step places the trace window itself (skip_first=start_step, wait=0, "
               "warmup=0)";
    case TPC_K_END_STEP:
        return "end_step fixes the window length (active=end_step-start_step, repeat=1)";
    case TPC_K_PROFILE_STEPS:
        return "profile_steps fixes the number of traced steps (active=profile_steps, repeat=1)";
    case TPC_K_EVERY_N_STEPS:
        return "schedule_every_n_steps fixes the cycle length (wait=N-warmup-active, repeat=0)";
    case TPC_K_ACTIVITIES:
        return "activities decides whether CUDA activity is recorded (cuda=true when it lists cuda)";
    default:
        return "";
    }
}

/* Canonical keys that key k sets (a bit per key index). */
static uint64_t targets(int k)
{
    const uint64_t B = 1;
    switch (k) {
    case TPC_K_START_STEP:
        return B << TPC_K_SKIP_FIRST | B << TPC_K_WAIT | B << TPC_K_WARMUP;
    case TPC_K_END_STEP:
    case TPC_K_PROFILE_STEPS:
        return B << TPC_K_ACTIVE | B << TPC_K_REPEAT;
    case TPC_K_EVERY_N_STEPS:
        return B << TPC_K_WAIT | B << TPC_K_REPEAT;
    case TPC_K_LOG_TO_WANDB:
        return 0; /* adds to metrics, never contradicts it */
    case TPC_K_ACTIVITIES:
        return B << TPC_K_CUDA;
    default:
        return B << k;
    }
}

int tpc_keys_overlap(int a, int b)
{
    return a != b && (targets(a) & targets(b)) != 0;
}

/* The highest layer that set key k, or 0 (default). */
static int top_layer(const tp_config *cfg, int k)
{
    for (int l = TPC_NLAYERS - 1; l > TPC_L_DEFAULT; l--)
        if (cfg->slot[k][l].set)
            return l;
    return TPC_L_DEFAULT;
}

static const tpc_slot *top_slot(const tp_config *cfg, int k)
{
    int l = top_layer(cfg, k);
    return l ? &cfg->slot[k][l] : NULL;
}

/* "flag --start_step" for the writer of an effective value. */
static const char *writer_name(const tp_config *cfg, int k)
{
    const tpc_slot *s = top_slot(cfg, k);
    return s ? s->spelling : tpc_key_at(k)->name;
}

static void source_of(const tpc_slot *s, int k, char *out, size_t outlen)
{
    if (strcmp(s->spelling, tpc_key_at(k)->name) == 0 || strstr(s->source, s->spelling))
        snprintf(out, outlen, "%s", s->source);
    else
        snprintf(out, outlen, "%s (as %s)", s->source, s->spelling);
}

static void base_values(tp_config *cfg)
{
    char msg[256];
    for (int k = 0; k < TPC_NCANONICAL; k++) {
        tpc_eff *e = &cfg->eff[k];
        int l = top_layer(cfg, k);
        if (l) {
            e->v = cfg->slot[k][l].v;
            source_of(&cfg->slot[k][l], k, e->source, sizeof e->source);
        } else {
            tpc_value_parse(k, tpc_key_at(k)->def, &e->v, msg, sizeof msg);
            snprintf(e->source, sizeof e->source, "default");
        }
        e->layer = l;
        e->writer = k;
    }
}

/* Derived key d (set at its top layer) writes value v into target t. */
static int apply(tp_config *cfg, int d, int t, int64_t v, tp_error *err)
{
    const tpc_slot *ds = top_slot(cfg, d);
    tpc_eff *e = &cfg->eff[t];
    int dl = top_layer(cfg, d);
    if (dl < e->layer)
        return 0;
    if (dl == e->layer) {
        const char *other = e->writer == t ? tpc_key_at(t)->name : tpc_key_at(e->writer)->name;
        int w = e->writer == t ? d : e->writer;
        return tpc_error(err, TP_ERR_CONFLICT, NULL, 0, 0,
                         "`%s` (%s) contradicts `%s` (%s): %s; give only one of them",
                         writer_name(cfg, d), ds->source, other, e->source, why(w));
    }
    e->v.i = v;
    e->layer = dl;
    e->writer = d;
    snprintf(e->source, sizeof e->source, "%s: %s=%" PRId64 " -> %s=%" PRId64, ds->source,
             ds->spelling, ds->v.i, tpc_key_at(t)->name, v);
    return 0;
}

static int derive_window(tp_config *cfg, tp_error *err)
{
    const tpc_slot *ss = top_slot(cfg, TPC_K_START_STEP);
    const tpc_slot *es = top_slot(cfg, TPC_K_END_STEP);
    const tpc_slot *ps = top_slot(cfg, TPC_K_PROFILE_STEPS);
    int64_t start = ss ? ss->v.i : 0;
    int rc = 0;
    if (ss) {
        rc = apply(cfg, TPC_K_START_STEP, TPC_K_SKIP_FIRST, start, err);
        rc = rc ? rc : apply(cfg, TPC_K_START_STEP, TPC_K_WAIT, 0, err);
        rc = rc ? rc : apply(cfg, TPC_K_START_STEP, TPC_K_WARMUP, 0, err);
    }
    if (!rc && es) {
        if (es->v.i <= start)
            return tpc_error(err, TP_ERR_CONFLICT, NULL, 0, 0,
                             "end_step (%" PRId64 ", %s) must be greater than start_step (%" PRId64
                             ", %s): the window [start_step, end_step) would be empty; give an "
                             "end_step of at least %" PRId64,
                             es->v.i, es->source, start, ss ? ss->source : "default 0", start + 1);
        rc = apply(cfg, TPC_K_END_STEP, TPC_K_ACTIVE, es->v.i - start, err);
        rc = rc ? rc : apply(cfg, TPC_K_END_STEP, TPC_K_REPEAT, 1, err);
    }
    if (!rc && ps) {
        rc = apply(cfg, TPC_K_PROFILE_STEPS, TPC_K_ACTIVE, ps->v.i, err);
        rc = rc ? rc : apply(cfg, TPC_K_PROFILE_STEPS, TPC_K_REPEAT, 1, err);
    }
    return rc;
}

static int derive_every(tp_config *cfg, tp_error *err)
{
    const tpc_slot *ns = top_slot(cfg, TPC_K_EVERY_N_STEPS);
    if (!ns)
        return 0;
    int64_t warmup = cfg->eff[TPC_K_WARMUP].v.i, active = cfg->eff[TPC_K_ACTIVE].v.i;
    int64_t wait = ns->v.i - warmup - active;
    if (wait < 0)
        return tpc_error(err, TP_ERR_CONFLICT, NULL, 0, 0,
                         "%s=%" PRId64 " (%s) is shorter than one cycle: warmup (%" PRId64
                         ") + active (%" PRId64 ") = %" PRId64 " steps; give at least %" PRId64
                         " or lower warmup/active",
                         ns->spelling, ns->v.i, ns->source, warmup, active, warmup + active,
                         warmup + active);
    int rc = apply(cfg, TPC_K_EVERY_N_STEPS, TPC_K_WAIT, wait, err);
    return rc ? rc : apply(cfg, TPC_K_EVERY_N_STEPS, TPC_K_REPEAT, 0, err);
}

static void derive_wandb(tp_config *cfg)
{
    const tpc_slot *ws = top_slot(cfg, TPC_K_LOG_TO_WANDB);
    if (!ws || !ws->v.i)
        return;
    tpc_eff *e = &cfg->eff[TPC_K_METRICS];
    e->v.i |= TPI_METRIC_JSONL;
    size_t n = strlen(e->source);
    snprintf(e->source + n, sizeof e->source - n, ", + jsonl from %s: %s=true", ws->source,
             ws->spelling);
}

/* activities: a list of cpu(bit 0), cuda(bit 1) */
static int derive_activities(tp_config *cfg, tp_error *err)
{
    const tpc_slot *as = top_slot(cfg, TPC_K_ACTIVITIES);
    return as ? apply(cfg, TPC_K_ACTIVITIES, TPC_K_CUDA, (as->v.i & 2) ? 1 : 0, err) : 0;
}

static void fill_text(tp_config *cfg)
{
    for (int k = 0; k < TPC_NCANONICAL; k++)
        tpc_value_format(k, &cfg->eff[k].v, cfg->eff[k].text, sizeof cfg->eff[k].text);
    for (int k = TPC_NCANONICAL; k < TPC_NKEYS; k++) {
        const tpc_slot *s = top_slot(cfg, k);
        char *out = cfg->derived_text[k - TPC_NCANONICAL];
        if (s)
            tpc_value_format(k, &s->v, out, sizeof cfg->derived_text[0]);
        else
            out[0] = '\0';
    }
}

/* Copies a string known to fit (lengths are checked when values are set). */
static void copy_str(char *dst, size_t dstsize, const char *src)
{
    size_t n = strnlen(src, dstsize - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void fill_settings(const tp_config *cfg, tpi_settings *s)
{
    const tpc_eff *e = cfg->eff;
    memset(s, 0, sizeof *s);
    s->enabled = (int)e[TPC_K_ENABLED].v.i;
    copy_str(s->name, sizeof s->name, e[TPC_K_NAME].v.s);
    tpu_sanitize_component(s->name);
    copy_str(s->log_dir, sizeof s->log_dir, e[TPC_K_LOG_DIR].v.s);
    s->timing = (int)e[TPC_K_TIMING].v.i;
    s->memory = (int)e[TPC_K_MEMORY].v.i;
    s->trace = (int)e[TPC_K_TRACE].v.i;
    s->skip_first = e[TPC_K_SKIP_FIRST].v.i;
    s->wait = e[TPC_K_WAIT].v.i;
    s->warmup = e[TPC_K_WARMUP].v.i;
    s->active = e[TPC_K_ACTIVE].v.i;
    s->repeat = e[TPC_K_REPEAT].v.i;
    s->unit = e[TPC_K_UNIT].v.i ? TPI_UNIT_EPOCH : TPI_UNIT_STEP;
    s->record_shapes = (int)e[TPC_K_RECORD_SHAPES].v.i;
    s->profile_memory = (int)e[TPC_K_PROFILE_MEMORY].v.i;
    s->with_stack = (int)e[TPC_K_WITH_STACK].v.i;
    s->log_every = e[TPC_K_LOG_EVERY].v.i;
    s->memory_every_n_steps = e[TPC_K_MEMORY_EVERY_N_STEPS].v.i;
    s->memory_interval_ms = e[TPC_K_MEMORY_INTERVAL_MS].v.i;
    s->max_buffer_mb = e[TPC_K_MAX_BUFFER_MB].v.i;
    s->max_trace_mb = e[TPC_K_MAX_TRACE_MB].v.i;
    /* trace_format choices: chrome_json(0) | perfetto(1) | both(2) */
    int64_t tf = e[TPC_K_TRACE_FORMAT].v.i;
    s->trace_formats = tf == 0 ? TPI_TRACE_CHROME
                       : tf == 1 ? TPI_TRACE_PERFETTO
                                 : (TPI_TRACE_CHROME | TPI_TRACE_PERFETTO);
    s->gzip = (int)e[TPC_K_GZIP].v.i;
    /* metrics choices are in TPI_METRIC_* bit order: jsonl|csv|tensorboard|console */
    s->metrics = (unsigned)e[TPC_K_METRICS].v.i;
    copy_str(s->trace_filename, sizeof s->trace_filename, e[TPC_K_TRACE_FILENAME].v.s);
    s->rank = (int)e[TPC_K_RANK].v.i;
    s->top_n = (int)e[TPC_K_TOP_N].v.i;
    s->cuda = (int)e[TPC_K_CUDA].v.i;
    s->html_report = (int)e[TPC_K_HTML_REPORT].v.i;
    copy_str(s->job_id, sizeof s->job_id, e[TPC_K_JOB_ID].v.s);
    copy_str(s->ranks, sizeof s->ranks, e[TPC_K_RANKS].v.s);
    s->live = (int)e[TPC_K_LIVE].v.i;
    s->capture = (int)e[TPC_K_CAPTURE].v.i;
    s->capture_steps = e[TPC_K_CAPTURE_STEPS].v.i;
    s->capture_slow_step = e[TPC_K_CAPTURE_SLOW_STEP].v.i;
    s->hang_timeout_ms = e[TPC_K_HANG_TIMEOUT].v.i;
    s->captures_max = e[TPC_K_CAPTURES_MAX].v.i;
    s->torch_ops = (int)e[TPC_K_TORCH_OPS].v.i;
}

int tpc_resolve(tp_config *cfg, tp_error *err)
{
    base_values(cfg);
    int rc = derive_window(cfg, err);
    if (!rc)
        rc = derive_every(cfg, err);
    if (!rc)
        rc = derive_activities(cfg, err);
    if (rc)
        return rc;
    derive_wandb(cfg);
    fill_text(cfg);
    fill_settings(cfg, &cfg->settings);
    return 0;
}
