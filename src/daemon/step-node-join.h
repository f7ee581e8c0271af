/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A worker's join as the API shows it (docs/workers.md): its client CSR before its kubelet has a
 * certificate, its Node's Ready condition after; writes nothing, says which stage blocks. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_node_join;
