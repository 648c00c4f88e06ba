/* view_diff.h - the Diff view (`trainprof diff --html OUT A B`): two runs
 * side by side. Its data is what `trainprof diff` computes (diff.c,
 * diff_findings.c, one diagnosis per run), written as the page's "diff"
 * value; the page builder is not involved in computing it. */
#ifndef TRAINPROF_ANALYZE_VIEW_DIFF_H
#define TRAINPROF_ANALYZE_VIEW_DIFF_H

#include "analyze/stats/stats.h"
#include "util/json.h"

#define TPA_DIFF_OPS 2000     /* operator rows carried, most changed first */
#define TPA_DIFF_PAIRS 5000   /* step pairs carried */

/* The value: {"a": run, "b": run, "metric", "metric_a_ns", "metric_b_ns",
 * "change_pct", "parts": [{name, a_ns, b_ns}] (mean per step), "pairs":
 * {"a": [..], "b": [..], "num_a": [..], "num_b": [..]}, "ops": [{name, kind,
 * calls_a, calls_b, total_a_ns, total_b_ns, change_ns, status}],
 * "ops_total", "findings": [{id, title, in_a, in_b, share_a, share_b,
 * verdict}]}; a run is {path, steps, mean_ns, p50_ns, p90_ns}. Durations in
 * ns. d comes from tpa_diff_compute and tpa_diff_findings on a and b. */
void tpa_view_diff_json(tpu_json *j, const tpa_diff *d, const tpa_diagnosis *a, const tpa_diagnosis *b);

#endif
