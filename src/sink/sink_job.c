/* sink_job.c - what traces and summaries say about the job a rank belongs
 * to, and the clock alignment tp_session_sync measured. */
#include "sink/sink.h"
#include "util/json.h"

uint64_t tpi_sink_aligned_base(const tpi_sink_env *env)
{
    if (!__atomic_load_n(&env->clock_synced, __ATOMIC_ACQUIRE))
        return env->wall_base_ns;
    int64_t off = __atomic_load_n(&env->clock_offset_ns, __ATOMIC_RELAXED);
    return (uint64_t)((int64_t)env->wall_base_ns - off);
}

void tpi_sink_job_json(struct tpu_json *j, const tpi_sink_env *env)
{
    const tpi_job_info *job = env->job;
    if (job && job->rank >= 0) {
        tpu_json_kv_int(j, "local_rank", job->local_rank);
        tpu_json_kv_int(j, "world_size", job->world_size);
        tpu_json_kv_string(j, "job_id", job->job_id);
        tpu_json_kv_string(j, "launcher", job->launcher);
    }
    if (!__atomic_load_n(&env->clock_synced, __ATOMIC_ACQUIRE))
        return;
    tpu_json_kv_int(j, "clock_offset_ns", __atomic_load_n(&env->clock_offset_ns, __ATOMIC_RELAXED));
    tpu_json_kv_uint(j, "clock_error_ns", __atomic_load_n(&env->clock_error_ns, __ATOMIC_RELAXED));
    tpu_json_kv_uint(j, "local_base_time_ns", env->wall_base_ns);
}
