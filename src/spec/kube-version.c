/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/kube-version.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"

/* One decimal component: 1 to 6 digits, no sign, no leading zero (Go's semver rejects "01"). */
static int parse_component(const char **p, unsigned *ret) {
        size_t n = strspn(*p, "0123456789");
        unsigned v = 0;

        if (n == 0 || n > 6 || (n > 1 && (*p)[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                v = v * 10 + (unsigned)((*p)[i] - '0');
        *p += n;
        *ret = v;
        return 0;
}

int kube_version_parse(const char *s, KubeVersion *ret) {
        static const char prerelease_chars[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
        unsigned part[3];
        const char *p = s;

        if (!s)
                return -EINVAL;
        if (*p == 'v')
                p++;
        for (int i = 0; i < 3; i++) {
                if (parse_component(&p, &part[i]) < 0)
                        return -EINVAL;
                if (i < 2 && *p++ != '.')
                        return -EINVAL;
        }
        /* "-rc.1", "-beta.0": Kubernetes' pre-release tags, which have the flags of their release */
        if (*p == '-' && (!p[1] || strspn(p + 1, prerelease_chars) != strlen(p + 1)))
                return -EINVAL;
        if (*p != 0 && *p != '-')
                return -EINVAL;
        *ret = (KubeVersion){ part[0], part[1], part[2] };
        return 0;
}

const char *kube_gate_text(char buf[static KUBE_GATE_TEXT_MAX], KubeGate g) {
        if (g.since && g.until)
                snprintf(buf, KUBE_GATE_TEXT_MAX, "1.%u to 1.%u", g.since, g.until);
        else if (g.since)
                snprintf(buf, KUBE_GATE_TEXT_MAX, "since 1.%u", g.since);
        else if (g.until)
                snprintf(buf, KUBE_GATE_TEXT_MAX, "until 1.%u", g.until);
        else
                snprintf(buf, KUBE_GATE_TEXT_MAX, "in every version");
        return buf;
}

KubeValueVerdict kube_value_check(const KubeValueGates *gates, const char *value, unsigned minor,
                                  KubeGate *ret_gate) {
        for (const KubeValueGate *v = gates->values; v && v->value; v++)
                if (streq(v->value, value)) {
                        if (kube_gate_allows(v->gate, minor))
                                return KUBE_VALUE_OK;
                        if (ret_gate)
                                *ret_gate = v->gate;
                        return KUBE_VALUE_OUT_OF_RANGE;
                }
        return minor <= gates->complete_until ? KUBE_VALUE_UNKNOWN : KUBE_VALUE_OK;
}
