/* profiling.cuda and torch.profiler's `activities` spelling (issue 13). */
#include <stdlib.h>

#include "config/settings.h"
#include "tp_test.h"
#include "trainprof.h"

TP_TEST(activities_sets_cuda)
{
    tp_config *c = tp_config_new();
    tp_error e;
    CHECK_STR(tp_config_get(c, "cuda"), "false");
    CHECK_EQ_INT(tp_config_set(c, "activities", "cpu,cuda", &e), 0);
    CHECK_STR(tp_config_get(c, "profiling.cuda"), "true");
    CHECK(tpi_config_settings(c)->cuda == 1);
    CHECK_EQ_INT(tp_config_set(c, "activities", "cpu", &e), 0);
    CHECK_STR(tp_config_get(c, "cuda"), "false");
    CHECK_EQ_INT(tp_config_set(c, "activities", "cpu,gpu", &e), TP_ERR_BAD_VALUE);
    CHECK_CONTAINS(e.message, "cuda");
    tp_config_free(c);
}

TP_TEST(cuda_spellings_and_conflict)
{
    tp_config *c = tp_config_new();
    tp_error e;
    CHECK_EQ_INT(tp_config_set(c, "profile_cuda", "yes", &e), 0);
    CHECK(tpi_config_settings(c)->cuda == 1);
    /* both in the same layer: neither can win */
    CHECK_EQ_INT(tp_config_set(c, "activities", "cpu", &e), TP_ERR_CONFLICT);
    CHECK_CONTAINS(e.message, "activities");
    CHECK(tpi_config_settings(c)->cuda == 1); /* the failed change was undone */
    tp_config_free(c);
    c = tp_config_new();
    setenv("TRAINPROF_ACTIVITIES", "cpu,cuda", 1);
    CHECK_EQ_INT(tp_config_load_env(c, &e), 0);
    CHECK(tpi_config_settings(c)->cuda == 1);
    CHECK_EQ_INT(tp_config_set(c, "cuda", "false", &e), 0); /* a flag beats the environment */
    CHECK(tpi_config_settings(c)->cuda == 0);
    unsetenv("TRAINPROF_ACTIVITIES");
    tp_config_free(c);
}

int main(void)
{
    RUN(activities_sets_cuda);
    RUN(cuda_spellings_and_conflict);
    return tp_test_finish();
}
