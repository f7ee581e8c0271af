/* SPDX-License-Identifier: Apache-2.0 */
#include "components/render.h"

#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "components/control-plane.h"
#include "components/conventions.h"
#include "manifest/pod-yaml.h"

void rendered_manifests_done(RenderedManifests *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->items[i].file_name);
                free(m->items[i].text);
        }
        free(m->items);
        *m = (RenderedManifests){};
}

/* Takes file_name and text on success. */
static int add(RenderedManifests *m, char **file_name, char **text) {
        RenderedManifest *items = realloc(m->items, (m->n + 1) * sizeof(RenderedManifest));
        if (!items)
                return -ENOMEM;
        m->items = items;
        m->items[m->n++] = (RenderedManifest){ TAKE_PTR(*file_name), TAKE_PTR(*text) };
        return 0;
}

static int add_pod(RenderedManifests *m, const char *name, Pod *pod) {
        _cleanup_free_ char *file_name = strjoin(name, MANIFEST_SUFFIX), *text = NULL;
        if (!file_name)
                return -ENOMEM;
        int r = pod_to_yaml(pod, &text);
        if (r < 0)
                return r;
        return add(m, &file_name, &text);
}

int control_plane_render(const ClusterSpec *spec, const EtcdMemberAssignment *etcd, size_t n_etcd,
                         RenderedManifests *ret, const char **ret_failed) {
        _cleanup_(rendered_manifests_done) RenderedManifests m = {};
        int r;

        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                _cleanup_(pod_freep) Pod *pod = NULL;
                r = component_pod_build(c, spec, &pod);
                if (r >= 0 && pod) /* NULL: disabled */
                        r = add_pod(&m, component_to_string(c), pod);
                if (r < 0) {
                        if (ret_failed)
                                *ret_failed = component_to_string(c);
                        return r;
                }
        }
        for (size_t i = 0; i < n_etcd; i++) {
                _cleanup_free_ char *file_name = NULL, *text = NULL;
                r = etcd_manifest_file_name(etcd[i].cluster, &file_name);
                if (r >= 0)
                        r = etcd_manifest_render(spec, &etcd[i], &text);
                if (r >= 0)
                        for (size_t j = 0; j < m.n; j++)
                                if (streq(m.items[j].file_name, file_name))
                                        r = -EEXIST; /* two assignments for one etcd cluster */
                if (r >= 0)
                        r = add(&m, &file_name, &text);
                if (r < 0) {
                        if (ret_failed)
                                *ret_failed = "etcd";
                        return r;
                }
        }
        *ret = m;
        m = (RenderedManifests){};
        return 0;
}
