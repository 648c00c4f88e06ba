/* test_scan_paths.c - the reader's word-at-a-time and 16-bytes-at-a-time
 * scans (SSE2 on x86_64, 64-bit words elsewhere; scan_scalar.c builds the
 * latter here too) against plain byte loops written here, on inputs placed
 * at every alignment: string ends with escapes across 16-byte blocks,
 * whitespace runs, digit runs, non-ASCII bytes in names, and event keys
 * that look like the ones recognised by a word compare. */
#include "analyze/trace/trace.h"
#include "analyze/json/json_scan.h"
#include "scan_scalar.h"
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>

/* The string grammar of tpa_scan_string, one byte at a time: SC_OK with
 * the end (the closing quote) or SC_MORE when the window ends first. */
static int reference_string(const char *open, const char *end, const char **close, bool *esc)
{
    const char *q = open + 1;
    *esc = false;
    while (q < end) {
        if (*q == '"') { *close = q; return SC_OK; }
        if (*q == '\\') { *esc = true; q += 2; continue; }
        q++;
    }
    return SC_MORE;
}

/* Contents with escapes where a 16-byte block ends (the caller shifts them
 * through every alignment). */
static const char *const string_bodies[] = {
    "", "a", "plain text of more than sixteen bytes in all",
    "\\\"", "\\\\", "\\\\\\\"", "ab\\\"cd", "0123456789abcde\\\"", "0123456789abcd\\\\\\\"x",
    "\\u00e9\\n\\t", "fifteen bytes..\\\\", "sixteen bytes...\\\"", "\\\\\\\\\\\\\\\\",
    "x\\\"x\\\"x\\\"x\\\"x\\\"x\\\"x\\\"x\\\"x\\\"x\\\"", "\xc3\xa9\xe2\x82\xac and more text after it",
};

TP_TEST(string_scan_matches_bytewise_at_every_alignment)
{
    char doc[160];
    for (size_t b = 0; b < sizeof string_bodies / sizeof string_bodies[0]; b++) {
        for (int shift = 0; shift < 32; shift++) {
            int len = snprintf(doc, sizeof doc, "%*s\"%s\", \"next\": 1}", shift, "", string_bodies[b]);
            const char *open = doc + shift;
            /* every window end, so the end falls inside, on and after each escape */
            for (const char *end = open + 1; end <= doc + len; end++) {
                const char *want_close = NULL;
                bool want_esc;
                int want = reference_string(open, end, &want_close, &want_esc);
                const char *p = open, *s = NULL;
                size_t n = 0;
                bool esc = false;
                tpa_scanerr e = {0};
                int got = tpa_scan_string(&p, end, &e, &s, &n, &esc);
                const char *sp = open, *ss = NULL;
                size_t sn = 0;
                bool sesc = false;
                int sgot = scalar_scan_string(&sp, end, &ss, &sn, &sesc);
                CHECK_EQ_INT(got, want);
                CHECK_EQ_INT(sgot, want);
                if (got == SC_OK && want == SC_OK) {
                    CHECK(s == open + 1);
                    CHECK_EQ_INT(n, want_close - (open + 1));
                    CHECK(p == want_close + 1);
                    CHECK_EQ_INT(esc, want_esc);
                }
                if (sgot == SC_OK && want == SC_OK) {
                    CHECK(ss == open + 1 && sp == want_close + 1);
                    CHECK_EQ_INT(sn, n);
                    CHECK_EQ_INT(sesc, want_esc);
                }
            }
        }
    }
}

TP_TEST(whitespace_skip_matches_bytewise_at_every_alignment)
{
    static const char ws[] = " \n\r\t";
    static const char stops[] = {'"', '{', 'x', '\x0b', '\x01', '\x7f', (char)0x80, (char)0xff, 0};
    char doc[96];
    for (int shift = 0; shift < 16; shift++) {
        for (int run = 0; run < 48; run++) {
            for (size_t k = 0; k < sizeof stops; k++) {
                memset(doc, 'a', sizeof doc);
                for (int i = 0; i < run; i++) doc[shift + i] = ws[(i * 7 + k) % 4];
                doc[shift + run] = stops[k];
                const char *p = doc + shift;
                /* the window ending inside the run, on the stop, after it */
                for (const char *end = p; end <= doc + shift + run + 1; end++) {
                    const char *want = p;
                    while (want < end && (*want == ' ' || *want == '\n' || *want == '\r' || *want == '\t'))
                        want++;
                    CHECK(tpa_skip_ws(p, end) == want);
                    CHECK(scalar_skip_ws(p, end) == want);
                }
            }
        }
    }
}

static unsigned reference_digit_run(const char *p)
{
    unsigned n = 0;
    while (n < 8 && p[n] >= '0' && p[n] <= '9') n++;
    return n;
}

TP_TEST(digit_runs_match_bytewise)
{
    /* every run length, followed by bytes near the digits and ones whose
     * +6 carries into the next byte */
    static const unsigned char stops[] = {'/', ':', '.', 'e', ' ', ',', '}', 0, 0x7f, 0x80, 0xf9, 0xfa, 0xff};
    char w[16];
    for (unsigned run = 0; run <= 8; run++) {
        for (size_t s = 0; s < sizeof stops; s++) {
            for (unsigned first = 0; first < 10; first++) {
                for (unsigned i = 0; i < 16; i++) w[i] = (char)('0' + (first + 3 * i) % 10);
                if (run < 8) w[run] = (char)stops[s];
                if (run < 7) w[run + 1] = (char)stops[(s + 1) % sizeof stops];
                CHECK_EQ_INT(tpa_digit_run8(w), reference_digit_run(w));
                if (run) {
                    uint64_t want = 0;
                    for (unsigned i = 0; i < run; i++) want = want * 10 + (uint64_t)(w[i] - '0');
                    CHECK_EQ_INT(tpa_digits_value(w, run), want);
                }
            }
        }
    }
    uint64_t x = 0x9E3779B97F4A7C15ULL;  /* random words, digits made likely */
    for (int k = 0; k < 20000; k++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        for (int i = 0; i < 8; i++) {
            unsigned char c = (unsigned char)(x >> (8 * i));
            w[i] = (char)(c < 200 ? '0' + c % 10 : c);
        }
        unsigned want = reference_digit_run(w);
        CHECK_EQ_INT(tpa_digit_run8(w), want);
        if (want) {
            uint64_t v = 0;
            for (unsigned i = 0; i < want; i++) v = v * 10 + (uint64_t)(w[i] - '0');
            CHECK_EQ_INT(tpa_digits_value(w, want), v);
        }
    }
}

/* One event whose name holds `bad` at byte `at` of `len` 'a's. */
static int read_name(const char *bad, size_t at, size_t len, tpa_error *err, char *name, size_t cap)
{
    char doc[256];
    char body[96];
    memset(body, 'a', len);
    body[len] = 0;
    size_t blen = strlen(bad);
    memcpy(body + at, bad, blen);
    if (at + blen > len) body[at + blen] = 0;
    int n = snprintf(doc, sizeof doc, "[{\"ph\": \"X\", \"name\": \"%s\", \"ts\": 1, \"dur\": 2}]", body);
    tpa_reader *r = tpa_reader_open_mem(doc, (size_t)n, err);
    tpa_event ev;
    int rc = tpa_reader_next(r, &ev, err);
    if (rc > 0) snprintf(name, cap, "%.*s", (int)ev.name.n, ev.name.p);
    tpa_reader_close(r);
    return rc;
}

TP_TEST(names_checked_for_utf8_at_every_position)
{
    static const size_t name_at = 22;  /* where the name's text starts in read_name's document */
    char name[128];
    for (size_t len = 1; len < 70; len++) {
        for (size_t at = 0; at < len; at++) {
            tpa_error err;
            memset(&err, 0, sizeof err);
            CHECK_EQ_INT(read_name("\xff", at, len, &err, name, sizeof name), -1);
            CHECK_EQ_INT(err.code, TPA_ERR_UTF8);
            CHECK_EQ_INT(err.offset, name_at + at);
            CHECK_EQ_INT(read_name("\xc3\xa9", at, len, &err, name, sizeof name), 1);
            CHECK_EQ_INT(strlen(name), len > at + 1 ? len : at + 2);
            CHECK(memcmp(name + at, "\xc3\xa9", 2) == 0);
            CHECK_EQ_INT(read_name("\xc3", at, len, &err, name, sizeof name), -1);  /* cut short */
            CHECK_EQ_INT(err.offset, name_at + at);
        }
    }
}

TP_TEST(keys_like_the_known_ones_are_not_taken_for_them)
{
    static const char doc[] =
        "[{\"phx\": \"Y\", \"ph\": \"X\", \"pidx\": 9, \"tsx\": 7, \"names\": \"b\", \"name\": \"a\","
        " \"arg\": {\"device\": 3}, \"catx\": \"q\", \"cat\": \"c\", \"idx\": 2, \"durx\": 9,"
        " \"dur\": 1.5, \"ts\": 2, \"tidx\": 5, \"tid\": 4, \"pid\": 5, \"i\": 1, \"p\": 2,"
        " \"args\": {\"device\": 1}, \"id\": 3, \"\": 0},\n"
        " {\"p\\u0068\": \"i\", \"name\": \"escaped key\", \"ts\": 3}]";
    for (size_t k = 0; k < 48; k++) {  /* keys also cut by the window end */
        tpa_error err;
        tpa_reader *r = tpa_reader_open_mem(doc, sizeof doc - 1, &err);
        tpa_reader_set_max_read(r, k);
        tpa_event ev;
        CHECK_EQ_INT(tpa_reader_next(r, &ev, &err), 1);
        CHECK(ev.ph == 'X');
        CHECK(ev.name.n == 1 && ev.name.p[0] == 'a');
        CHECK(ev.cat.n == 1 && ev.cat.p[0] == 'c');
        CHECK_EQ_INT(ev.ts_ns, 2000);
        CHECK_EQ_INT(ev.dur_ns, 1500);
        CHECK_EQ_INT(ev.pid, 5);
        CHECK_EQ_INT(ev.tid, 4);
        CHECK_EQ_INT(ev.device, 1);
        CHECK_EQ_INT(ev.v_id.len, 1);
        CHECK_EQ_INT(tpa_reader_next(r, &ev, &err), 1);
        CHECK(ev.ph == 0);  /* the escaped spelling is another key, as before */
        CHECK_EQ_INT(ev.ts_ns, 3000);
        CHECK_EQ_INT(tpa_reader_next(r, &ev, &err), 0);
        tpa_reader_close(r);
    }
}

int main(void)
{
    RUN(string_scan_matches_bytewise_at_every_alignment);
    RUN(whitespace_skip_matches_bytewise_at_every_alignment);
    RUN(digit_runs_match_bytewise);
    RUN(names_checked_for_utf8_at_every_position);
    RUN(keys_like_the_known_ones_are_not_taken_for_them);
    return tp_test_finish();
}
