/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod model -> YAML (libyaml's emitter): block style, keys in a fixed order (alphabetical, as kubectl and
 * kops print them), the same bytes for the same pod. Strings a YAML 1.1 or 1.2 reader would take for a bool,
 * null, number or timestamp are quoted, so the kubelet reads every string as a string. */

#include <stdbool.h>

#include "model/pod.h"

/* The manifest text for pod (caller frees), ending in a newline. */
int pod_to_yaml(const Pod *pod, char **ret);

/* True if s written as a plain scalar would not read back as this string (bool, null, number, timestamp,
 * sexagesimal, merge/value keys, empty). */
bool yaml_plain_is_ambiguous(const char *s);
