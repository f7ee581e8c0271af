/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The control plane's static pods: observe the manifest directory, render, write what differs. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_control_plane;
