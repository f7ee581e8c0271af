/* SPDX-License-Identifier: Apache-2.0 */
/* The DNS reply parser: any bytes parse or fail cleanly; every RR's address and names decode within
 * bounds. */
#include <stddef.h>
#include <stdint.h>

#include "dns/dns-wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        if (dns_message_parse(data, size, &m) < 0)
                return 0;
        for (size_t i = 0; i < m->n_rrs; i++) {
                const DnsRR *rr = &m->rrs[i];
                char a[46], name[DNS_NAME_TEXT_MAX];
                (void)dns_rr_address(m, rr, a);
                /* Names inside RDATA (SOA, NS, CNAME) are compressed against the message: read them too. */
                if (rr->section != DNS_SECTION_QUESTION && rr->rdata_len > 0) {
                        DnsReader r;
                        dns_reader_init(&r, m->wire, rr->rdata_offset + rr->rdata_len);
                        r.pos = rr->rdata_offset;
                        dns_read_name(&r, name);
                }
                (void)dns_name_equal(rr->name, "k8s.test.");
        }
        return 0;
}
