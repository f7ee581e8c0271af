/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kube-name.h"

#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"

#define LABEL_MAX 63

static bool lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?: one part of a subdomain (no length of its own), or a whole label. */
static bool part_ok(const char *s, size_t n) {
        if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!lower_alnum(s[i]) && s[i] != '-')
                        return false;
        return true;
}

static bool label_ok(const char *s, size_t n, bool first_alpha) {
        return n <= LABEL_MAX && part_ok(s, n) && (!first_alpha || (s[0] >= 'a' && s[0] <= 'z'));
}

/* Parts joined by single dots: no empty part, so no "." or ".." and no leading or trailing dot. */
static bool subdomain_ok(const char *s, size_t n) {
        if (n > KUBE_NAME_MAX)
                return false;
        for (const char *p = s;;) {
                size_t l = strcspn(p, ".");
                if (!part_ok(p, l))
                        return false;
                if (!p[l])
                        return true;
                p += l + 1;
        }
}

static bool chars_in(const char *s, const char *extra, bool upper) {
        for (; *s; s++)
                if (!lower_alnum(*s) && !(upper && *s >= 'A' && *s <= 'Z') && !strchr(extra, *s))
                        return false;
        return true;
}

bool kube_name_valid(KubeNameRule rule, const char *s) {
        if (isempty(s))
                return false;
        size_t n = strlen(s);
        switch (rule) {
        case KUBE_NAME_DNS_SUBDOMAIN:
                return subdomain_ok(s, n);
        case KUBE_NAME_DNS_LABEL:
                return label_ok(s, n, false);
        case KUBE_NAME_DNS1035_LABEL:
                return label_ok(s, n, true);
        case KUBE_NAME_RBAC:
                return n <= KUBE_NAME_MAX && !streq(s, ".") && !streq(s, "..") && chars_in(s, "-.:@_", true);
        case KUBE_NAME_DATA_KEY:
                return n <= KUBE_NAME_MAX && !streq(s, ".") && !startswith(s, "..") &&
                       chars_in(s, "-._", true);
        default:
                return false;
        }
}

static const char *const rule_words[_KUBE_NAME_RULE_MAX] = {
        [KUBE_NAME_DNS_SUBDOMAIN] = "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most "
                                    "253 characters, each dot-separated part starting and ending with a "
                                    "letter or digit",
        [KUBE_NAME_DNS_LABEL] = "a DNS-1123 label: lower-case letters, digits and '-', at most 63 "
                                "characters, starting and ending with a letter or digit",
        [KUBE_NAME_DNS1035_LABEL] = "a DNS-1035 label: lower-case letters, digits and '-', at most 63 "
                                    "characters, starting with a letter and ending with a letter or digit",
        [KUBE_NAME_RBAC] = "letters, digits, '-', '.', ':', '@' and '_', at most 253 characters, not '.' or "
                           "'..'",
        [KUBE_NAME_DATA_KEY] = "letters, digits, '-', '.' and '_', at most 253 characters, not '.' and not "
                               "starting with '..'",
};

int kube_name_check(KubeNameRule rule, const char *what, const char *s, char **ret_error) {
        if (kube_name_valid(rule, s))
                return 0;
        /* the name comes from outside: shown printable and short, never as it is */
        _cleanup_free_ char *shown = string_one_line(s, 77);
        if (!shown)
                return -ENOMEM;
        return error_setf(ret_error, -EINVAL, "%s '%s' is not valid: want %s", what, shown,
                          rule >= 0 && rule < _KUBE_NAME_RULE_MAX ? rule_words[rule] : "a known rule");
}
