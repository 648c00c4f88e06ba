/*
 * pbwire.h - the few protobuf wire-format writers the Perfetto and
 * TensorBoard sinks need, appending to a tpu_buf.
 *
 * Contract: every function appends one complete field (tag + payload) to
 * `b`; an allocation failure sets b->oom (see buf.h) and later calls do
 * nothing, so callers check b->oom once. Nested messages are written in
 * place: tpi_pb_begin() reserves one length byte and returns a mark,
 * tpi_pb_end() patches the length (moving the payload when it needs more
 * than one byte), so no temporary buffers are needed.
 */
#ifndef TP_SINK_PBWIRE_H
#define TP_SINK_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

enum { TPI_PB_VARINT = 0, TPI_PB_I64 = 1, TPI_PB_LEN = 2, TPI_PB_I32 = 5 };

/* Bytes a varint of v takes (1..10). */
size_t tpi_pb_varint_size(uint64_t v);
/* Encodes v into out (at least 10 bytes); returns the bytes written. */
size_t tpi_pb_varint_encode(uint8_t *out, uint64_t v);

void tpi_pb_varint(tpu_buf *b, uint64_t v);               /* bare varint, no tag */
void tpi_pb_tag(tpu_buf *b, uint32_t field, int wire_type);
void tpi_pb_uint(tpu_buf *b, uint32_t field, uint64_t v);  /* uint32/uint64/bool/enum */
void tpi_pb_int(tpu_buf *b, uint32_t field, int64_t v);    /* int32/int64 (two's complement) */
void tpi_pb_double(tpu_buf *b, uint32_t field, double v);  /* fixed64 */
void tpi_pb_float(tpu_buf *b, uint32_t field, float v);    /* fixed32 */
void tpi_pb_bytes(tpu_buf *b, uint32_t field, const void *data, size_t n);
void tpi_pb_string(tpu_buf *b, uint32_t field, const char *s);

/* Nested message: size_t m = tpi_pb_begin(b, 11); ...fields...; tpi_pb_end(b, m); */
size_t tpi_pb_begin(tpu_buf *b, uint32_t field);
void tpi_pb_end(tpu_buf *b, size_t mark);

#endif
