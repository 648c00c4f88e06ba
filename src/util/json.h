/*
 * json.h - streaming JSON writer into a tpu_buf.
 *
 * Commas and (optionally) indentation are handled by the writer:
 *     tpu_json j; tpu_json_init(&j, &buf, 1);
 *     tpu_json_begin_object(&j);
 *     tpu_json_key(&j, "step"); tpu_json_uint(&j, 3);
 *     tpu_json_end_object(&j);
 * Strings are escaped; invalid UTF-8 becomes U+FFFD; non-finite doubles are
 * written as null, so the output is always valid JSON.
 */
#ifndef TP_UTIL_JSON_H
#define TP_UTIL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define TPU_JSON_MAX_DEPTH 64

typedef struct tpu_json {
    tpu_buf *out;
    int depth;
    int pretty;                               /* indent with 2 spaces */
    unsigned char has_items[TPU_JSON_MAX_DEPTH];
    int after_key;
} tpu_json;

void tpu_json_init(tpu_json *j, tpu_buf *out, int pretty);
void tpu_json_begin_object(tpu_json *j);
void tpu_json_end_object(tpu_json *j);
void tpu_json_begin_array(tpu_json *j);
void tpu_json_end_array(tpu_json *j);
void tpu_json_key(tpu_json *j, const char *key);
void tpu_json_string(tpu_json *j, const char *s);
void tpu_json_string_n(tpu_json *j, const char *s, size_t n);
void tpu_json_int(tpu_json *j, int64_t v);
void tpu_json_uint(tpu_json *j, uint64_t v);
void tpu_json_double(tpu_json *j, double v);   /* shortest round-trip form */
/* Like tpu_json_double, always in a float form ("0.0", "2.0"): Python's json
 * reads a float for every row, as from a reference trainer. */
void tpu_json_float(tpu_json *j, double v);
void tpu_json_bool(tpu_json *j, int v);
void tpu_json_null(tpu_json *j);
/* A value already written as JSON text by the caller (trusted, not checked). */
void tpu_json_raw(tpu_json *j, const char *text, size_t n);

/* Convenience: key + value. */
void tpu_json_kv_string(tpu_json *j, const char *key, const char *v);
void tpu_json_kv_int(tpu_json *j, const char *key, int64_t v);
void tpu_json_kv_uint(tpu_json *j, const char *key, uint64_t v);
void tpu_json_kv_double(tpu_json *j, const char *key, double v);
void tpu_json_kv_float(tpu_json *j, const char *key, double v);
void tpu_json_kv_bool(tpu_json *j, const char *key, int v);

/* Appends s escaped as JSON string contents (no quotes). */
void tpu_json_escape(tpu_buf *b, const char *s, size_t n);
/* Writes the shortest decimal that reads back as v ("null" if not finite). */
void tpu_json_format_double(tpu_buf *b, double v);

#endif
