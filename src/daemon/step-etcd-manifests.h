/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The etcd manifests of the members held: rendered in the plan, written on their volumes in each wave. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_etcd_manifests;
