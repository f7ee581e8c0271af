/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master joins the API's names when its apiserver serves: observe the apiservers not named yet, plan whom
 * the names leave out (docs/dns.md). */

#include "daemon/pass-types.h"

extern const PassStep pass_step_api_names;
