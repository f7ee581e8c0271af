/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* spec selfHosted: true (docs/pivot.md): each pass after the control-plane manifests, the checkpoint's step,
 * then one pivot step (daemon/pass-pivot.h). */

#include "daemon/pass-types.h"

extern const PassStep pass_step_pivot;
