/* scan_scalar.h - json_scan.h's inline scans built without SSE2 (scan_scalar.c). */
#ifndef TP_TEST_SCAN_SCALAR_H
#define TP_TEST_SCAN_SCALAR_H

#include <stdbool.h>
#include <stddef.h>

int scalar_scan_string(const char **pp, const char *end, const char **s, size_t *n, bool *escaped);
const char *scalar_skip_ws(const char *p, const char *end);

#endif
