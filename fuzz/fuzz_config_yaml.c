/*
 * Fuzz target: the YAML loader (libyaml events -> profiling section ->
 * layered config), then describe/JSON of whatever was accepted. Invariants:
 * no crash, and a failed load leaves the configuration unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/cfg_internal.h"
#include "trainprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tp_config *cfg = tp_config_new();
    if (!cfg)
        return 0;
    char *before = tp_config_to_json(cfg);
    tp_error err;
    int rc = tpc_load_yaml_text(cfg, "fuzz.yaml", (const char *)data, size, &err);
    char *after = tp_config_to_json(cfg);
    if (rc != 0) {
        if (!before || !after || strcmp(before, after) != 0 || err.message[0] == '\0')
            abort(); /* a failed load must not change anything, and must say why */
    }
    char *text = tp_config_describe(cfg, 1);
    const tpi_settings *s = tpi_config_settings(cfg);
    if (!s || s->active < 1 || s->wait < 0 || s->name[0] == '\0' || strchr(s->name, '/'))
        abort();
    tp_free(text);
    tp_free(before);
    tp_free(after);
    tp_config_free(cfg);
    return 0;
}
