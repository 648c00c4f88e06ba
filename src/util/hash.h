/*
 * hash.h - the one byte-string hash of the tree (name registry, sink maps,
 * analyzer tables). Not cryptographic; fast on long names (kernel
 * signatures): word at a time, multiply/xorshift mixing, four words at
 * once from 64 bytes on.
 */
#ifndef TP_UTIL_HASH_H
#define TP_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Hash of the n bytes at p (p may be NULL when n == 0). */
uint64_t tpu_hash_bytes(const void *p, size_t n);

#endif
