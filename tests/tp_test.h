/*
 * tp_test.h - minimal unit-test macros. One executable = one ctest entry.
 *
 *   TP_TEST(name) { CHECK(x == 1); CHECK_EQ_INT(a, b); CHECK_STR(s, "x"); }
 *   int main(void) { RUN(name); return tp_test_finish(); }
 *
 * A failing CHECK prints file:line and the expression and marks the test
 * failed; the test goes on so one run shows every failure.
 */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tp_test_failures;
static int tp_test_passed, tp_test_failed;
static int tp_test_checks;

#define TP_TEST(name) static void name(void)

#define CHECK(cond)                                                              \
    do {                                                                         \
        tp_test_checks++;                                                        \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            tp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                       \
    do {                                                                         \
        long long tp__a = (long long)(a), tp__b = (long long)(b);                \
        tp_test_checks++;                                                        \
        if (tp__a != tp__b) {                                                    \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__,  \
                    __LINE__, #a, #b, tp__a, tp__b);                             \
            tp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                    \
    do {                                                                         \
        double tp__a = (double)(a), tp__b = (double)(b);                         \
        tp_test_checks++;                                                        \
        if (!(fabs(tp__a - tp__b) <= (tol))) {                                   \
            fprintf(stderr, "%s:%d: %s ~= %s failed: %.9g vs %.9g\n", __FILE__,  \
                    __LINE__, #a, #b, tp__a, tp__b);                             \
            tp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

#define CHECK_STR(a, b)                                                          \
    do {                                                                         \
        const char *tp__a = (a), *tp__b = (b);                                   \
        tp_test_checks++;                                                        \
        if (!tp__a || !tp__b || strcmp(tp__a, tp__b) != 0) {                     \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" vs \"%s\"\n",        \
                    __FILE__, __LINE__, #a, #b, tp__a ? tp__a : "(null)",        \
                    tp__b ? tp__b : "(null)");                                   \
            tp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

/* CHECK that haystack contains needle. */
#define CHECK_CONTAINS(hay, needle)                                              \
    do {                                                                         \
        const char *tp__h = (hay), *tp__n = (needle);                            \
        tp_test_checks++;                                                        \
        if (!tp__h || !strstr(tp__h, tp__n)) {                                   \
            fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, \
                    __LINE__, tp__h ? tp__h : "(null)", tp__n);                  \
            tp_test_failures++;                                                  \
        }                                                                        \
    } while (0)

/* Shuffles v[0..n) (Fisher-Yates), the same way for the same seed. */
static inline void tp_test_shuffle(size_t *v, size_t n, unsigned seed)
{
    for (size_t i = n; i > 1; i--) {
        seed = seed * 1103515245u + 12345u;
        size_t j = (seed >> 8) % i, t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* at 'a's, piece, tail 'b's into out, NUL-terminated; returns the length:
 * a piece alone at each offset of plain text, for the scanners that read
 * 16 bytes at a time. */
static inline size_t tp_test_embed(char *out, size_t at, const char *piece, size_t tail)
{
    size_t pn = strlen(piece);
    memset(out, 'a', at);
    memcpy(out + at, piece, pn);
    memset(out + at + pn, 'b', tail);
    out[at + pn + tail] = 0;
    return at + pn + tail;
}

/* Each {in, out} piece alone at every offset of plain text up to 70 bytes
 * (tp_test_embed) through run (its output malloc'd, NUL-terminated): the
 * number of outputs other than the text with the piece written as out. */
typedef struct tp_test_piece { const char *in, *out; } tp_test_piece;
static inline int tp_test_every_offset(const tp_test_piece *piece, size_t n_pieces,
                                       char *(*run)(const char *text, size_t n))
{
    char in[128], want[160];
    int bad = 0;
    for (size_t k = 0; k < n_pieces; k++)
        for (size_t len = 0; len <= 70; len++)
            for (size_t at = 0; at <= len; at++) {
                size_t n = tp_test_embed(in, at, piece[k].in, len - at);
                tp_test_embed(want, at, piece[k].out, len - at);
                char *got = run(in, n);
                bad += strcmp(got, want) != 0;
                free(got);
            }
    return bad;
}

/* Removes a directory tree the test made, so runs leave nothing in /tmp. */
static inline void tp_test_rm_rf(const char *dir)
{
    char cmd[4200];
    if (!dir || !dir[0] || strchr(dir, '\'') || strlen(dir) > 4000)
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

#define RUN(name)                                                                \
    do {                                                                         \
        int tp__before = tp_test_failures;                                       \
        name();                                                                  \
        if (tp_test_failures == tp__before) {                                    \
            tp_test_passed++;                                                    \
        } else {                                                                 \
            tp_test_failed++;                                                    \
            fprintf(stderr, "FAIL %s\n", #name);                                 \
        }                                                                        \
    } while (0)

static inline int tp_test_finish(void)
{
    printf("%d passed, %d failed (%d checks)\n", tp_test_passed, tp_test_failed, tp_test_checks);
    return tp_test_failed ? 1 : 0;
}

#endif
