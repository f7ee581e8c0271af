/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-provider.h"

#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "model/cluster-view.h"
#include "spec/spec.h"

static const DnsProvider *const providers[] = {
        [DNS_PROVIDER_NONE] = NULL, /* nothing is published */
        [DNS_PROVIDER_HOSTS] = &dns_provider_hosts,
        [DNS_PROVIDER_RFC2136] = &dns_provider_rfc2136,
        [DNS_PROVIDER_ROUTE53] = &dns_provider_route53,
        [DNS_PROVIDER_CLOUDDNS] = &dns_provider_clouddns,
};
/* one entry per value the spec accepts, and no more: a value without a provider does not build */
assert_cc(ELEMENTSOF(providers) == _DNS_PROVIDER_MAX);

const DnsProvider *dns_provider_for(DnsProviderKind kind) {
        return kind >= 0 && kind < _DNS_PROVIDER_MAX ? providers[kind] : NULL;
}

const DnsProvider *dns_provider_find(const char *name) {
        return dns_provider_for(dns_provider_kind_from_string(name));
}

#define DNS_LABELS_MAX 127 /* RFC 1035 §3.1: 255 octets hold at most 127 labels */

int dns_zone_for_name(const char *name, const char *zone, const char *what,
                      int (*lookup)(void *userdata, const char *zone_name, char **ret_error), void *userdata,
                      char **ret_error) {
        int r;
        if (zone) {
                if (!dns_name_in_zone(name, zone))
                        return error_setf(ret_error, PK_ESPEC, "'%s' is not in dns.zone '%s'", name, zone);
                r = lookup(userdata, zone, ret_error);
                if (r == 0)
                        return error_setf(ret_error, PK_ESPEC, "no %s is named '%s' (dns.zone)", what, zone);
                return r < 0 ? r : 0;
        }
        const char *p = name;
        for (unsigned i = 0; i < DNS_LABELS_MAX && !isempty(p) && !streq(p, "."); i++) {
                r = lookup(userdata, p, ret_error);
                if (r != 0)
                        return r < 0 ? r : 0;
                const char *dot = strchr(p, '.');
                if (!dot)
                        break;
                p = dot + 1;
        }
        return error_setf(ret_error, PK_ESPEC, "no %s holds '%s' (set dns.zone?)", what, name);
}

int dns_sync(const DnsProvider *p, DnsProviderState *s, const DnsRRsetList *desired, bool dry_run,
             DnsRRsetList *ret_changes, char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList current = {}, changes = {};
        int r;

        r = p->read(s, desired, &current, ret_error);
        if (r < 0)
                return r;
        r = dns_rrsets_diff(desired, &current, p->tracks_ttl, &changes);
        if (r < 0)
                return r;
        /* Nothing differs: send nothing, so a converged cluster costs one read per pass. */
        bool repair = p->repair_pending && p->repair_pending(s);
        if ((changes.n > 0 || repair) && !dry_run) {
                r = p->apply(s, &changes, ret_error);
                if (r < 0)
                        return r;
        }
        if (ret_changes) {
                *ret_changes = changes;
                changes = (DnsRRsetList){};
        }
        return 0;
}

struct DnsSession {
        const DnsProvider *provider;
        DnsProviderState *state;
};

int dns_session_open(const ClusterSpec *spec, DnsSession **ret, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        int kind = spec->dns.provider.value; /* "none" unless set: the spec applied the default */
        if (kind == DNS_PROVIDER_NONE) {
                *ret = NULL;
                return 0;
        }
        const DnsProvider *p = dns_provider_for(kind);
        if (!p) { /* a spec made in code with a value outside the enum: the loader accepts none */
                *ret_error = strprintf("no DNS provider %d", kind);
                return -EOPNOTSUPP;
        }
        DnsSession *s = new0(DnsSession, 1);
        if (!s)
                return -ENOMEM;
        s->provider = p;
        int r = p->open(spec, &s->state, &error);
        if (r < 0) {
                free(s);
                *ret_error = strprintf("cannot set up DNS provider '%s': %s", p->name,
                                       error ? error : pk_strerror(r));
                return r;
        }
        *ret = s;
        return 0;
}

DnsSession *dns_session_free(DnsSession *s) {
        if (s) {
                s->provider->close(s->state);
                free(s);
        }
        return NULL;
}

bool dns_session_tracks_ttl(const DnsSession *s) {
        return s && s->provider->tracks_ttl;
}

const char *dns_session_provider(const DnsSession *s) {
        return s ? s->provider->name : "none";
}

int dns_session_read(DnsSession *s, const DnsRRsetList *owned, DnsRRsetList *ret, bool *ret_repair,
                     char **ret_error) {
        _cleanup_free_ char *error = NULL;
        int r = s->provider->read(s->state, owned, ret, &error);
        if (r < 0) {
                *ret_error =
                    strprintf("DNS provider '%s': %s", s->provider->name, error ? error : pk_strerror(r));
                return r;
        }
        *ret_repair = s->provider->repair_pending && s->provider->repair_pending(s->state);
        return 0;
}

char *dns_session_take_note(DnsSession *s) {
        return s && s->provider->take_note ? s->provider->take_note(s->state) : NULL;
}

int dns_session_diff(const DnsSession *s, const DnsRRsetList *desired, const DnsRRsetList *served,
                     DnsRRsetList *ret) {
        return dns_rrsets_diff(desired, served, s->provider->tracks_ttl, ret);
}

int dns_session_apply(DnsSession *s, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        int r = s->provider->apply(s->state, changes, &error);
        if (r < 0)
                *ret_error =
                    strprintf("DNS provider '%s': %s", s->provider->name, error ? error : pk_strerror(r));
        return r;
}

int dns_session_take_submitted(DnsSession *s, DnsPending *p, usec_t now_monotonic) {
        _cleanup_strv_free_ char **ids = NULL;
        int n = 0;
        if (!s->provider->take_submitted)
                return 0;
        int r = s->provider->take_submitted(s->state, &ids);
        if (r < 0)
                return r;
        STRV_FOREACH (id, ids) {
                r = dns_pending_add(p, *id, now_monotonic);
                if (r < 0)
                        return r;
                n += r > 0;
        }
        return n;
}

int dns_session_check_pending(DnsSession *s, DnsPending *p, DnsPending *settled, char **ret_error) {
        int first = 0;
        if (!s->provider->change_status)
                return 0;
        for (size_t i = 0; i < p->n;) {
                _cleanup_free_ char *error = NULL;
                int r = s->provider->change_status(s->state, p->items[i].id, &error);
                if (r == 0 || (r < 0 && r != -ENOENT)) {
                        if (r < 0 && first == 0) {
                                first = r;
                                *ret_error =
                                    strprintf("DNS provider '%s': change '%s': %s", s->provider->name,
                                              p->items[i].id, error ?: pk_strerror(r));
                        }
                        i++;
                        continue;
                }
                /* served everywhere, or forgotten by the provider (nothing left to wait for) */
                if (!settled)
                        dns_pending_remove(p, p->items[i].id);
                else if (dns_pending_move(p, i, settled) < 0)
                        return -ENOMEM;
        }
        return first;
}

int dns_session_wait_pending(DnsSession *s, DnsPending *p, usec_t timeout, usec_t interval,
                             char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        for (;;) {
                int r = dns_session_check_pending(s, p, NULL, ret_error);
                if (r < 0)
                        return r;
                if (p->n == 0)
                        return 0;
                usec_t t = now(CLOCK_MONOTONIC);
                if (t + interval > deadline) {
                        const DnsPendingChange *o = dns_pending_oldest(p);
                        *ret_error =
                            strprintf("DNS provider '%s': change '%s' still not served by every name "
                                      "server %.1f s after it was submitted (%zu change(s) pending)",
                                      s->provider->name, o->id,
                                      (double)dns_pending_oldest_age(p, t) / USEC_PER_SEC, p->n);
                        return PK_ETIMEOUT;
                }
                r = sleep_usec(interval);
                if (r < 0)
                        return r;
        }
}

int dns_publish(const ClusterSpec *spec, const ClusterView *view, bool dry_run, usec_t wait,
                DnsRRsetList *ret_changes, DnsPending *ret_pending, const char **ret_provider,
                char **ret_note, char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {};
        _cleanup_(dns_session_freep) DnsSession *session = NULL;
        _cleanup_dns_pending_ DnsPending pending = {};
        _cleanup_free_ char *error = NULL;
        int r;

        if (ret_provider)
                *ret_provider = dns_provider_kind_to_string(spec->dns.provider.value) ?: "?";
        if (ret_changes)
                *ret_changes = (DnsRRsetList){};
        if (ret_note)
                *ret_note = NULL;
        if (view->n_masters == 0 && view->n_members == 0 && spec->dns.provider.value != DNS_PROVIDER_NONE) {
                *ret_error = strdup("the view has no masters and no etcd members; refusing to remove every "
                                    "record");
                return PK_EWAITING;
        }
        r = dns_session_open(spec, &session, ret_error);
        if (r < 0 || !session) /* "none": nothing to do */
                return r;
        r = dns_desired_records(spec, view, &desired, &error);
        if (r < 0) {
                *ret_error =
                    strprintf("cannot compute the desired records: %s", error ? error : pk_strerror(r));
                return r;
        }
        r = dns_sync(session->provider, session->state, &desired, dry_run, &changes, &error);
        if (ret_note)
                *ret_note = dns_session_take_note(session);
        if (r < 0) {
                *ret_error = strprintf("DNS provider '%s': %s", session->provider->name,
                                       error ? error : pk_strerror(r));
                return r;
        }
        r = dns_session_take_submitted(session, &pending, now(CLOCK_MONOTONIC));
        if (r >= 0 && pending.n > 0 && wait > 0)
                r = dns_session_wait_pending(session, &pending, wait, DNS_PENDING_POLL, ret_error);
        /* also after a wait that ran out: the caller tells "accepted, not yet served" from a failed write by
         * the changes still pending (a read that timed out is PK_ETIMEOUT too, with none) */
        if (ret_pending && (r >= 0 || (r == PK_ETIMEOUT && pending.n > 0))) {
                *ret_pending = pending;
                pending = (DnsPending){};
        }
        if (r < 0)
                return r;
        if (ret_changes) {
                *ret_changes = changes;
                changes = (DnsRRsetList){};
        }
        return 0;
}
