/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-update.h"

#include "basic/errors.h"

void dns_update_init(DnsUpdate *u, uint16_t id, const char *zone) {
        *u = (DnsUpdate){};
        dns_writer_init(&u->w);
        dns_write_u16(&u->w, id);
        dns_write_u16(&u->w, DNS_FLAGS_MAKE(DNS_OPCODE_UPDATE));
        dns_write_u16(&u->w, 1); /* ZOCOUNT */
        dns_write_u16(&u->w, 0); /* PRCOUNT */
        dns_write_u16(&u->w, 0); /* UPCOUNT, patched by dns_update_finish() */
        dns_write_u16(&u->w, 0); /* ADCOUNT */
        dns_write_name(&u->w, zone, true);
        dns_write_u16(&u->w, DNS_TYPE_SOA);
        dns_write_u16(&u->w, DNS_CLASS_IN);
}

void dns_update_done(DnsUpdate *u) {
        dns_writer_free(&u->w);
}

void dns_update_delete_rrset(DnsUpdate *u, const char *name, uint16_t type) {
        dns_write_name(&u->w, name, true);
        dns_write_u16(&u->w, type);
        dns_write_u16(&u->w, DNS_CLASS_ANY);
        dns_write_u32(&u->w, 0);
        dns_write_u16(&u->w, 0);
        u->n_updates++;
}

void dns_update_add_rr(DnsUpdate *u, const char *name, uint16_t type, uint32_t ttl, const void *rdata,
                       uint16_t rdata_len) {
        dns_write_name(&u->w, name, true);
        dns_write_u16(&u->w, type);
        dns_write_u16(&u->w, DNS_CLASS_IN);
        dns_write_u32(&u->w, ttl);
        dns_write_u16(&u->w, rdata_len);
        dns_write_bytes(&u->w, rdata, rdata_len);
        u->n_updates++;
}

void dns_update_add_address(DnsUpdate *u, const char *name, uint32_t ttl, const char *address) {
        uint8_t b[16];
        size_t len;
        int type = dns_address_parse(address, b, &len);
        if (type < 0) {
                if (u->w.error == 0)
                        u->w.error = PK_EMALFORMED;
                return;
        }
        dns_update_add_rr(u, name, (uint16_t)type, ttl, b, (uint16_t)len);
}

int dns_update_finish(DnsUpdate *u) {
        if (u->n_updates > UINT16_MAX && u->w.error == 0)
                u->w.error = PK_ETOOBIG;
        dns_writer_patch_u16(&u->w, 8, (uint16_t)u->n_updates);
        return dns_writer_error(&u->w);
}

int dns_update_build(uint16_t id, const char *zone, const DnsRRsetList *changes, DnsUpdate *u) {
        int n = 0, r;
        dns_update_init(u, id, zone);
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *s = &changes->items[i];
                if (!dns_name_in_zone(s->name, zone))
                        continue;
                dns_update_delete_rrset(u, s->name, s->type);
                for (char **a = s->addresses; a && *a; a++)
                        dns_update_add_address(u, s->name, s->ttl, *a);
                n++;
        }
        r = dns_update_finish(u);
        if (r < 0) {
                dns_update_done(u);
                return r;
        }
        return n;
}
