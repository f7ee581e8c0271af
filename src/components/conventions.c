/* SPDX-License-Identifier: Apache-2.0 */
#include "components/conventions.h"

#include <string.h>

#include "basic/string-util.h"

/* The version goes into an image reference: a tag allows only these characters. */
static bool version_is_valid(const char *v) {
        return !isempty(v) && strlen(v) < 64 &&
               v[strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-")] == 0;
}

int conventions_component_image(const ClusterSpec *spec, const char *override, const char *component,
                                char **ret) {
        char *s;
        if (!isempty(override))
                s = strdup(override);
        else {
                const char *v = spec->kubernetes_version;
                if (!version_is_valid(v))
                        return -EINVAL;
                if (v[0] == 'v')
                        v++;
                s = strprintf("%s/%s:v%s", CONTROL_PLANE_IMAGE_REGISTRY, component, v);
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
