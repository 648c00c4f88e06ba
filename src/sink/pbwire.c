/* Protobuf wire-format writers (see pbwire.h). */
#include <string.h>

#include "sink/pbwire.h"

size_t tpi_pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t tpi_pb_varint_encode(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

void tpi_pb_varint(tpu_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    tpu_buf_append(b, tmp, tpi_pb_varint_encode(tmp, v));
}

void tpi_pb_tag(tpu_buf *b, uint32_t field, int wire_type)
{
    tpi_pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire_type);
}

void tpi_pb_uint(tpu_buf *b, uint32_t field, uint64_t v)
{
    tpi_pb_tag(b, field, TPI_PB_VARINT);
    tpi_pb_varint(b, v);
}

void tpi_pb_int(tpu_buf *b, uint32_t field, int64_t v)
{
    tpi_pb_uint(b, field, (uint64_t)v);
}

static void put_le(tpu_buf *b, uint64_t v, int nbytes)
{
    uint8_t tmp[8];
    for (int i = 0; i < nbytes; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    tpu_buf_append(b, tmp, (size_t)nbytes);
}

void tpi_pb_double(tpu_buf *b, uint32_t field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tpi_pb_tag(b, field, TPI_PB_I64);
    put_le(b, bits, 8);
}

void tpi_pb_float(tpu_buf *b, uint32_t field, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    tpi_pb_tag(b, field, TPI_PB_I32);
    put_le(b, bits, 4);
}

void tpi_pb_bytes(tpu_buf *b, uint32_t field, const void *data, size_t n)
{
    tpi_pb_tag(b, field, TPI_PB_LEN);
    tpi_pb_varint(b, n);
    tpu_buf_append(b, data, n);
}

void tpi_pb_string(tpu_buf *b, uint32_t field, const char *s)
{
    tpi_pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

size_t tpi_pb_begin(tpu_buf *b, uint32_t field)
{
    tpi_pb_tag(b, field, TPI_PB_LEN);
    tpu_buf_putc(b, 0); /* one-byte length placeholder */
    return b->len;      /* payload starts here */
}

void tpi_pb_end(tpu_buf *b, size_t mark)
{
    if (b->oom || mark == 0 || mark > b->len)
        return;
    size_t len = b->len - mark;
    size_t need = tpi_pb_varint_size(len);
    if (need > 1) {
        if (tpu_buf_reserve(b, need - 1) != 0)
            return;
        memmove(b->data + mark + need - 1, b->data + mark, len);
        b->len += need - 1;
    }
    tpi_pb_varint_encode((uint8_t *)b->data + mark - 1, len);
}
