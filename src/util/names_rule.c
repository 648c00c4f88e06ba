/* names_rule.c - see names_rule.h. */
#include "util/names_rule.h"

#include <string.h>
#include <strings.h>

bool tpu_data_loading_tail(const char *p, size_t n)
{
    static const char *const tails[] = { "loader", "_batch", "_load", " loading", "_wait" };
    for (size_t t = 0; t < sizeof tails / sizeof tails[0]; t++) {
        size_t k = strlen(tails[t]);
        if (k <= n && strncasecmp(p, tails[t], k) == 0) return true;
    }
    return false;
}

bool tpu_name_is_data_loading(const char *name)
{
    for (const char *p = name; p && *p; p++)
        if (strncasecmp(p, "data", 4) == 0 && tpu_data_loading_tail(p + 4, strlen(p + 4))) return true;
    return false;
}
