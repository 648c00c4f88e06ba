/* name registry: stable ids, round trip, concurrency-safe interning. */
#include <pthread.h>
#include <stdio.h>

#include "core/names.h"
#include "sink/sink.h"
#include "tp_test.h"

TP_TEST(intern_round_trip)
{
    uint32_t a = tpi_names_intern("forward");
    uint32_t b = tpi_names_intern("backward");
    CHECK(a != 0 && b != 0 && a != b);
    CHECK_EQ_INT(tpi_names_intern("forward"), a);
    CHECK_STR(tpi_names_get(a), "forward");
    CHECK_STR(tpi_names_get(b), "backward");
    CHECK_STR(tpi_names_get(0), "");
    CHECK_EQ_INT(tpi_names_intern_n("forward_extra", 7), a);
    CHECK_STR(tpi_names_get(tpi_names_intern("")), "");
}

static void *worker(void *arg)
{
    uint32_t *ids = arg;
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "op%d", i);
        ids[i] = tpi_names_intern(name);
    }
    return NULL;
}

TP_TEST(concurrent_intern)
{
    pthread_t th[4];
    static uint32_t ids[4][40];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, ids[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 1; i < 4; i++)
        for (int k = 0; k < 40; k++)
            CHECK_EQ_INT(ids[i][k], ids[0][k]);
}

TP_TEST(overflow_maps_to_other)
{
    uint32_t last = 0;
    for (int i = 0; i < TPI_NAMES_MAX + 10; i++) {
        char name[32];
        snprintf(name, sizeof name, "many%d", i);
        last = tpi_names_intern(name);
    }
    CHECK(last != 0);
    CHECK_STR(tpi_names_get(last), "<other>");
    CHECK(tpi_names_overflow() > 0);
    CHECK_STR(tpi_names_get(tpi_names_intern("forward")), "forward"); /* old names intact */
}

int main(void)
{
    RUN(intern_round_trip);
    RUN(concurrent_intern);
    RUN(overflow_maps_to_other);
    return tp_test_finish();
}
