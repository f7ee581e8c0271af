/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The masters' approver and signer of kubelet CSRs, and what a worker's bootstrap needs of the API (the
 * bootstrap RBAC, kube-public/cluster-info, expired tokens deleted): docs/workers.md. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_join;
