/*
 * cmd_top.c - `trainprof top [PATH]`: watch running jobs live (issue 30,
 * docs/TOP.md). Reads the live.json of each run (top_state.c), draws a
 * frame (top_render.c) in place every --interval with plain ANSI escapes
 * (no curses: works over SSH and in tmux, no colours), arrow keys choose
 * the run of the detail panel, q quits. --once prints one frame, --json
 * one JSON object.
 */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"
#include "top_render.h"
#include "top_state.h"

static const char USAGE[] =
    "usage: trainprof top [--once | --json] [--interval SECONDS] [--rows N] [PATH]\n"
    "Watch profiled runs live: per process or rank, its state (running, stalled,\n"
    "ended), step, last and median step time, samples/s, data-loading share, top\n"
    "zone, RSS and GPU memory and the seconds since its last step; the rank that holds\n"
    "a job back first, named as the straggler; the chosen run's top zones over its\n"
    "last steps and its step times as a sparkline.\n\n"
    "PATH: a run directory, a job directory (rank<r>/ inside) or a directory of\n"
    "those (the runs still going, else the newest); default ./runs.\n\n"
    "  --interval S  redraw every S seconds (default 1; e.g. 0.5, 2, 500ms)\n"
    "  --once        print one frame and exit (also when stdout is not a terminal)\n"
    "  --json        print one JSON object and exit:\n"
    "                {\"runs\": [{\"dir\", \"rank\", \"pid\", \"state\", \"ended_reason\", \"step\",\n"
    "                \"last_step_s\", \"median_step_s\", \"samples_per_s\", \"since_step_s\",\n"
    "                \"data_share\", \"top\": [{\"name\", \"share\"}], \"in_zone\", \"in_zone_s\",\n"
    "                \"rss_bytes\", \"gpu_bytes\", \"host\"}], \"straggler\": RANK or null}\n"
    "  --rows N      lines of the frame (default: the terminal's height; with --once\n"
    "                and no terminal, every run)\n"
    "Keys: up/down (or k/j) choose a run, Home/End the first/last, q quits.\n"
    "States: stalled = no step for 3 median steps and at least 2 s; ended = closed,\n"
    "or its process is gone (said which). Runs need profiling.live (default true).\n"
    "Exit: 0 ok, 2 bad input or no runs under PATH. Details: docs/TOP.md.\n";

typedef struct top_opts {
    const char *path;
    int once, json;
    double interval;
    int rows;               /* 0: the terminal's */
} top_opts;

static int parse_interval(const char *v, double *out)
{
    char *end;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || end == v)
        return -1;
    if (strcmp(end, "ms") == 0)
        x /= 1000;
    else if (*end && strcmp(end, "s") != 0)
        return -1;
    if (!(x >= 0.05 && x <= 3600))
        return -1;
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, top_opts *o)
{
    const char *v;
    o->interval = 1;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(USAGE, stdout);
            return -1;
        } else if (!strcmp(argv[i], "--once")) {
            o->once = 1;
        } else if (!strcmp(argv[i], "--json")) {
            o->json = 1;
        } else if (cli_opt(argc, argv, &i, "--interval", &v)) {
            if (parse_interval(v, &o->interval) != 0)
                return cli_fail("top", "--interval needs seconds from 0.05 to 3600 (e.g. 1, 0.5, 500ms)");
        } else if (cli_opt(argc, argv, &i, "--rows", &v)) {
            size_t n;
            if (!v || !cli_parse_size(v, &n) || n < 8 || n > 100000)
                return cli_fail("top", "--rows needs a number of lines from 8 to 100000");
            o->rows = (int)n;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_fail("top", "unknown option %s", argv[i]);
        } else if (o->path) {
            return cli_fail("top", "one PATH at a time (got '%s' and '%s')", o->path, argv[i]);
        } else {
            o->path = argv[i];
        }
    }
    if (!o->path)
        o->path = "runs";
    return 0;
}

static void terminal_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = 120;
    *rows = 40;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

static int utf8_locale(void)
{
    setlocale(LC_CTYPE, "");
    const char *cs = nl_langinfo(CODESET);
    return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

static int write_all_stdout(const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(STDOUT_FILENO, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A path that does not exist (-1) or holds no run (-2): both bad input. */
static int report_load(int rc, const char *err)
{
    (void)rc;
    fprintf(stderr, "trainprof top: %s\n", err);
    return CLI_BAD_INPUT;
}

static int run_once(const top_opts *o)
{
    top_set set;
    char err[PATH_MAX + 256];
    int rc = top_load(&set, o->path, err, sizeof err);
    if (rc != 0)
        return report_load(rc, err);
    tpu_buf b = {0};
    if (o->json) {
        top_render_json(&b, &set);
    } else {
        top_view v = {0};
        int cols, rows;
        terminal_size(&cols, &rows);
        int tty = isatty(STDOUT_FILENO);
        v.width = tty ? cols : 160;
        v.rows = o->rows ? o->rows : tty ? rows : 0;
        v.utf8 = utf8_locale();
        top_render_text(&b, &set, &v);
    }
    int ok = !b.oom && write_all_stdout(b.data ? b.data : "", b.len) == 0;
    tpu_buf_free(&b);
    top_free(&set);
    return ok ? CLI_OK : CLI_BAD_INPUT;
}

/* ---- the terminal view ----------------------------------------------------- */

static volatile sig_atomic_t g_quit; /* SIGWINCH only interrupts poll: the next frame reads the size */
static struct termios g_saved;
static int g_raw;

static void on_signal(int sig)
{
    if (sig != SIGWINCH)
        g_quit = 1;
}

static void restore_terminal(void)
{
    if (!g_raw)
        return;
    static const char leave[] = "\033[?25h\033[?1049l";
    write_all_stdout(leave, sizeof leave - 1);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &g_saved);
    g_raw = 0;
}

static int enter_terminal(void)
{
    if (tcgetattr(STDIN_FILENO, &g_saved) != 0)
        return -1;
    struct termios raw = g_saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0)
        return -1;
    g_raw = 1;
    atexit(restore_terminal);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGWINCH, &sa, NULL);
    static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
    return write_all_stdout(enter, sizeof enter - 1);
}

/* Keys waiting on stdin: moves *sel; 1 when q was pressed. */
static int read_keys(long *sel, size_t n)
{
    char k[64];
    ssize_t got = read(STDIN_FILENO, k, sizeof k);
    for (ssize_t i = 0; i < got; i++) {
        if (k[i] == 'q' || k[i] == 'Q' || k[i] == 3 /* ^C */)
            return 1;
        int up = k[i] == 'k', down = k[i] == 'j', home = 0, end = 0;
        if (k[i] == '\033' && i + 2 < got && (k[i + 1] == '[' || k[i + 1] == 'O')) {
            char c = k[i + 2];
            up = c == 'A';
            down = c == 'B';
            home = c == 'H';
            end = c == 'F';
            i += 2;
        }
        if (up && *sel > 0)
            (*sel)--;
        if (down && *sel + 1 < (long)n)
            (*sel)++;
        if (home)
            *sel = 0;
        if (end && n)
            *sel = (long)n - 1;
    }
    return 0;
}

/* Draws one frame in place: home, each line cleared to its end, then the
 * rest of the screen cleared (no flicker: nothing is erased first). */
static void draw(const top_set *set, const top_view *v, const char *error)
{
    tpu_buf frame = {0}, out = {0};
    if (error) {
        tpu_buf_printf(&frame, "trainprof top - %s\n\n%s\n(waiting; q quits)\n", set->path, error);
    } else {
        top_render_text(&frame, set, v);
    }
    tpu_buf_puts(&out, "\033[H");
    int lines = 0;
    for (const char *p = frame.data ? frame.data : ""; *p && lines < v->rows; lines++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        tpu_buf_append(&out, p, len);
        tpu_buf_puts(&out, lines + 1 < v->rows ? "\033[K\r\n" : "\033[K");
        p += len + (nl != NULL);
    }
    tpu_buf_puts(&out, "\033[J");
    if (!out.oom)
        write_all_stdout(out.data, out.len);
    tpu_buf_free(&frame);
    tpu_buf_free(&out);
}

/* Keeps the chosen run across reloads (the order changes): by directory. */
static long find_dir(const top_set *set, const char *dir)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->runs[i].dir, dir) == 0)
            return (long)i;
    return -1;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_terminal(const top_opts *o)
{
    top_set set;
    char err[PATH_MAX + 256], chosen[PATH_MAX] = "";
    int rc = top_load(&set, o->path, err, sizeof err);
    if (rc != 0)
        return report_load(rc, err); /* nothing to watch: say so before taking the screen */
    if (enter_terminal() != 0) {
        top_free(&set);
        return run_once(o);
    }
    top_view v = {0};
    v.utf8 = utf8_locale();
    v.highlight = 1;
    v.interval_s = o->interval;
    int loaded = 1, failed = 0;
    double next = mono_s();
    while (!g_quit) {
        if (!loaded && mono_s() >= next) {
            top_free(&set);
            failed = top_load(&set, o->path, err, sizeof err) != 0;
            loaded = 1;
        }
        if (loaded) {
            next = mono_s() + o->interval;
            loaded = 0;
        }
        terminal_size(&v.width, &v.rows);
        if (o->rows)
            v.rows = o->rows;
        long sel = chosen[0] ? find_dir(&set, chosen) : -1;
        v.selected = sel >= 0 ? sel : 0;
        draw(&set, &v, failed ? err : NULL);
        double wait = next - mono_s();
        struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
        int r = poll(&pfd, 1, wait > 0 ? (int)(wait * 1000) + 1 : 0);
        if (r > 0 && read_keys(&v.selected, set.n))
            break;
        if (set.n && v.selected >= 0 && (size_t)v.selected < set.n)
            snprintf(chosen, sizeof chosen, "%s", set.runs[v.selected].dir);
    }
    restore_terminal();
    top_free(&set);
    return CLI_OK;
}

int cmd_top(int argc, char **argv)
{
    top_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? CLI_OK : rc;
    if (o.json || o.once || !isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
        return run_once(&o);
    return run_terminal(&o);
}
