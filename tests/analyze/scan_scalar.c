/* scan_scalar.c - the inline scans of json_scan.h compiled without SSE2:
 * the 8-bytes-in-a-word path that targets without it take, so that
 * test_scan_paths runs both paths on the same inputs. */
#undef __SSE2__
#include "analyze/json/json_scan.h"

#include "scan_scalar.h"

int scalar_scan_string(const char **pp, const char *end, const char **s, size_t *n, bool *escaped)
{
    tpa_scanerr e = {0};
    return tpa_scan_string(pp, end, &e, s, n, escaped);
}

const char *scalar_skip_ws(const char *p, const char *end)
{
    return tpa_skip_ws(p, end);
}
