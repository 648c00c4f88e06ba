/*
 * names.h - process-wide name registry: string <-> dense id (1, 2, ...).
 *
 * Lookups are lock-free (open addressing over atomically published,
 * immutable entries); inserting a new name takes a mutex. Names are copied
 * and live for the process. When the table is full, new names map to the
 * id of "<other>" (counted), so callers never fail. Id 0 means "no name".
 */
#ifndef TP_CORE_NAMES_H
#define TP_CORE_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* Capacity of the registry (ids 1..TPI_NAMES_MAX-1). */
#ifdef TP_SMALL_LIMITS
#define TPI_NAMES_MAX 64
#else
#define TPI_NAMES_MAX 32768
#endif

uint32_t tpi_names_intern(const char *name);
/* Interns at most `n` bytes of name. */
uint32_t tpi_names_intern_n(const char *name, size_t n);
/* Names that did not fit (mapped to "<other>"). */
uint64_t tpi_names_overflow(void);

#endif
