/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A worker's view of the API (docs/workers.md): api.<internalSuffix> with the masters' internal addresses,
 * learnt from the volume provider's listing as the masters learn them; written into the node's hosts file
 * (dns.provider hosts), only compared with what rfc2136 and route53 serve. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_api_view;
