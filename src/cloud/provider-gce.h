/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The `gce` volume provider: persistent disks through the Compute API (src/gce), this node's identity from
 * the metadata server. */

#include "cloud/volume.h"

/* Tests point the by-id lookup at a directory of their own (the GCE double creates its links there). */
#define GCE_BYID_DIR_ENV     "PROTOKUBE_GCE_BYID_DIR"
#define GCE_BYID_DIR_DEFAULT "/dev/disk/by-id"
/* udev's rule for a GCE persistent disk (google-guest-agent's 65-gce-disk-naming.rules): the SCSI or NVMe
 * serial holds the device name given at attachDisk, and the link is google-<device name>. */
#define GCE_BYID_PREFIX "google-"
