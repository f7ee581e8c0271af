/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. A no-op when not run by systemd. */
int notify_send(const char *state);
