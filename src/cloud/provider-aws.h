/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The `aws` volume provider: EBS volumes through the EC2 API (src/aws), this node's identity from IMDS. */

#include "cloud/volume.h"

/* Tests point the by-id lookup at a directory of their own (the AWS double creates its links there). */
#define AWS_BYID_DIR_ENV     "PROTOKUBE_AWS_BYID_DIR"
#define AWS_BYID_DIR_DEFAULT "/dev/disk/by-id"
/* ... and the Xen fallback's /dev/xvdX names at a directory of their own. */
#define AWS_DEV_DIR_ENV     "PROTOKUBE_AWS_DEV_DIR"
#define AWS_DEV_DIR_DEFAULT "/dev"
