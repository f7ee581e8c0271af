/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/loop.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "daemon/http-server.h"
#include "daemon/notify.h"

enum { SOURCE_SIGNAL = 1, SOURCE_TIMER, SOURCE_INOTIFY, SOURCE_HTTP };

typedef struct Loop {
        const DaemonConfig *cfg;
        const DaemonCallbacks *cb;
        void *userdata;
        int epfd, sigfd, timerfd, inofd;
        HttpServer *http;
        Metrics metrics;
        unsigned failures;
        usec_t next_pass; /* CLOCK_MONOTONIC */
        bool ready_sent;
        bool stop;
} Loop;

usec_t backoff_delay(usec_t min, usec_t max, unsigned failures, double random) {
        usec_t d = min;
        for (unsigned i = 1; i < failures && d < max; i++)
                d *= 2;
        if (d > max)
                d = max;
        return d - (usec_t)((double)d * 0.2 * random);
}

static double random_unit(void) {
        uint64_t v = 0;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
                v = now(CLOCK_MONOTONIC) * 0x9E3779B97F4A7C15ULL; /* entropy is not critical for jitter */
        return (double)(v >> 11) / (double)(1ULL << 53);
}

bool daemon_stop_requested(void) {
        sigset_t pending;
        if (sigpending(&pending) < 0)
                return false;
        return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
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
        if (l->epfd < 0 || l->sigfd < 0 || l->timerfd < 0 || l->inofd < 0)
                return log_error_errno(-errno, "Failed to set up the event loop: %m");
        if ((r = epoll_add(l->epfd, l->sigfd, SOURCE_SIGNAL)) < 0 ||
            (r = epoll_add(l->epfd, l->timerfd, SOURCE_TIMER)) < 0 ||
            (r = epoll_add(l->epfd, l->inofd, SOURCE_INOTIFY)) < 0)
                return log_error_errno(r, "Failed to set up the event loop: %m");

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
}

static void loop_run_pass(Loop *l) {
        PassReport rep = {};
        usec_t start = now(CLOCK_MONOTONIC), delay;
        char status[600];

        l->cb->pass(l->userdata, &rep);
        rep.duration = now(CLOCK_MONOTONIC) - start;
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
                delay = backoff_delay(l->cfg->backoff_min, l->cfg->backoff_max, l->failures, random_unit());
                if (rep.status == PK_EWAITING)
                        log_info("Pass %llu not converged yet (%s); next pass in %.1f s.",
                                 (unsigned long long)l->metrics.passes, strna(rep.reason),
                                 (double)delay / USEC_PER_SEC);
                else
                        log_warning("Pass %llu failed (%s); will retry in %.1f s.",
                                    (unsigned long long)l->metrics.passes, strna(rep.reason),
                                    (double)delay / USEC_PER_SEC);
                snprintf(status, sizeof(status), "STATUS=%s: %s",
                         rep.status == PK_EWAITING ? "converging" : "error", strna(rep.reason));
        }
        notify_send(status);
        if (!l->ready_sent) {
                notify_send("READY=1");
                l->ready_sent = true;
        }
        pass_report_done(&rep);
        /* A pass allocates and frees its working set; give it back to the system between passes, so the
         * daemon's footprint is its steady state, not the high-water mark of its busiest pass. */
        malloc_trim(0);
        loop_schedule(l, now(CLOCK_MONOTONIC) + delay);
}

static void loop_on_signal(Loop *l) {
        struct signalfd_siginfo si;
        while (read(l->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGHUP) {
                        log_info("SIGHUP: reloading the spec.");
                        if (l->cb->reload(l->userdata) >= 0) {
                                l->failures = 0;
                                loop_schedule(l, now(CLOCK_MONOTONIC));
                        } else
                                log_warning("Keeping the previous spec.");
                } else {
                        log_info("%s: stopping.", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
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
        if (any && l->next_pass > soon) {
                log_debug("A watched directory changed: pass soon.");
                loop_schedule(l, soon);
        }
}

static void loop_on_timer(Loop *l) {
        uint64_t expirations;
        if (read(l->timerfd, &expirations, sizeof(expirations)) != sizeof(expirations))
                return;
        loop_run_pass(l);
}

int daemon_run(const DaemonConfig *cfg, const DaemonCallbacks *cb, void *userdata) {
        DaemonConfig c = *cfg;
        Loop l = { .cfg = &c,
                   .cb = cb,
                   .userdata = userdata,
                   .epfd = -1,
                   .sigfd = -1,
                   .timerfd = -1,
                   .inofd = -1 };
        int r;

        if (c.backoff_min == 0)
                c.backoff_min = USEC_PER_SEC;
        if (c.backoff_max == 0)
                c.backoff_max = MAX(c.interval, c.backoff_min);
        if (c.debounce == 0)
                c.debounce = 20 * USEC_PER_MSEC;
        r = loop_setup(&l);
        while (r >= 0 && !l.stop) {
                struct epoll_event ev[8];
                int n = epoll_wait(l.epfd, ev, ELEMENTSOF(ev), l.http ? http_server_timeout_ms(l.http) : -1);
                if (n < 0 && errno != EINTR) {
                        r = log_error_errno(-errno, "epoll_wait failed: %m");
                        break;
                }
                for (int i = 0; i < n && !l.stop; i++) {
                        if (ev[i].data.u64 == SOURCE_SIGNAL)
                                loop_on_signal(&l);
                        else if (ev[i].data.u64 == SOURCE_INOTIFY)
                                loop_on_inotify(&l);
                        else if (ev[i].data.u64 == SOURCE_TIMER)
                                loop_on_timer(&l);
                }
                if (l.http)
                        http_server_dispatch(l.http);
        }
        notify_send("STOPPING=1");
        loop_teardown(&l);
        return r;
}
