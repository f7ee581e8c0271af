/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's gateway answers come from the network: every parser takes any bytes without a crash, and what one
 * accepts keeps its invariants (IDs non-zero and unique, strv never NULL, decoded bytes NUL-terminated). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcdapi/etcd-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_members(const EtcdMemberList *l) {
        for (size_t i = 0; i < l->n; i++) {
                if (l->items[i].id == 0 || !l->items[i].name || !l->items[i].peer_urls ||
                    !l->items[i].client_urls)
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (l->items[i].id == l->items[j].id)
                                abort();
        }
}

static void check_kvs(const EtcdKvList *l) {
        for (size_t i = 0; i < l->n; i++)
                if (!l->items[i].key || !l->items[i].value || l->items[i].key[l->items[i].key_len] != 0 ||
                    l->items[i].value[l->items[i].value_len] != 0)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *)data;
        EtcdMemberList l = {};
        EtcdMember m = {};
        EtcdStatus st = {};
        EtcdKvList kv = {};
        char *msg = NULL;
        int code;
        bool ok;
        uint64_t id;
        int64_t n;

        if (etcd_parse_member_list(s, size, &l) >= 0) {
                check_members(&l);
                etcd_member_list_done(&l);
        }
        if (etcd_parse_member_add(s, size, &m, &l) >= 0) {
                check_members(&l);
                if (m.id == 0)
                        abort();
                etcd_member_done(&m);
                etcd_member_list_done(&l);
        }
        if (etcd_parse_status(s, size, &st) >= 0) {
                if (!st.version || !st.errors)
                        abort();
                etcd_status_done(&st);
        }
        EtcdVersion v = {};
        if (etcd_parse_version(s, size, &v) >= 0) {
                if (!v.server)
                        abort();
                etcd_version_done(&v);
        }
        if (etcd_parse_range(s, size, &kv) >= 0) {
                check_kvs(&kv);
                etcd_kv_list_done(&kv);
        }
        if (etcd_parse_txn(s, size, &ok, &kv) >= 0) {
                check_kvs(&kv);
                etcd_kv_list_done(&kv);
        }
        if (etcd_parse_lease_grant(s, size, &id, &n) >= 0 && (id == 0 || n <= 0))
                abort();
        (void)etcd_parse_header(s, size, &n);
        if (etcd_parse_error(s, size, &msg, &code) >= 0) {
                for (const char *p = msg; *p; p++)
                        if ((unsigned char)*p < 0x20)
                                abort();
                free(msg);
        }
        return 0;
}
