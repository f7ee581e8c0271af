/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/providers.h"

#include "basic/macro.h"
#include "basic/string-util.h"

static const VolumeProviderVTable *const providers[] = {
        [CLOUD_LOCAL] = &volume_provider_local,
        [CLOUD_AWS] = &volume_provider_aws,
        [CLOUD_GCE] = &volume_provider_gce,
};
/* one table per value the spec accepts, and no more: a value without a provider does not build */
assert_cc(ELEMENTSOF(providers) == _CLOUD_MAX);

const VolumeProviderVTable *volume_provider_for(CloudProvider cloud) {
        return cloud >= 0 && cloud < _CLOUD_MAX ? providers[cloud] : NULL;
}

const VolumeProviderVTable *volume_provider_find(const char *name) {
        return volume_provider_for(cloud_provider_from_string(name));
}

int volume_provider_open(const char *name, const VolumeProviderConfig *cfg, VolumeProvider **ret,
                         char **ret_error) {
        const VolumeProviderVTable *vt = volume_provider_find(name);
        void *state = NULL;
        if (!vt)
                return -EOPNOTSUPP;
        int r = vt->open(cfg, &state, ret_error);
        if (r < 0)
                return r;
        r = volume_provider_new(vt, state, ret);
        if (r < 0)
                vt->close(state);
        return r;
}
