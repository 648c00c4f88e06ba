/*
 * dfmt.h - doubles as decimal text, exactly as printf writes them, without
 * printf (and without strtod for the round trip); and decimal text read
 * back as strtod reads it, without strtod for the common short numbers.
 *
 * printf's "%.*g" costs 1,500-4,000 instructions a value in glibc (a
 * multi-precision conversion), and the shortest round-trip form the JSON
 * writers use costed up to three of them plus a strtod each. Here a value
 * v = m * 2^e is scaled by 10^k as an exact fraction of 128-bit integers
 * (m * 5^k / 2^-(e+k), or m * 2^e / 10^-k), so its digits, the rounding
 * (half to even, as printf in the default rounding mode) and the round-trip
 * test (is the decimal inside v's rounding interval?) are exact integer
 * arithmetic. Values whose fraction does not fit (below about 1e-14 or
 * above about 1e37, subnormals, non-finite) go to printf/strtod as before:
 * the text is the same either way.
 */
#ifndef TP_UTIL_DFMT_H
#define TP_UTIL_DFMT_H

#include <stddef.h>

/* Room for any text written here ("-1.2345678901234567e-308" and NUL). */
#define TPU_DFMT_MAX 32

/* Writes v as snprintf(out, TPU_DFMT_MAX, "%.*g", prec, v) does in the C
 * locale (prec 1..17; others are clamped), NUL-terminated; returns the
 * length. */
int tpu_dfmt_g(char *out, double v, int prec);

/* Writes the first of "%.15g", "%.16g", "%.17g" of v that reads back (strtod)
 * as v, NUL-terminated; returns the length. v must be finite. */
int tpu_dfmt_round_trip(char *out, double v);

/* Reads the n bytes at s as strtod reads them: 1 and *out when strtod would
 * consume exactly those n bytes, else 0 (*out then holds what strtod
 * returned). A plain decimal with at most 19 significant digits, a value
 * below 2^53 once they are read as an integer, and at most 22 powers of ten
 * to apply is one exact multiplication or division (correctly rounded, as
 * strtod); anything else is handed to strtod. */
int tpu_dparse(const char *s, size_t n, double *out);

#endif
