/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume providers, one per value of the spec's CloudProvider (spec/spec.h): every provider's table is
 * declared here and registered in volume.c, indexed by that enum. To add a cloud: its value and name in the
 * spec, its provider file (the vtable of cloud/volume.h), its line below and in the registry. */

#include "cloud/volume.h"
#include "spec/spec.h"

extern const VolumeProviderVTable volume_provider_local; /* provider-local.c: the pool */
extern const VolumeProviderVTable volume_provider_aws;   /* provider-aws.c: EBS */
extern const VolumeProviderVTable volume_provider_gce;   /* provider-gce.c: persistent disks */

/* The provider of a spec's cloud; NULL for a value outside the enum. */
const VolumeProviderVTable *volume_provider_for(CloudProvider cloud);
/* The provider named name (the spec's word for it); NULL when there is none. */
const VolumeProviderVTable *volume_provider_find(const char *name);
/* Opens the named provider (-EOPNOTSUPP: no such provider); caller frees with volume_provider_free(). */
int volume_provider_open(const char *name, const VolumeProviderConfig *cfg, VolumeProvider **ret,
                         char **ret_error);
