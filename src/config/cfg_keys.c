/*
 * cfg_keys.c - the one table of configuration keys, and name lookups.
 *
 * Everything about a key lives in its row: type, default, range, accepted
 * values, the spellings of other tools, and the one-line doc that
 * docs/CONFIG.md and the error messages are made from.
 */
#include <string.h>

#include "config/cfg_internal.h"

#define BIG 1000000000LL

/* clang-format off */
static const tpc_key KEYS[TPC_NKEYS] = {
    {"enabled", TPC_BOOL, "true", 0, 1, NULL, "enable_profiling", "enable_profiling", 0,
     "Master switch. false: tp_session_open returns NULL and every call is a no-op.", "false"},
    {"name", TPC_STRING, "trainprof", 1, 120, NULL, "run_name experiment_name", NULL, 0,
     "Run name, the first part of the run directory name (sanitized to [A-Za-z0-9._-]).", "resnet50_bs64"},
    {"log_dir", TPC_STRING, "runs", 1, 1000, NULL, "output_dir dirpath", NULL, 0,
     "Parent directory of run directories; created when missing.", "/scratch/prof"},
    {"timing", TPC_BOOL, "true", 0, 1, NULL, "enable_timing_profiling", "enable_timing_profiling", 0,
     "Per-step timing and per-operation statistics (timing_profile.json, operations.json).", "true"},
    {"memory", TPC_BOOL, "true", 0, 1, NULL, "enable_memory_profiling log_device_memory",
     "enable_memory_profiling", 0,
     "Memory sampling: process, system and device memory (memory_profile.json).", "false"},
    {"trace", TPC_BOOL, "true", 0, 1, NULL, "enable_tracing", NULL, 0,
     "Write detailed traces for the active steps of the schedule.", "false"},
    {"skip_first", TPC_INT, "0", 0, BIG, NULL, "skip_first_steps", NULL, 0,
     "Schedule: steps ignored before the first cycle.", "10"},
    {"wait", TPC_INT, "1", 0, BIG, NULL, "wait_steps", NULL, 0,
     "Schedule: steps at the start of each cycle that are not traced.", "1"},
    {"warmup", TPC_INT, "1", 0, BIG, NULL, "warmup_steps", NULL, 0,
     "Schedule: steps traced and thrown away before the active steps of each cycle.", "1"},
    {"active", TPC_INT, "3", 1, 1000000, NULL, "active_steps", NULL, 0,
     "Schedule: steps traced per cycle; each cycle becomes one trace file.", "3"},
    {"repeat", TPC_INT, "1", 0, 1000000, NULL, "repeat_cycles", NULL, 0,
     "Schedule: number of cycles; 0 = until the end of the run.", "2"},
    {"unit", TPC_ENUM, "step", 0, 0, "step|epoch", "schedule_unit", NULL, 0,
     "What the schedule counts: steps, or epochs marked with tp_epoch_end.", "epoch"},
    {"record_shapes", TPC_BOOL, "false", 0, 1, NULL, NULL, NULL, 0,
     "Record the argument string a zone is given (tp_zone_begin_args) in traces.", "true"},
    {"profile_memory", TPC_BOOL, "false", 0, 1, NULL, "trace_memory", NULL, 0,
     "Put allocation events (tp_mem_alloc/free) and memory counters into traces.", "true"},
    {"with_stack", TPC_BOOL, "false", 0, 2, "false|true|native", "trace_python", NULL, 0,
     "Folded stacks beside each trace file: true = zone paths (<stem>.stacks.txt); native = "
     "also sampled native call stacks (<stem>.native.stacks.txt, ~1 kHz SIGPROF).", "native"},
    {"log_every", TPC_INT, "100", 0, BIG, NULL, "log_every_n_steps", NULL, 0,
     "Print a metrics block (and write metrics) every N steps; 0 = only at the end.", "50"},
    {"memory_every_n_steps", TPC_INT, "1", 0, BIG, NULL, NULL, NULL, 0,
     "Take a memory sample at the end of every N-th step; 0 = never at step end.", "10"},
    {"memory_interval_ms", TPC_DURATION, "0", 0, 3600000, NULL, "memory_interval", NULL, 0,
     "Period of the background memory sampler (e.g. 100ms, 2s); 0 = no background sampler.", "100ms"},
    {"max_buffer_mb", TPC_SIZE, "64", 1, 1048576, NULL, "max_buffer", NULL, 0,
     "Bound on recorder memory (e.g. 64, 16MB, 1GiB); events beyond it are dropped and counted.", "256MB"},
    {"trace_format", TPC_ENUM, "chrome_json", 0, 0, "chrome_json|perfetto|both", NULL, NULL, 0,
     "Trace file format: Chrome/Kineto JSON (.pt.trace.json), Perfetto protobuf, or both.", "both"},
    {"gzip", TPC_BOOL, "false", 0, 1, NULL, "compress", NULL, 0,
     "Compress JSON traces (.pt.trace.json.gz).", "true"},
    {"metrics", TPC_LIST, "console", 0, 0, "jsonl|csv|tensorboard|console", "loggers", NULL, 0,
     "Where step metrics go: a list of jsonl, csv, tensorboard, console (or none).", "jsonl,console"},
    {"trace_filename", TPC_STRING, "{host}_{pid}.{time_ns}", 1, 200, NULL, NULL, NULL, 0,
     "Trace file stem: {host} {pid} {rank} {step} {time_ns}; _rank{rank} is added when the "
     "rank is known and the pattern has no {rank}.", "{host}_rank{rank}_step{step}"},
    {"rank", TPC_INT, "-1", -1, 1000000, NULL, "global_rank", NULL, 0,
     "Rank of this process; -1 = from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK.", "0"},
    {"top_n", TPC_INT, "20", 0, 100000, NULL, "row_limit", NULL, 0,
     "Rows of the console operation table; 0 = all.", "30"},
    /* GPU activity (issue 13) */
    {"cuda", TPC_BOOL, "false", 0, 1, NULL, "profile_cuda trace_cuda", NULL, 0,
     "Kernels, copies, sets, synchronizations and CUDA API calls in the traces (CUPTI, inside "
     "trace windows only); see docs/GPU.md.", "true"},
    /* Python package: torch.profiler inside trace windows (trainprof.torch) */
    {"torch_ops", TPC_BOOL, "false", 0, 1, NULL, "torch_profiler", NULL, 0,
     "Python: in each trace window also run torch.profiler on the same schedule and merge "
     "its operators (and CUDA kernels) into the window's trace (docs/PYTHON.md).", "true"},
    {"handle_signals", TPC_BOOL, "true", 0, 1, NULL, NULL, NULL, 0,
     "Python: on SIGTERM or SIGINT (main thread) close the run, then the program's previous "
     "handler or the default action; a second signal exits at once (docs/PYTHON.md).", "false"},
    {"jax_step", TPC_STRING, "auto", 1, 200, NULL, NULL, NULL, 0,
     "Python, no-code profiling of JAX (docs/RUN.md): the jitted function whose calls are the "
     "steps, by name; auto = the first one called twice (the train step).", "train_step"},
    /* the HTML report written at close */
    {"html_report", TPC_BOOL, "true", 0, 1, NULL, NULL, NULL, 0,
     "Write report.html (a self-contained page: step time, memory, breakdown, top operations, "
     "findings, configuration) into the run directory at close.", "false"},
    /* issue 12: the trace never takes the disk space the summaries need */
    {"max_trace_mb", TPC_SIZE, "0", 0, 1048576, NULL, NULL, NULL, 0,
     "Budget of each trace window's files; past it (or when the disk runs low) the window's "
     "remaining events are dropped and counted; 0 = no budget.", "512MB"},
    /* multi-rank jobs (docs/DISTRIBUTED.md) */
    {"job_id", TPC_STRING, "auto", 1, 100, NULL, NULL, NULL, 0,
     "Job the ranks share (one job directory, rank<r>/ each); auto = from TORCHELASTIC_RUN_ID, "
     "SLURM_JOB_ID or PMIX_NAMESPACE.", "exp42"},
    {"ranks", TPC_STRING, "all", 1, 200, NULL, NULL, NULL, 0,
     "Ranks that profile: all, or a comma list of ranks and ranges; the others write nothing.",
     "0,3,8-15"},
    /* issue 30: the live state `trainprof top` reads */
    {"live", TPC_BOOL, "true", 0, 1, NULL, "live_state", NULL, 0,
     "Keep live.json in the run directory up to date (at most once a second, from the collector "
     "thread) for `trainprof top`; false = write nothing for it (docs/TOP.md).", "false"},
    /* the flight recorder (issue 34, docs/CAPTURES.md) */
    {"capture", TPC_BOOL, "true", 0, 1, NULL, "flight_recorder", NULL, 0,
     "Keep the last capture_steps steps in memory at all times and write them into captures/ on "
     "a slow step, an exception, SIGUSR1 or `trainprof capture`, and a hang; false = no ring.",
     "false"},
    {"capture_steps", TPC_INT, "10", 1, 100000, NULL, NULL, NULL, 0,
     "Steps the flight recorder keeps (events, step rows, memory samples), within a quarter of "
     "max_buffer_mb.", "20"},
    {"capture_slow_step", TPC_INT, "3", 0, 1000000, NULL, "slow_step_factor", NULL, 0,
     "Capture a step that takes more than this many times the median of the steps before it "
     "(up to 64, at least 5) and 10 ms more; 0 = off.", "5"},
    {"hang_timeout", TPC_DURATION, "300s", 0, 604800000, NULL, "watchdog_timeout", NULL, 0,
     "No step ends for this long (from the session open, then from each step end): a hang "
     "capture with every thread's stack; 0 = off.", "10min"},
    {"captures_max", TPC_INT, "20", 0, 1000000, NULL, "max_captures", NULL, 0,
     "Captures at most per run (all reasons together).", "5"},
    /* derived: spellings of other systems that expand onto the schedule */
    {"start_step", TPC_INT, "", 0, BIG, NULL, NULL, NULL, 1,
     "JAX style: first traced step. Sets skip_first=start_step, wait=0, warmup=0.", "100"},
    {"end_step", TPC_INT, "", 1, BIG, NULL, NULL, NULL, 1,
     "JAX style: first step no longer traced. Sets active=end_step-start_step, repeat=1.", "105"},
    {"profile_steps", TPC_INT, "", 1, 1000000, NULL, NULL, "profile_steps", 1,
     "RAVE style: number of steps to trace. Sets active=profile_steps, repeat=1.", "100"},
    {"schedule_every_n_steps", TPC_INT, "", 1, BIG, NULL, "profile_every_n_steps", NULL, 1,
     "Lightning/JAX style: one cycle every N steps, until the end. Sets "
     "wait=N-warmup-active, repeat=0.", "500"},
    {"log_to_wandb", TPC_BOOL, "", 0, 1, NULL, NULL, NULL, 1,
     "Timer style: true adds jsonl to metrics (profiling/<op>_avg_time, _total_time, _count).", "true"},
    {"activities", TPC_LIST, "", 0, 0, "cpu|cuda", NULL, NULL, 1,
     "torch.profiler style: a list of cpu, cuda. Sets cuda=true when it names cuda, false "
     "otherwise (CPU zones are always recorded).", "cpu,cuda"},
};
/* clang-format on */

const tpc_key *tpc_key_at(int index)
{
    return (index >= 0 && index < TPC_NKEYS) ? &KEYS[index] : NULL;
}

/* Copies name without the "profiling." prefix, '-' read as '_'. */
static void normalize(const char *name, char *out, size_t outlen)
{
    if (strncmp(name, TPC_PREFIX, strlen(TPC_PREFIX)) == 0)
        name += strlen(TPC_PREFIX);
    size_t i = 0;
    for (; name[i] && i + 1 < outlen; i++)
        out[i] = name[i] == '-' ? '_' : name[i];
    out[i] = '\0';
}

/* Is `word` one of the space-separated words of list? */
static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    if (!list || n == 0)
        return 0;
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && memcmp(p, word, n) == 0)
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

int tpc_key_find(const char *name, int bare_only)
{
    char norm[128];
    if (!name || strlen(name) >= sizeof norm)
        return -1;
    normalize(name, norm, sizeof norm);
    for (int k = 0; k < TPC_NKEYS; k++) {
        if (bare_only) {
            if (in_list(KEYS[k].bare, norm))
                return k;
        } else if (strcmp(KEYS[k].name, norm) == 0 || in_list(KEYS[k].aliases, norm)) {
            return k;
        }
    }
    return -1;
}

int tpc_edit_distance(const char *a, const char *b)
{
    enum { N = 64 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= N || lb >= N)
        return 1000;
    int d[N][N];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* Tries one candidate spelling against the best so far. */
static void consider(const char *norm, const char *cand, size_t cand_len, const char **best,
                     int *best_d)
{
    char word[64];
    if (cand_len == 0 || cand_len >= sizeof word)
        return;
    memcpy(word, cand, cand_len);
    word[cand_len] = '\0';
    int d = tpc_edit_distance(norm, word);
    if (d < *best_d) {
        *best_d = d;
        *best = cand;
    }
}

const char *tpc_key_suggest(const char *name)
{
    static __thread char result[64];
    char norm[64];
    if (!name || strlen(name) >= sizeof norm)
        return NULL;
    normalize(name, norm, sizeof norm);
    const char *best = NULL;
    int best_d = 1000;
    for (int k = 0; k < TPC_NKEYS; k++) {
        consider(norm, KEYS[k].name, strlen(KEYS[k].name), &best, &best_d);
        for (const char *p = KEYS[k].aliases; p && *p;) {
            const char *end = strchr(p, ' ');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            consider(norm, p, len, &best, &best_d);
            p = end ? end + 1 : p + len;
        }
    }
    size_t n = strlen(norm);
    int limit = n <= 4 ? 1 : n <= 8 ? 2 : 3;
    if (!best || best_d > limit)
        return NULL;
    size_t len = strcspn(best, " ");
    if (len >= sizeof result)
        return NULL;
    memcpy(result, best, len);
    result[len] = '\0';
    return result;
}
