/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/in-addr-util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int in_addr_parse(const char *s, InAddrUnion *ret) {
        InAddrUnion a = {};
        int family;

        /* inet_pton() already rejects whitespace, zone indexes ("%eth0") and prefixes ("/24"); the
         * length check keeps a huge string from being scanned at all */
        if (!s || strnlen(s, IN_ADDR_LITERAL_MAX + 1) > IN_ADDR_LITERAL_MAX)
                return -EINVAL;
        if (inet_pton(AF_INET, s, &a.in) == 1)
                family = AF_INET;
        else if (inet_pton(AF_INET6, s, &a.in6) == 1)
                family = AF_INET6;
        else
                return -EINVAL;
        if (ret)
                *ret = a;
        return family;
}

int in_addr_literal_parse(const char *s, char **ret_canonical) {
        InAddrUnion a;
        char text[INET6_ADDRSTRLEN];
        int family = in_addr_parse(s, &a);

        if (family < 0)
                return family;
        if (ret_canonical) {
                if (!inet_ntop(family, &a, text, sizeof(text)))
                        return -errno;
                char *c = strdup(text);
                if (!c)
                        return -ENOMEM;
                *ret_canonical = c;
        }
        return family;
}

bool in_addr_literal_valid(const char *s) {
        return in_addr_literal_parse(s, NULL) > 0;
}

bool in_addr_host_is_loopback(const char *host, size_t len) {
        char h[INET6_ADDRSTRLEN + 2];
        struct in_addr a4;
        struct in6_addr a6;

        if (!host || len == 0 || len >= sizeof(h))
                return false;
        memcpy(h, host, len);
        h[len] = 0;
        if (strcasecmp(h, "localhost") == 0)
                return true;
        if (inet_pton(AF_INET, h, &a4) == 1)
                return (ntohl(a4.s_addr) >> 24) == 127;
        const char *v6 = h;
        if (h[0] == '[' && h[len - 1] == ']') {
                h[len - 1] = 0;
                v6 = h + 1;
        }
        return inet_pton(AF_INET6, v6, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

size_t in_addr_family_size(int family) {
        return family == AF_INET ? sizeof(struct in_addr) : family == AF_INET6 ? sizeof(struct in6_addr) : 0;
}

bool in_addr_prefix_is_network(int family, const InAddrUnion *a, unsigned prefixlen) {
        size_t size = in_addr_family_size(family);
        if (prefixlen > size * 8)
                return false;
        for (size_t i = prefixlen / 8; i < size; i++) {
                unsigned keep = i == prefixlen / 8 ? prefixlen % 8 : 0;
                uint8_t host_bits = (uint8_t)(0xffu >> keep);
                if (a->bytes[i] & host_bits)
                        return false;
        }
        return true;
}

int in_addr_prefix_parse(const char *s, InAddrUnion *ret_addr, unsigned char *ret_prefixlen) {
        char addr[IN_ADDR_LITERAL_MAX + 1];
        InAddrUnion a;
        unsigned len = 0;

        if (!s)
                return -EINVAL;
        const char *slash = strchr(s, '/');
        if (!slash || (size_t)(slash - s) > IN_ADDR_LITERAL_MAX)
                return -EINVAL;
        memcpy(addr, s, (size_t)(slash - s));
        addr[slash - s] = 0;
        int family = in_addr_parse(addr, &a);
        if (family < 0)
                return family;
        /* digits only: no sign, no space, no "0x"; three at most (128 is the longest length) */
        size_t n = strlen(slash + 1);
        if (n == 0 || n > 3 || strspn(slash + 1, "0123456789") != n)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                len = len * 10 + (unsigned)(slash[1 + i] - '0');
        if (len > in_addr_family_size(family) * 8)
                return -EINVAL;
        if (!in_addr_prefix_is_network(family, &a, len))
                return -EDOM;
        if (ret_addr)
                *ret_addr = a;
        if (ret_prefixlen)
                *ret_prefixlen = (unsigned char)len;
        return family;
}

const char *in_addr_to_text(int family, const InAddrUnion *a, char buf[static IN_ADDR_TEXT_MAX]) {
        if (in_addr_family_size(family) == 0 || !inet_ntop(family, a, buf, IN_ADDR_TEXT_MAX))
                return "?";
        return buf;
}
