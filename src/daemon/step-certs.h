/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node's certificates: observe the keystore and the node's pairs, plan, issue in each wave. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_certs;
