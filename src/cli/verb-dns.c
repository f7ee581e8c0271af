/* SPDX-License-Identifier: Apache-2.0 */
/* protokube dns [--view FILE]: print the desired discovery records.
 * protokube dns sync [--view FILE] [--no-wait]: publish them once through the spec's provider and, unless
 * --no-wait, wait until the provider's name servers all serve them (Route 53: INSYNC; exit 3 after 120 s).
 */
#include <stdio.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "dns/dns-provider.h"
#include "dns/dns-records.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"
#include "spec/spec.h"

#define VIEW_FILE_MAX (4 * 1024 * 1024)

/* How long `dns sync` waits for the provider's name servers (Route 53: INSYNC) by default: what the old
 * in-pass wait allowed. */
#define DNS_SYNC_WAIT (120 * USEC_PER_SEC)

static const char *arg_view = NULL;
static bool arg_no_wait = false;

static int parse_view(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_view = value;
        return 0;
}

static int parse_no_wait(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_no_wait = true;
        return 0;
}

#define VIEW_OPTION                                                                                      \
        {                                                                                                \
                .name = "view", .arg_name = "FILE",                                                      \
                .help = "the cluster view as JSON (masters, etcd members) instead of asking the volume " \
                        "provider",                                                                      \
                .parse = parse_view                                                                      \
        }

const CliOption verb_dns_options[] = {
        VIEW_OPTION,
        {},
};

const CliOption verb_dns_sync_options[] = {
        VIEW_OPTION,
        { .name = "no-wait",
          .help =
              "return once the provider accepted the change, without waiting (up to 120 s) until all its "
              "name servers serve it (Route 53: INSYNC)",
          .parse = parse_no_wait },
        {},
};

static int load_view(CliContext *ctx, const ClusterSpec *spec, const char *path, ClusterView **ret) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t len;
        int r;

        if (!path)
                return cli_observe_view(ctx, spec, ret);
        r = read_full_file(path, VIEW_FILE_MAX, &text, &len);
        if (r < 0)
                return log_error_errno(r, "Failed to read view '%s': %m", path);
        r = cluster_view_from_json(text, len, ret, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to load view '%s': %s", path,
                                       error ? error : pk_strerror(r));
        return 0;
}

static void print_changes(const DnsRRsetList *changes, const char *provider) {
        char tb[16];
        if (changes->n == 0) {
                printf("no changes (%s)\n", provider);
                return;
        }
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *s = &changes->items[i];
                const char *type = dns_type_to_string(s->type, tb);
                if (dns_rrset_size(s) == 0) {
                        printf("delete\t%s\t%s\n", s->name, type);
                        continue;
                }
                _cleanup_free_ char *addrs = strv_join(s->addresses, " ");
                printf("replace\t%s\t%u\tIN\t%s\t%s\n", s->name, s->ttl, type, strna(addrs));
        }
        printf("%zu RRset(s) changed (%s)\n", changes->n, provider);
}

/* Both verbs: the desired records, then printed or published. */
static int dns_records(CliContext *ctx, bool sync) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        _cleanup_rrset_list_ DnsRRsetList desired = {};
        _cleanup_free_ char *error = NULL;
        int r;

        if (cli_load_spec(ctx, &spec) < 0)
                return EXIT_ERROR;
        if (load_view(ctx, spec, arg_view, &view) < 0)
                return EXIT_ERROR;
        if (!sync) { /* dns_publish computes them itself: once per command */
                r = dns_desired_records(spec, view, &desired, &error);
                if (r < 0) {
                        log_error_errno(r, "Failed to compute the desired records: %s",
                                        error ? error : pk_strerror(r));
                        return EXIT_ERROR;
                }
                dns_rrsets_print(&desired, false, stdout);
                return EXIT_CONVERGED;
        }
        _cleanup_rrset_list_ DnsRRsetList changes = {};
        _cleanup_dns_pending_ DnsPending pending = {};
        const char *provider = NULL;
        _cleanup_free_ char *note = NULL;
        r = dns_publish(spec, view, false, arg_no_wait ? 0 : DNS_SYNC_WAIT, &changes, &pending, &provider,
                        &note, &error);
        if (note)
                log_info("%s", note);
        if (r == PK_ETIMEOUT && pending.n > 0) {
                log_error("DNS sync: the change was accepted, but %s.", strna(error));
                return EXIT_NOT_CONVERGED;
        }
        if (r < 0) {
                log_error_errno(r, "DNS sync failed: %s", error ? error : pk_strerror(r));
                return EXIT_ERROR;
        }
        if (streq(provider, "none")) {
                printf("dns.provider is none: nothing to publish\n");
                return EXIT_CONVERGED;
        }
        print_changes(&changes, provider);
        for (size_t i = 0; i < pending.n; i++)
                printf("pending\t%s\t(--no-wait: not yet served by every name server)\n",
                       pending.items[i].id);
        return EXIT_CONVERGED;
}

int verb_dns(CliContext *ctx, char **args) {
        return dns_records(ctx, false);
}

int verb_dns_sync(CliContext *ctx, char **args) {
        return dns_records(ctx, true);
}
