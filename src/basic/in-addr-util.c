/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/in-addr-util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int in_addr_prefix_parse(const char *s) {
        unsigned char buf[sizeof(struct in6_addr)];
        char addr[IN_ADDR_LITERAL_MAX + 1];
        const char *slash = s ? strchr(s, '/') : NULL;
        if (!slash || (size_t)(slash - s) > IN_ADDR_LITERAL_MAX || !slash[1] || strlen(slash + 1) > 3 ||
            strspn(slash + 1, "0123456789") != strlen(slash + 1) || (slash[1] == '0' && slash[2]))
                return -EINVAL;
        memcpy(addr, s, (size_t)(slash - s));
        addr[slash - s] = 0;
        int family = in_addr_literal_parse(addr, NULL);
        if (family < 0)
                return family;
        unsigned len = (unsigned)atoi(slash + 1), bits = family == AF_INET ? 32 : 128;
        if (len > bits || inet_pton(family, addr, buf) != 1)
                return -EINVAL;
        for (unsigned b = len; b < bits; b++) /* no host bit set past the prefix */
                if (buf[b / 8] & (0x80U >> (b % 8)))
                        return -EINVAL;
        return family;
}

int in_addr_literal_parse(const char *s, char **ret_canonical) {
        unsigned char buf[sizeof(struct in6_addr)];
        char text[INET6_ADDRSTRLEN];
        int family;

        /* inet_pton() already rejects whitespace, zone indexes ("%eth0") and prefixes ("/24"); the
         * length check keeps a huge string from being scanned at all */
        if (!s || strnlen(s, IN_ADDR_LITERAL_MAX + 1) > IN_ADDR_LITERAL_MAX)
                return -EINVAL;
        if (inet_pton(AF_INET, s, buf) == 1)
                family = AF_INET;
        else if (inet_pton(AF_INET6, s, buf) == 1)
                family = AF_INET6;
        else
                return -EINVAL;
        if (ret_canonical) {
                if (!inet_ntop(family, buf, text, sizeof(text)))
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
