/* SPDX-License-Identifier: Apache-2.0 */
/* The spec's `dns:` section: the common fields, and each DNS provider's settings with its own table. */
#include "spec/spec-dns.h"

#include <stddef.h>

#include "spec/spec-check.h"

static const Field rfc2136_fields[] = {
        { .name = "server",
          .type = FIELD_STRING,
          .offset = offsetof(Rfc2136Spec, server),
          .validate = spec_check_server,
          .help = "DNS server for UPDATEs: address, address:port or [v6]:port (port 53 by default)" },
        { .name = "tsigKeyFile",
          .type = FIELD_STRING,
          .offset = offsetof(Rfc2136Spec, tsig_key_file),
          .validate = spec_check_absolute_path,
          .help = "TSIG key in BIND key-file syntax (tsig-keygen output)" },
        { .name = "timeout",
          .type = FIELD_DURATION,
          .offset = offsetof(Rfc2136Spec, timeout),
          .default_value = "2s",
          .validate = spec_check_timeout,
          .help = "per query" },
        {},
};

static const Field hosts_fields[] = {
        { .name = "file",
          .type = FIELD_STRING,
          .offset = offsetof(HostsSpec, file),
          .validate = spec_check_absolute_path,
          .help = "hosts file to keep the records in (default /etc/hosts)" },
        {},
};

const Field spec_dns_fields[] = {
        { .name = "provider",
          .type = FIELD_ENUM,
          .offset = offsetof(DnsSpec, provider),
          .default_value = "none",
          .enum_values = dns_provider_kind_table,
          .help = "where discovery records are published" },
        { .name = "zone",
          .type = FIELD_STRING,
          .offset = offsetof(DnsSpec, zone),
          .validate = spec_check_zone,
          .help = "absolute zone name (trailing dot); found by SOA lookup when absent" },
        { .name = "internalSuffix",
          .type = FIELD_STRING,
          .offset = offsetof(DnsSpec, internal_suffix),
          .validate = spec_check_dns_name,
          .help = "suffix of the internal names (default internal.<metadata.name>)" },
        { .name = "ttl",
          .type = FIELD_INT,
          .offset = offsetof(DnsSpec, ttl),
          .default_value = "60",
          .min = 1,
          .max = 86400,
          .help = "TTL of published records, seconds" },
        { .name = "rfc2136",
          .type = FIELD_STRUCT,
          .offset = offsetof(DnsSpec, rfc2136),
          .sub = rfc2136_fields,
          .help = "settings of the rfc2136 provider" },
        { .name = "hosts",
          .type = FIELD_STRUCT,
          .offset = offsetof(DnsSpec, hosts),
          .sub = hosts_fields,
          .help = "settings of the hosts provider" },
        {},
};
