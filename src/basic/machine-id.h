/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The machine's stable identity (machine-id(5)): 32 lowercase hexadecimal digits, not all zero. Unlike
 * the host name it is unique per installation, so it tells apart two machines that share a name. */

#include <stdbool.h>

#define MACHINE_ID_PATH_DEFAULT "/etc/machine-id"
#define MACHINE_ID_LEN          32

bool machine_id_valid(const char *s);

/* Reads path (a regular file of at most 64 bytes: the id and one optional newline). -ENOENT if it does
 * not exist, PK_EMALFORMED if it holds anything else (including systemd's "uninitialized" first-boot
 * marker), other -errno as open/read fail. Caller frees *ret. */
int machine_id_read(const char *path, char **ret);
