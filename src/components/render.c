/* SPDX-License-Identifier: Apache-2.0 */
#include "components/render.h"

#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/conventions.h"
#include "manifest/pod-yaml.h"

void rendered_manifests_done(RenderedManifests *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->items[i].file_name);
                free(m->items[i].text);
        }
        free(m->items);
        for (size_t i = 0; i < m->n_files; i++) {
                free(m->files[i].path);
                free(m->files[i].text);
        }
        free(m->files);
        *m = (RenderedManifests){};
}

/* Takes f->path and f->text on success. */
static int add_file(RenderedManifests *m, const char *component, ComponentConfigFile *f) {
        RenderedFile *files = reallocarray(m->files, m->n_files + 1, sizeof(RenderedFile));
        if (!files)
                return -ENOMEM;
        m->files = files;
        m->files[m->n_files++] =
            (RenderedFile){ component, TAKE_PTR(f->path), f->out_name, TAKE_PTR(f->text) };
        return 0;
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

/* What the API server accepts in all (apimachinery's TotalAnnotationSizeLimitB). */
#define ANNOTATIONS_SIZE_MAX (256U * 1024U)

int render_check_pod_annotations(char *const *a) {
        size_t n = strv_length(a), total = 0;
        if (n % 2 != 0)
                return -EINVAL; /* a key without a value */
        for (size_t i = 0; i < n; i += 2) {
                if (!pod_qualified_name_is_valid(a[i]))
                        return -EINVAL;
                for (size_t j = 0; j < i; j += 2)
                        if (streq(a[i], a[j]))
                                return -EINVAL;
                total += strlen(a[i]) + strlen(a[i + 1]);
                if (total > ANNOTATIONS_SIZE_MAX)
                        return -EINVAL;
        }
        return 0;
}

static int add_pod(RenderedManifests *m, const char *name, Pod *pod, char *const *annotations) {
        _cleanup_free_ char *file_name = strjoin(name, MANIFEST_SUFFIX), *text = NULL;
        if (!file_name)
                return -ENOMEM;
        for (size_t i = 0; annotations && annotations[i]; i += 2) {
                int r = pod_kv_set(&pod->annotations, annotations[i], annotations[i + 1]);
                if (r < 0)
                        return r;
        }
        int r = pod_to_yaml(pod, &text);
        if (r < 0)
                return r;
        return add(m, &file_name, &text);
}

/* A component's manifest and, in the file form, the file it reads. */
static int add_component(RenderedManifests *m, const ClusterSpec *spec, Component c,
                         const ControlPlaneParams *p) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        int r = component_pod_build_form(c, spec, COMPONENT_FORM_FILE, &pod);
        if (r < 0 || !pod) /* NULL: disabled */
                return r;
        r = add_pod(m, component_to_string(c), pod, p->pod_annotations);
        if (r < 0)
                return r;
        ComponentConfigFile f = {};
        r = component_config_file(c, spec, &f);
        if (r >= 0 && f.text)
                r = add_file(m, component_to_string(c), &f);
        free(f.path);
        free(f.text);
        return r;
}

int control_plane_render(const ClusterSpec *spec, const ControlPlaneParams *p, RenderedManifests *ret,
                         const char **ret_failed) {
        _cleanup_(rendered_manifests_done) RenderedManifests m = {};
        const EtcdMemberAssignment *etcd = p->etcd;
        size_t n_etcd = p->n_etcd;
        int r;

        r = render_check_pod_annotations(p->pod_annotations);
        if (r < 0) {
                if (ret_failed)
                        *ret_failed = "pod annotations";
                return r;
        }
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                r = add_component(&m, spec, c, p);
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

int kube_proxy_manifest_render(const ClusterSpec *spec, char **ret_file_name, char **ret_text,
                               ComponentConfigFile *ret_file) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_free_ char *name = NULL, *text = NULL;
        ComponentConfigFile f = {};
        int r = component_pod_build_form(COMPONENT_KUBE_PROXY, spec, COMPONENT_FORM_FILE, &pod);
        if (r < 0)
                return r;
        if (pod) {
                name = strjoin(component_to_string(COMPONENT_KUBE_PROXY), MANIFEST_SUFFIX);
                if (!name)
                        return -ENOMEM;
                r = pod_to_yaml(pod, &text);
                if (r >= 0)
                        r = component_config_file(COMPONENT_KUBE_PROXY, spec, &f);
                if (r < 0)
                        return r;
        }
        *ret_file_name = TAKE_PTR(name);
        *ret_text = TAKE_PTR(text);
        *ret_file = f;
        return 0;
}
