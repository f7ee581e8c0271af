/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/kube-version.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/semver.h"

int kube_version_parse(const char *s, KubeVersion *ret) {
        /* "-rc.1", "-beta.0": Kubernetes' pre-release tags, which have the flags of their release */
        Semver v;
        int r = semver_parse(s, SEMVER_ALLOW_V | SEMVER_ALLOW_PRERELEASE, &v);
        if (r < 0)
                return r;
        *ret = (KubeVersion){ v.major, v.minor, v.patch };
        return 0;
}

const char *kube_gate_text(char buf[static KUBE_GATE_TEXT_MAX], KubeGate g) {
        if (g.since && g.since == g.until)
                snprintf(buf, KUBE_GATE_TEXT_MAX, "1.%u only", g.since);
        else if (g.since && g.until)
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
