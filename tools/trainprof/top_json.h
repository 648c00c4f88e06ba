/*
 * top_json.h - a small strict JSON reader for `trainprof top` (the live
 * state and the summaries of a run directory: a few KB each).
 *
 * The whole text is parsed into a tree of nodes (RFC 8259: no comments, no
 * trailing commas, one value, nothing after it but white space). Strings
 * are decoded (escapes, \u surrogate pairs) into the document's own memory.
 * Numbers keep their text too, so 64-bit integers (nanosecond times) are
 * read exactly.
 */
#ifndef TP_CLI_TOP_JSON_H
#define TP_CLI_TOP_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum tj_type { TJ_NULL, TJ_BOOL, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ } tj_type;

typedef struct tj_node {
    tj_type type;
    const char *key;       /* member name inside an object, else NULL */
    const char *str;       /* TJ_STR: decoded, NUL-terminated; TJ_NUM: the number's text */
    double num;            /* TJ_NUM; TJ_BOOL: 0 or 1 */
    int first, next;       /* first child / next sibling (node index), -1 = none */
    int count;             /* children of an array or object */
} tj_node;

typedef struct tj_doc {
    tj_node *nodes;
    int n, cap;
    char *strs;            /* decoded strings, one block */
    size_t strs_len, strs_cap;
} tj_doc;

/* Parses text[0..len). 0, or -1 with "byte offset N: what" in err. */
int tj_parse(tj_doc *d, const char *text, size_t len, char *err, size_t errlen);
void tj_free(tj_doc *d);

/* The root (NULL when the document is empty). */
const tj_node *tj_root(const tj_doc *d);
/* Member `key` of an object (NULL when absent or obj is not an object). */
const tj_node *tj_get(const tj_doc *d, const tj_node *obj, const char *key);
/* Child i of an array or object (NULL when out of range). */
const tj_node *tj_at(const tj_doc *d, const tj_node *arr, int i);
/* Typed reads of member `key`: the default when absent or of another type. */
double tj_num(const tj_doc *d, const tj_node *obj, const char *key, double def);
uint64_t tj_u64(const tj_doc *d, const tj_node *obj, const char *key, uint64_t def);
const char *tj_str(const tj_doc *d, const tj_node *obj, const char *key, const char *def);
int tj_bool(const tj_doc *d, const tj_node *obj, const char *key, int def);

#endif
