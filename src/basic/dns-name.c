/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/dns-name.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"

bool dns_label_is_valid(const char *s, size_t n) {
        if (!s || n < 1 || n > DNS_LABEL_MAX || s[0] == '-' || s[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

bool dns_hostname_is_valid(const char *s) {
        size_t len = s ? strlen(s) : 0;

        if (len == 0 || len > DNS_HOSTNAME_MAX)
                return false;
        for (const char *p = s;;) {
                const char *dot = strchr(p, '.');
                size_t n = dot ? (size_t)(dot - p) : strlen(p);
                if (!dns_label_is_valid(p, n))
                        return false;
                if (!dot)
                        return true;
                p = dot + 1;
        }
}

int dns_name_join(const char *label, const char *suffix, char **ret) {
        if (!label || !dns_label_is_valid(label, strlen(label)) || !dns_hostname_is_valid(suffix))
                return -EINVAL;
        char *s = strjoin(label, ".", suffix);
        if (!s)
                return -ENOMEM;
        if (strlen(s) > DNS_HOSTNAME_MAX) {
                free(s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

int dns_name_to_wire(const char *name, uint8_t ret[static DNS_WIRE_NAME_MAX], size_t *ret_len) {
        uint8_t out[DNS_WIRE_NAME_MAX];
        size_t o = 0;
        const char *p = name;

        if (streq(name, ".") || *name == 0) {
                ret[0] = 0;
                *ret_len = 1;
                return 0;
        }
        while (*p) {
                uint8_t label[DNS_LABEL_MAX];
                size_t l = 0;
                while (*p && *p != '.') {
                        uint8_t c;
                        if (*p == '\\') {
                                p++;
                                if (is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2])) {
                                        int v = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
                                        if (v > 255)
                                                return PK_EMALFORMED;
                                        c = (uint8_t)v;
                                        p += 3;
                                } else if (*p)
                                        c = (uint8_t)*p++;
                                else
                                        return PK_EMALFORMED;
                        } else
                                c = (uint8_t)*p++;
                        if (l >= DNS_LABEL_MAX)
                                return PK_EMALFORMED;
                        label[l++] = c;
                }
                /* An empty label is only allowed as the root, handled above. */
                if (l == 0 || o + 1 + l + 1 > DNS_WIRE_NAME_MAX)
                        return PK_EMALFORMED;
                out[o++] = (uint8_t)l;
                memcpy(out + o, label, l);
                o += l;
                if (*p == '.')
                        p++;
        }
        out[o++] = 0;
        memcpy(ret, out, o);
        *ret_len = o;
        return 0;
}

/* Appends one label as text with RFC 1035 §5.1 escapes. out has room for DNS_NAME_TEXT_MAX. */
static void label_to_text(const uint8_t *label, size_t l, bool lower, char *out, size_t *o) {
        for (size_t i = 0; i < l; i++) {
                uint8_t c = lower ? dns_ascii_lower(label[i]) : label[i];
                if (c == '.' || c == '\\' || c == '"' || c == ';' || c == '(' || c == ')' || c == '@' ||
                    c == '$') {
                        out[(*o)++] = '\\';
                        out[(*o)++] = (char)c;
                } else if (c <= 0x20 || c >= 0x7f) {
                        snprintf(out + *o, 5, "\\%03u", c);
                        *o += 4;
                } else
                        out[(*o)++] = (char)c;
        }
        out[(*o)++] = '.';
}

void dns_name_wire_to_text(const uint8_t *wire, bool lower, char out[static DNS_NAME_TEXT_MAX]) {
        size_t o = 0;
        if (wire[0] == 0) {
                out[0] = '.';
                out[1] = 0;
                return;
        }
        for (size_t i = 0; wire[i] != 0; i += 1 + wire[i])
                label_to_text(wire + i + 1, wire[i], lower, out, &o);
        out[o] = 0;
}

int dns_name_normalize(const char *name, char **ret) {
        uint8_t wire[DNS_WIRE_NAME_MAX];
        char text[DNS_NAME_TEXT_MAX];
        size_t len;
        int r = dns_name_to_wire(name, wire, &len);
        if (r < 0)
                return r;
        dns_name_wire_to_text(wire, true, text);
        char *s = strdup(text);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void wire_lower(uint8_t *wire, size_t len) {
        /* Label length octets are below 64, so lowercasing them is harmless. */
        for (size_t i = 0; i < len; i++)
                wire[i] = dns_ascii_lower(wire[i]);
}

bool dns_name_equal(const char *a, const char *b) {
        uint8_t wa[DNS_WIRE_NAME_MAX], wb[DNS_WIRE_NAME_MAX];
        size_t la, lb;
        if (dns_name_to_wire(a, wa, &la) < 0 || dns_name_to_wire(b, wb, &lb) < 0 || la != lb)
                return false;
        wire_lower(wa, la);
        wire_lower(wb, lb);
        return memcmp(wa, wb, la) == 0;
}

bool dns_name_in_zone(const char *name, const char *zone) {
        uint8_t wn[DNS_WIRE_NAME_MAX], wz[DNS_WIRE_NAME_MAX];
        size_t ln, lz;
        if (dns_name_to_wire(name, wn, &ln) < 0 || dns_name_to_wire(zone, wz, &lz) < 0)
                return false;
        wire_lower(wn, ln);
        wire_lower(wz, lz);
        for (size_t i = 0; i < ln; i += 1 + wn[i]) {
                if (ln - i == lz && memcmp(wn + i, wz, lz) == 0)
                        return true;
                if (wn[i] == 0)
                        break;
        }
        return false;
}
