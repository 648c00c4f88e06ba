/* docs/CONFIG.md is generated from the key table (trainprof config
 * --markdown > docs/CONFIG.md); this test fails when it is out of date, and
 * checks that every key, alias and default appears in it. */
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"
#include "tp_test.h"
#include "util/fileio.h"

TP_TEST(committed_file_matches_the_table)
{
    char *md = tp_config_reference_markdown();
    char *file = NULL;
    size_t len = 0;
    CHECK(md != NULL);
    int rc = tpu_read_file(TP_SOURCE_DIR "/docs/CONFIG.md", &file, &len, NULL, 0);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0 && md && strcmp(md, file) != 0)
        fprintf(stderr, "docs/CONFIG.md is out of date: run\n"
                        "  build/trainprof config --markdown > docs/CONFIG.md\n");
    CHECK(rc == 0 && md && strcmp(md, file) == 0);
    free(file);
    tp_free(md);
}

TP_TEST(every_key_alias_and_default_is_documented)
{
    char *md = tp_config_reference_markdown();
    char want[256];
    for (int k = 0; k < TPC_NKEYS; k++) {
        const tpc_key *key = tpc_key_at(k);
        snprintf(want, sizeof want, "| `profiling.%s` |", key->name);
        CHECK_CONTAINS(md, want);
        tpc_value v;
        char msg[512];
        CHECK_EQ_INT(tpc_value_parse(k, key->example, &v, msg, sizeof msg), 0); /* examples are valid */
        if (!key->derived) {
            CHECK_EQ_INT(tpc_value_parse(k, key->def, &v, msg, sizeof msg), 0);
            snprintf(want, sizeof want, "`%s`", key->def);
            CHECK_CONTAINS(md, want);
        }
        for (const char *p = key->aliases; p && *p;) {
            size_t n = strcspn(p, " ");
            snprintf(want, sizeof want, "`%.*s`", (int)n, p);
            CHECK_CONTAINS(md, want);
            p += n;
            p += strspn(p, " ");
        }
    }
    tp_free(md);
}

int main(void)
{
    RUN(committed_file_matches_the_table);
    RUN(every_key_alias_and_default_is_documented);
    return tp_test_finish();
}
