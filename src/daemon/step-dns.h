/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* DNS for discovery: read what is served, plan the desired records, publish one batch, follow changes. */

#include "daemon/pass-types.h"

extern const PassStep pass_step_dns;
