/*
 * crc32c.h - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as
 * TFRecord framing uses it, and TensorFlow's masking of stored CRCs.
 */
#ifndef TP_SINK_CRC32C_H
#define TP_SINK_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Continues a CRC: start with crc = 0. crc32c("123456789") == 0xE3069283. */
uint32_t tpi_crc32c_update(uint32_t crc, const void *data, size_t n);
static inline uint32_t tpi_crc32c(const void *data, size_t n) { return tpi_crc32c_update(0, data, n); }

/* TFRecord mask: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
static inline uint32_t tpi_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* Appends data framed as one TFRecord (length, masked CRC of the length,
 * data, masked CRC of the data) to out. */
void tpi_tfrecord_frame(tpu_buf *out, const void *data, size_t n);

#endif
