/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/in-addr-util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
