/* The CPU backend's thread governor (backend_cpu_internal.h): when the user
 * did not choose a thread count, the backend runs on every core it may use
 * while those cores are free, and on fewer while other work holds them.
 *
 * Why: a parallel region lasts until its last thread has run its share. On
 * a machine where another process keeps a core busy, a thread of ours
 * waits for a CPU (the scheduler shares the core between it and the other
 * process), and its siblings wait for it at the region's end; a step of
 * hundreds of regions then takes longer on 2 threads than on 1 (issue 23:
 * ResNet-18's step went from 0.57 s to 45 s beside one busy process on the
 * project's Xeon, where one thread took 3.9 s for two steps; on an AMD
 * EPYC, 3.2 s against 1.9 s, libgomp's waiting 45% of the cycles). One
 * thread on the free core is the step of an idle machine's one thread.
 *
 * How: every RM_CPU_GOVERN_WINDOW_S of work (checked between layer calls,
 * a clock read), the governor reads how long this process's threads waited
 * for a CPU while runnable (Linux's schedstat run_delay, summed over
 * /proc/self/task) and how long the CPUs this process may use were idle
 * (/proc/stat): threads that waited a fifth of their time or more, in two
 * windows in a row, mean the cores are shared, and the count drops by the
 * cores' worth of waiting. After a drop it waits a number of windows, then
 * tries one more thread (at once when the usable cores stood idle for most
 * of a core); a rise undone within RISE_TRIAL windows makes the wait 4 times
 * longer, up to MAX_HOLD windows, so that a machine that stays busy costs a window at
 * more threads now and then, and a machine that frees up gets its cores
 * back within seconds.
 *
 * Why it may change the count inside a step: every kernel of both
 * libraries gives the same bits at any thread count (backend_cpu.h), so
 * the count is a question of speed only. Where the readings cannot be
 * made (no /proc, no schedstat), the governor stops and the count stays. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_ISSET */
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_cpu_internal.h"
#include "clock.h"
#include "log.h"

/* Threads that waited for a CPU this share of their time or more: the
 * cores are shared. (An idle machine's background, kernel threads and a
 * shell, stays under a few percent.) */
#define CONTENDED_SHARE 0.2
/* Idle time of the usable CPUs, in cores over the window, that lets one
 * more thread run without waiting for the hold. */
#define FREE_CORE 0.8
/* Windows to wait after a drop before trying more threads: from 1 to this
 * (64 windows, about 13 s), 4 times longer after a rise that was followed
 * by a drop within RISE_TRIAL windows (on a machine that stays busy, trials
 * at windows 2, 7, 24, then every 65: under 2% of the time), back to 1
 * after a rise that held longer. */
#define MAX_HOLD 64
#define RISE_TRIAL 3

/* The readings run inside training steps, which allocate nothing
 * (tests/faults/test_step_alloc.c): so no opendir or stdio here, only
 * open, read, getdents64 and buffers on the stack. */

/* Up to len - 1 bytes of the start of file `path`, NUL-terminated; -1 when
 * it cannot be read. */
static long read_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long n = (long)read(fd, buf, len - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = '\0';
    return n;
}

/* run_delay (nanoseconds, the second field of schedstat) of every thread
 * of this process. */
static int read_wait(double *wait_s)
{
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    double sum = 0;
    int n = 0;
    char ents[4096];
    long got;
    while ((got = (long)getdents64(dir, ents, sizeof ents)) > 0) {
        for (long at = 0; at < got;) {
            const struct dirent64 *de = (const struct dirent64 *)(ents + at);
            at += de->d_reclen;
            if (de->d_name[0] == '.') continue;
            char path[64], text[128];
            snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", de->d_name);
            if (read_text(path, text, sizeof text) < 0) continue; /* the thread ended meanwhile */
            char *end;
            strtoull(text, &end, 10); /* time on a CPU */
            unsigned long long delay = strtoull(end, &end, 10);
            sum += 1e-9 * (double)delay, n++;
        }
    }
    close(dir);
    *wait_s = sum;
    return n ? 0 : -1;
}

/* Idle and iowait time of the CPUs in this process's affinity (the cpuN
 * lines of /proc/stat, in clock ticks), read a block at a time. */
static int read_idle(double *idle_s)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    long hz = sysconf(_SC_CLK_TCK);
    if (sched_getaffinity(0, sizeof set, &set) != 0 || hz <= 0) return -1;
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[4096];
    size_t have = 0;
    double sum = 0;
    int n = 0, more = 1;
    while (more) {
        long got = (long)read(fd, buf + have, sizeof buf - 1 - have);
        if (got <= 0)
            more = 0;
        else
            have += (size_t)got;
        buf[have] = '\0';
        char *line = buf, *nl;
        /* Whole lines; at the end of the file, the last one too. */
        while ((nl = strchr(line, '\n')) || (!more && *line)) {
            if (nl) *nl = '\0';
            int cpu;
            unsigned long long user, nice, sys, idle, iowait;
            if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu", &cpu, &user, &nice, &sys, &idle, &iowait) == 6 &&
                cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set))
                sum += (double)(idle + iowait) / (double)hz, n++;
            line = nl ? nl + 1 : line + strlen(line);
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) have = 0; /* a line longer than the buffer: not a cpu line */
    }
    close(fd);
    *idle_s = sum;
    return n ? 0 : -1;
}

int rm_cpu_load_read_proc(void *ctx, rm_cpu_load *out)
{
    (void)ctx;
    out->wall_s = rm_now();
    return read_wait(&out->wait_s) || read_idle(&out->idle_s) ? -1 : 0;
}

void rm_cpu_governor_start(rm_cpu_governor *g, int most, rm_cpu_load_fn read, void *read_ctx, double window_s)
{
    memset(g, 0, sizeof *g);
    g->on = most > 1 && read != NULL;
    g->most = most;
    g->read = read;
    g->read_ctx = read_ctx;
    g->window_s = window_s;
    g->hold_len = 1;
}

int rm_cpu_governor_decide(rm_cpu_governor *g, int cur, double wall, double wait, double idle)
{
    if (!(wall > 0)) return cur;
    g->windows++;
    double shared = wait / wall; /* cores' worth of our threads' waiting */
    int trial = g->rose_at && g->windows - g->rose_at <= RISE_TRIAL;
    if (cur > 1 && shared >= CONTENDED_SHARE * cur) {
        /* One window can be another process's burst (a compiler starting):
         * two in a row drop the count, or one while a rise is on trial. */
        if (++g->strikes < (trial ? 1 : 2)) return cur;
        g->strikes = 0;
        int less = (int)(shared + 0.5);
        int next = cur - (less < 1 ? 1 : less);
        if (next < 1) next = 1;
        if (trial) /* the rise was undone at once: try less often */
            g->hold_len = g->hold_len * 4 > MAX_HOLD ? MAX_HOLD : g->hold_len * 4;
        g->rose_at = 0;
        g->hold = g->hold_len;
        g->drops++;
        return next;
    }
    g->strikes = 0;
    if (g->rose_at && !trial) g->hold_len = 1, g->rose_at = 0; /* the rise held */
    /* Fewer threads than cores, and those threads not waiting themselves:
     * once the hold is over, try one more (a core another process leaves
     * idle says so at once). Idle time alone would not do: a core can be
     * busy with work the scheduler ranks below ours. */
    if (cur < g->most && shared < CONTENDED_SHARE * cur) {
        if (idle / wall >= FREE_CORE) g->hold = 0;
        if (g->hold > 0) {
            g->hold--;
            return cur;
        }
        g->rose_at = g->windows;
        return cur + 1;
    }
    return cur;
}

int rm_cpu_governor_tick(rm_cpu_governor *g, int cur)
{
    if (!g->on) return cur;
    if (g->have_last && g->window_s > 0 && rm_now() - g->last_check < g->window_s) return cur;
    rm_cpu_load now;
    if (g->read(g->read_ctx, &now)) {
        g->on = 0; /* cannot read the machine: keep the count */
        RM_LOG_INFO("cpu backend: cannot read the cores' load (/proc); staying at %d threads", cur);
        return cur;
    }
    g->last_check = rm_now();
    if (!g->have_last) {
        g->last = now;
        g->have_last = 1;
        return cur;
    }
    double wall = now.wall_s - g->last.wall_s, wait = now.wait_s - g->last.wait_s, idle = now.idle_s - g->last.idle_s;
    g->last = now;
    int next = rm_cpu_governor_decide(g, cur, wall, wait, idle);
    RM_LOG_DEBUG("cpu backend: %d threads, %.3f s: waited %.3f s, idle %.3f s -> %d", cur, wall, wait, idle, next);
    if (next != cur)
        RM_LOG_INFO("cpu backend: %d thread%s of %d: in the last %.2f s its threads waited %.2f s for a CPU, "
                    "the cores were idle %.2f s",
                    next, next == 1 ? "" : "s", g->most, wall, wait, idle);
    return next;
}
