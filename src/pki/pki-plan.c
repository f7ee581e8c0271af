/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "pki/pki-plan.h"

void pki_leaf_state_done(PkiLeafState *s) {
        s->dns = strv_free(s->dns);
        s->ips = strv_free(s->ips);
        free(s->serial);
        free(s->subject_cn);
        free(s->issuer_cn);
        s->serial = s->subject_cn = s->issuer_cn = NULL;
}

static const char *const renew_reason_table[_PKI_RENEW_REASON_MAX] = {
        [PKI_RENEW_NONE] = "none",
        [PKI_RENEW_MISSING] = "missing",
        [PKI_RENEW_UNREADABLE] = "unreadable",
        [PKI_RENEW_OTHER_CA] = "other-ca",
        [PKI_RENEW_EXPIRING] = "expiring",
        [PKI_RENEW_SANS] = "sans",
        [PKI_RENEW_FORCED] = "forced",
};

const char *pki_renew_reason_to_string(PkiRenewReason r) {
        return r >= 0 && r < _PKI_RENEW_REASON_MAX ? renew_reason_table[r] : NULL;
}

static bool dns_in(const char *name, char *const *l) {
        STRV_FOREACH (s, (char **)l)
                if (strcasecmp(*s, name) == 0)
                        return true;
        return false;
}

/* Two literals are the same address; an unparsable one equals nothing, so it shows up as a difference. */
static bool ip_equal(const char *a, const char *b) {
        _cleanup_free_ char *ca = NULL, *cb = NULL;
        if (in_addr_literal_parse(a, &ca) < 0 || in_addr_literal_parse(b, &cb) < 0)
                return false;
        return streq(ca, cb);
}

static bool ip_in(const char *ip, char *const *l) {
        STRV_FOREACH (s, (char **)l)
                if (ip_equal(*s, ip))
                        return true;
        return false;
}

/* Every element of a in b and of b in a: set equality with duplicates ignored. The lists are a few dozen
 * names at most (PKI_SANS_MAX), so the quadratic walk is cheaper than canonicalising and sorting. */
static bool set_equal(char *const *a, char *const *b, bool (*in)(const char *, char *const *)) {
        STRV_FOREACH (s, (char **)a)
                if (!in(*s, b))
                        return false;
        STRV_FOREACH (s, (char **)b)
                if (!in(*s, a))
                        return false;
        return true;
}

bool pki_sans_equal(char *const *dns_a, char *const *ips_a, char *const *dns_b, char *const *ips_b) {
        return set_equal(dns_a, dns_b, dns_in) && set_equal(ips_a, ips_b, ip_in);
}

/* Renew with a third of the lifetime left, as cert-manager does by default: a year's certificate is
 * renewed four months ahead, leaving many passes (and an operator's attention span) to succeed. */
static bool expiring(const PkiLeafState *have, usec_t at) {
        if (have->not_after <= have->not_before || at < have->not_before || at >= have->not_after)
                return true;
        usec_t lifetime = have->not_after - have->not_before;
        return (have->not_after - at) < lifetime / 3;
}

PkiRenewReason pki_plan_leaf(const PkiLeafState *have, char *const *want_dns, char *const *want_ips,
                             usec_t at) {
        switch (have->status) {
        case PKI_LEAF_MISSING:
                return PKI_RENEW_MISSING;
        case PKI_LEAF_PRESENT:
                break;
        default:
                return PKI_RENEW_UNREADABLE;
        }
        if (!have->signed_by_ca)
                return PKI_RENEW_OTHER_CA;
        if (expiring(have, at))
                return PKI_RENEW_EXPIRING;
        if (!pki_sans_equal(have->dns, have->ips, want_dns, want_ips))
                return PKI_RENEW_SANS;
        return PKI_RENEW_NONE;
}
