/* Uses every macro and type of trainprof.h, so that compiling this file as
 * C89, C11 and C++ checks that the public header is valid in all three. */
#include "trainprof.h"

static int use_public_header(void)
{
    tp_session *s = 0; /* profiling off: every call is a no-op */
    tp_error err;
    tp_session_stats st;
    err.code = TP_OK;
    {
        TP_ZONE(s, "forward");
        TP_ZONE_BEGIN(s, "inner");
        TP_ZONE_END(s);
    }
    {
        TP_GPU_ZONE(s, 0, "gpu_forward");
    }
    tp_step_begin(s);
    tp_counter(s, "loss", 1.0);
    tp_mark(s, "checkpoint");
    tp_step_end(s, 64);
    tp_session_get_stats(s, &st);
    return (int)st.steps + err.code + (TRAINPROF_VERSION_NUMBER > 0 ? 0 : 1) +
           (tp_session_close(s, &err) != 0);
}
