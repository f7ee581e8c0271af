/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The spec's `dns:` section (docs/spec.md): the provider, zone, suffix and TTL every provider shares, and
 * each provider's own settings (`dns.rfc2136`, `dns.hosts`), each beside its field table in spec-dns.c. A
 * DNS provider with settings adds its struct and table here; its value and name are the spec's
 * DnsProviderKind (spec.h) and its code the provider's file in dns/. */

#include "spec/field.h"

typedef struct Rfc2136Spec {
        char *server;        /* "host:port" or "host" (port 53); IPv6 as "[::1]:53" */
        char *tsig_key_file; /* BIND key-file syntax; must not be group/world readable */
        OptDuration timeout; /* per query, default 2s */
} Rfc2136Spec;

typedef struct HostsSpec {
        char *file; /* default /etc/hosts */
} HostsSpec;

typedef struct DnsSpec {
        OptEnum provider;      /* DnsProviderKind */
        char *zone;            /* absolute, e.g. "k8s.test."; NULL = found by SOA lookup */
        char *internal_suffix; /* default internal.<metadata.name> */
        OptInt ttl;            /* default 60 */
        Rfc2136Spec rfc2136;
        HostsSpec hosts;
} DnsSpec;

/* The field table of `dns:` (spec.c puts it under the spec's top level). */
extern const Field spec_dns_fields[];
/* The names of DnsProviderKind's values (spec.c), the enum values of `dns.provider`. */
extern const char *const dns_provider_kind_table[];
