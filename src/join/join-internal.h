/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the files of the join room; not for other rooms. */

/* The label of the objects protokube makes (as the self-hosted assets carry it). */
#define JOIN_MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
