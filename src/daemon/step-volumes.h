/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volumes: observe and plan them; apply the claims, each wave's devices, and the round's account. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_volumes;
extern const PassStep pass_step_volume_devices;
extern const PassStep pass_step_volumes_done;
