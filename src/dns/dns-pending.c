/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-pending.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "basic/string-util.h"

void dns_pending_done(DnsPending *p) {
        for (size_t i = 0; i < p->n; i++)
                free(p->items[i].id);
        free(p->items);
        *p = (DnsPending){};
}

static bool id_ok(const char *id) {
        size_t len = id ? strnlen(id, DNS_CHANGE_ID_MAX + 1) : 0;
        if (len == 0 || len > DNS_CHANGE_ID_MAX)
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
                        return false;
        return true;
}

static ssize_t find(const DnsPending *p, const char *id) {
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->items[i].id, id))
                        return (ssize_t)i;
        return -1;
}

static void drop(DnsPending *p, size_t i) {
        free(p->items[i].id);
        memmove(&p->items[i], &p->items[i + 1], (p->n - i - 1) * sizeof(p->items[0]));
        p->n--;
}

/* Room for one more entry at the end. */
static int grow(DnsPending *p) {
        DnsPendingChange *m = reallocarray(p->items, p->n + 1, sizeof(DnsPendingChange));
        if (!m)
                return -ENOMEM;
        p->items = m;
        return 0;
}

int dns_pending_add(DnsPending *p, const char *id, usec_t submitted) {
        if (!id_ok(id))
                return -EINVAL;
        if (find(p, id) >= 0)
                return 0;
        _cleanup_free_ char *copy = strdup(id);
        if (!copy)
                return -ENOMEM;
        bool full = p->n >= DNS_PENDING_MAX;
        if (!full && grow(p) < 0)
                return -ENOMEM;
        if (full)
                drop(p, 0);
        /* submission order, so the oldest is first: a caller may add out of order (two zones' changes) */
        size_t at = p->n;
        while (at > 0 && p->items[at - 1].submitted > submitted)
                at--;
        memmove(&p->items[at + 1], &p->items[at], (p->n - at) * sizeof(p->items[0]));
        p->items[at] = (DnsPendingChange){ .id = TAKE_PTR(copy), .submitted = submitted };
        p->n++;
        return full ? 2 : 1;
}

int dns_pending_remove(DnsPending *p, const char *id) {
        ssize_t i = id ? find(p, id) : -1;
        if (i < 0)
                return 0;
        drop(p, (size_t)i);
        return 1;
}

int dns_pending_move(DnsPending *p, size_t i, DnsPending *to) {
        if (i >= p->n)
                return -EINVAL;
        if (grow(to) < 0)
                return -ENOMEM;
        to->items[to->n++] = p->items[i];
        memmove(&p->items[i], &p->items[i + 1], (p->n - i - 1) * sizeof(p->items[0]));
        p->n--;
        return 0;
}

const DnsPendingChange *dns_pending_oldest(const DnsPending *p) {
        return p->n > 0 ? &p->items[0] : NULL;
}

usec_t dns_pending_oldest_age(const DnsPending *p, usec_t now_monotonic) {
        const DnsPendingChange *o = dns_pending_oldest(p);
        return o && now_monotonic > o->submitted ? now_monotonic - o->submitted : 0;
}
