/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/loop.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "basic/backoff.h"
#include "basic/errors.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/stop.h"
#include "basic/strv.h"
#include "daemon/http-server.h"
#include "daemon/notify.h"
#include "daemon/progress.h"

enum { SOURCE_SIGNAL = 1, SOURCE_TIMER, SOURCE_INOTIFY, SOURCE_HTTP, SOURCE_PASS_DONE, SOURCE_WATCHDOG };

/* A pass that runs longer than this is hung (every wait in it has a deadline far shorter): the watchdog is
 * no longer fed, so systemd restarts the daemon. */
#define PASS_HUNG_AFTER (30 * 60 * USEC_PER_SEC)

/* The pass runs on a worker thread; everything else (signals, timers, wake-ups, /healthz, /metrics,
 * sd_notify) stays on the loop's thread, which never blocks on a pass. */
typedef struct PassWorker {
        pthread_t thread;
        bool running;      /* loop thread only */
        int done_fd;       /* eventfd: the worker writes once when its pass is over */
        PassReport report; /* the worker's until done_fd fires, then the loop's */
        usec_t started;    /* CLOCK_MONOTONIC */
        const DaemonCallbacks *cb;
        void *userdata;
} PassWorker;

typedef struct Loop {
        const DaemonConfig *cfg;
        const DaemonCallbacks *cb;
        void *userdata;
        int epfd, sigfd, timerfd, inofd, watchdogfd;
        HttpServer *http;
        Metrics metrics;
        PassWorker worker;
        unsigned failures;
        usec_t next_pass;    /* CLOCK_MONOTONIC */
        bool wake_pending;   /* a watched directory changed while a pass ran */
        bool reload_pending; /* SIGHUP while a pass ran: the pass's spec must not change under it */
        bool stop;
} Loop;

usec_t backoff_delay(usec_t min, usec_t max, unsigned failures, double random) {
        usec_t d = backoff_cap(min, max, failures);
        return d - (usec_t)((double)d * 0.2 * random);
}

bool daemon_stop_requested(void) {
        return stop_requested();
}

static int loop_schedule(Loop *l, usec_t when) {
        struct itimerspec its = {};
        usec_t t = now(CLOCK_MONOTONIC);

        l->next_pass = when;
        /* An absolute time in the past fires at once; 0 would disarm, so never pass 0. */
        usec_to_timespec(when > t ? when : t + 1, &its.it_value);
        if (timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
                return -errno;
        return 0;
}

static int epoll_add(int epfd, int fd, uint64_t tag) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };
        return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* systemd's watchdog (WatchdogSec=): fed from the loop's thread at half the period, as long as the loop
 * runs and no pass is hung. */
static int watchdog_setup(Loop *l) {
        const char *usec_s = getenv("WATCHDOG_USEC"), *pid_s = getenv("WATCHDOG_PID");
        unsigned long long usec = usec_s ? strtoull(usec_s, NULL, 10) : 0;
        if (usec == 0 || (pid_s && strtol(pid_s, NULL, 10) != (long)getpid()))
                return 0;
        l->watchdogfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (l->watchdogfd < 0)
                return log_error_errno(-errno, "Failed to set up the watchdog timer: %m");
        struct itimerspec its = {};
        usec_to_timespec(usec / 2, &its.it_value);
        its.it_interval = its.it_value;
        if (timerfd_settime(l->watchdogfd, 0, &its, NULL) < 0)
                return log_error_errno(-errno, "Failed to set up the watchdog timer: %m");
        log_debug("Feeding the watchdog every %.1f s.", (double)usec / 2 / USEC_PER_SEC);
        return epoll_add(l->epfd, l->watchdogfd, SOURCE_WATCHDOG);
}

static void loop_on_watchdog(Loop *l) {
        uint64_t expirations;
        if (read(l->watchdogfd, &expirations, sizeof(expirations)) != sizeof(expirations))
                return;
        if (l->worker.running && now(CLOCK_MONOTONIC) - l->worker.started > PASS_HUNG_AFTER) {
                log_error("The pass has run for more than %llu min: hung; no longer feeding the watchdog.",
                          (unsigned long long)(PASS_HUNG_AFTER / USEC_PER_SEC / 60));
                return;
        }
        notify_send("WATCHDOG=1");
}

static int loop_setup(Loop *l) {
        sigset_t mask;
        int r;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");
        signal(SIGPIPE, SIG_IGN);

        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        l->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        l->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        l->worker.done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (l->epfd < 0 || l->sigfd < 0 || l->timerfd < 0 || l->inofd < 0 || l->worker.done_fd < 0)
                return log_error_errno(-errno, "Failed to set up the event loop: %m");
        if ((r = epoll_add(l->epfd, l->sigfd, SOURCE_SIGNAL)) < 0 ||
            (r = epoll_add(l->epfd, l->timerfd, SOURCE_TIMER)) < 0 ||
            (r = epoll_add(l->epfd, l->inofd, SOURCE_INOTIFY)) < 0 ||
            (r = epoll_add(l->epfd, l->worker.done_fd, SOURCE_PASS_DONE)) < 0)
                return log_error_errno(r, "Failed to set up the event loop: %m");
        if ((r = watchdog_setup(l)) < 0)
                return r;

        STRV_FOREACH (w, (char **)l->cfg->watch) {
                /* Atomic updates arrive as a rename into the directory; devices as a create. */
                if (inotify_add_watch(l->inofd, *w, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM) < 0)
                        log_warning_errno(-errno,
                                          "Cannot watch '%s' (%m); changes there wait for the timer.", *w);
                else
                        log_debug("Watching '%s' for changes.", *w);
        }

        if (!isempty(l->cfg->listen) && !streq(l->cfg->listen, "none")) {
                r = http_server_start(l->cfg->listen, &l->metrics, &l->http);
                if (r < 0)
                        return log_error_errno(r, "Failed to serve health and metrics on '%s': %m",
                                               l->cfg->listen);
                if ((r = epoll_add(l->epfd, http_server_fd(l->http), SOURCE_HTTP)) < 0)
                        return log_error_errno(r, "Failed to set up the event loop: %m");
                log_info("Serving /healthz and /metrics on '%s' (port %u).", l->cfg->listen,
                         http_server_port(l->http));
        }
        return loop_schedule(l, now(CLOCK_MONOTONIC));
}

static void loop_teardown(Loop *l) {
        l->http = http_server_stop(l->http);
        l->epfd = safe_close(l->epfd);
        l->sigfd = safe_close(l->sigfd);
        l->timerfd = safe_close(l->timerfd);
        l->inofd = safe_close(l->inofd);
        l->watchdogfd = safe_close(l->watchdogfd);
        l->worker.done_fd = safe_close(l->worker.done_fd);
}

static void *worker_main(void *arg) {
        PassWorker *w = arg;
        uint64_t one = 1;
        pass_progress_begin();
        w->cb->pass(w->userdata, &w->report);
        pass_progress_end();
        /* an eventfd write of 1 cannot fail short of a bug; the loop would then wait for the next event */
        (void)!write(w->done_fd, &one, sizeof(one));
        return NULL;
}

static void loop_start_pass(Loop *l) {
        PassWorker *w = &l->worker;
        w->report = (PassReport){};
        w->started = now(CLOCK_MONOTONIC);
        w->cb = l->cb;
        w->userdata = l->userdata;
        l->wake_pending = false;
        int r = pthread_create(&w->thread, NULL, worker_main, w);
        if (r != 0) {
                log_error_errno(-r, "Failed to start a pass: %m; will retry in %.1f s.",
                                (double)l->cfg->backoff_min / USEC_PER_SEC);
                loop_schedule(l, now(CLOCK_MONOTONIC) + l->cfg->backoff_min);
                return;
        }
        w->running = true;
        notify_send("STATUS=converging: a pass is running");
}

static void loop_reload(Loop *l) {
        l->reload_pending = false;
        log_info("SIGHUP: reloading the spec.");
        if (l->cb->reload(l->userdata) >= 0) {
                l->failures = 0;
                loop_schedule(l, now(CLOCK_MONOTONIC));
        } else
                log_warning("Keeping the previous spec.");
}

/* The worker said it is done: take its report, then decide what comes next. */
static void loop_finish_pass(Loop *l) {
        uint64_t n;
        if (read(l->worker.done_fd, &n, sizeof(n)) != sizeof(n) || !l->worker.running)
                return;
        pthread_join(l->worker.thread, NULL);
        l->worker.running = false;
        PassReport rep = l->worker.report;
        l->worker.report = (PassReport){};
        usec_t delay;
        char status[600];

        rep.duration = now(CLOCK_MONOTONIC) - l->worker.started;
        metrics_observe(&l->metrics, &rep, now(CLOCK_REALTIME));

        if (rep.status == 0) {
                l->failures = 0;
                delay = l->cfg->interval;
                log_info("Pass %llu converged in %.1f ms (%u changes).",
                         (unsigned long long)l->metrics.passes, (double)rep.duration / USEC_PER_MSEC,
                         rep.actions_applied);
                snprintf(status, sizeof(status), "STATUS=converged: %u volumes, %u records",
                         rep.volumes_held, rep.records_published);
        } else {
                l->failures++;
                delay =
                    backoff_delay(l->cfg->backoff_min, l->cfg->backoff_max, l->failures, backoff_random());
                /* a pivot under way takes one step per pass: the next one soon, not after the backoff */
                if (rep.repass_soon)
                        delay = MIN(delay, l->cfg->backoff_min);
                /* each line says how long the pass took: bench/footprint.py finds the idle gaps by it */
                if (rep.status == PK_EWAITING)
                        log_info("Pass %llu not converged yet after %.1f ms (%s); next pass in %.1f s.",
                                 (unsigned long long)l->metrics.passes, (double)rep.duration / USEC_PER_MSEC,
                                 strna(rep.reason), (double)delay / USEC_PER_SEC);
                else
                        log_warning("Pass %llu failed after %.1f ms (%s); will retry in %.1f s.",
                                    (unsigned long long)l->metrics.passes,
                                    (double)rep.duration / USEC_PER_MSEC, strna(rep.reason),
                                    (double)delay / USEC_PER_SEC);
                snprintf(status, sizeof(status), "STATUS=%s: %s",
                         rep.status == PK_EWAITING ? "converging" : "error", strna(rep.reason));
        }
        notify_send(status);
        pass_report_done(&rep);
        /* A pass allocates and frees its working set; give it back to the system between passes, so the
         * daemon's footprint is its steady state, not the high-water mark of its busiest pass. */
        malloc_trim(0);
        if (l->wake_pending && delay > l->cfg->debounce)
                delay = l->cfg->debounce; /* something changed while the pass ran */
        loop_schedule(l, now(CLOCK_MONOTONIC) + delay);
        if (l->reload_pending)
                loop_reload(l);
}

static void loop_on_signal(Loop *l) {
        struct signalfd_siginfo si;
        while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                const char *name = si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT";
                if (si.ssi_signo == SIGHUP && l->worker.running) {
                        log_info("SIGHUP: reloading the spec after the running pass.");
                        l->reload_pending = true;
                } else if (si.ssi_signo == SIGHUP)
                        loop_reload(l);
                else if (l->worker.running) {
                        /* The pass stops at its next step or wait; a running mkfs or fsck runs to its end
                         * (a half-made filesystem would never be formatted again: it is not blank). */
                        log_info("%s: stopping after the step the pass is in.", name);
                        notify_send("STOPPING=1\nSTATUS=stopping after the running step");
                        stop_request();
                        l->stop = true;
                } else {
                        log_info("%s: stopping.", name);
                        stop_request();
                        l->stop = true;
                }
        }
}

static void loop_on_inotify(Loop *l) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool any = false;
        while (read(l->inofd, buf, sizeof(buf)) > 0)
                any = true;
        usec_t soon = now(CLOCK_MONOTONIC) + l->cfg->debounce;
        if (any && l->worker.running)
                l->wake_pending = true;
        else if (any && l->next_pass > soon) {
                log_debug("A watched directory changed: pass soon.");
                loop_schedule(l, soon);
        }
}

static void loop_on_timer(Loop *l) {
        uint64_t expirations;
        if (read(l->timerfd, &expirations, sizeof(expirations)) != sizeof(expirations))
                return;
        if (l->worker.running)
                l->wake_pending = true; /* the next pass follows this one */
        else if (!l->stop)
                loop_start_pass(l);
}

static void loop_serve_http(Loop *l) {
        PassProgress p;
        pass_progress_snapshot(&p);
        metrics_set_running(&l->metrics, &p, now(CLOCK_MONOTONIC));
        http_server_dispatch(l->http);
}

int daemon_run(const DaemonConfig *cfg, const DaemonCallbacks *cb, void *userdata) {
        DaemonConfig c = *cfg;
        Loop l = { .cfg = &c,
                   .cb = cb,
                   .userdata = userdata,
                   .epfd = -1,
                   .sigfd = -1,
                   .timerfd = -1,
                   .inofd = -1,
                   .watchdogfd = -1,
                   .worker.done_fd = -1 };
        int r;

        if (c.backoff_min == 0)
                c.backoff_min = USEC_PER_SEC;
        if (c.backoff_max == 0)
                c.backoff_max = MAX(c.interval, c.backoff_min);
        /* A burst (a release writing both volumes' records, udev making a disk's nodes) is a few ms; a
         * change that lands after the pass began wakes one more pass (wake_pending). The window is failover
         * latency: 20 ms was a fifth of a release to etcd started on the standby (bench/README.md, 2). */
        if (c.debounce == 0)
                c.debounce = 5 * USEC_PER_MSEC;
        /* One malloc arena for every thread. A pass runs on a worker thread of its own (and glibc's
         * getaddrinfo_a resolves names on threads too): each would otherwise get an arena of its own, and
         * what a pass leaves there (its pages partly used by the caches it filled) stays beside the main
         * heap's. The threads never allocate at the same time in earnest, so one arena costs no contention.
         * -350 KiB of private memory in bench/footprint.py. Before any thread starts. */
        if (mallopt(M_ARENA_MAX, 1) != 1)
                log_debug("mallopt(M_ARENA_MAX) failed: each thread may get its own malloc arena.");
        stop_reset();
        r = loop_setup(&l);
        if (r >= 0)
                /* Up: serving, watching, passes scheduled. How the passes go is STATUS=, not readiness: a
                 * first pass may legitimately take minutes (an attach, e2fsck). */
                notify_send("READY=1\nSTATUS=starting the first pass");
        /* After a stop, the loop goes on serving until the running pass is over. */
        while (r >= 0 && (!l.stop || l.worker.running)) {
                struct epoll_event ev[8];
                int n = epoll_wait(l.epfd, ev, ELEMENTSOF(ev), l.http ? http_server_timeout_ms(l.http) : -1);
                if (n < 0 && errno != EINTR) {
                        r = log_error_errno(-errno, "epoll_wait failed: %m");
                        break;
                }
                for (int i = 0; i < n; i++) {
                        if (ev[i].data.u64 == SOURCE_SIGNAL)
                                loop_on_signal(&l);
                        else if (ev[i].data.u64 == SOURCE_INOTIFY)
                                loop_on_inotify(&l);
                        else if (ev[i].data.u64 == SOURCE_TIMER)
                                loop_on_timer(&l);
                        else if (ev[i].data.u64 == SOURCE_PASS_DONE)
                                loop_finish_pass(&l);
                        else if (ev[i].data.u64 == SOURCE_WATCHDOG)
                                loop_on_watchdog(&l);
                }
                if (l.http)
                        loop_serve_http(&l);
        }
        if (l.worker.running) { /* epoll failed mid-pass: the worker still uses the loop's data */
                stop_request();
                pthread_join(l.worker.thread, NULL);
                pass_report_done(&l.worker.report);
        }
        notify_send("STOPPING=1");
        loop_teardown(&l);
        return r;
}
