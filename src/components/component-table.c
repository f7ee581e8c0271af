/* SPDX-License-Identifier: Apache-2.0 */
/* The kube-* components as one table: each row says which config and field table, which priority and CPU
 * request, which probes and which files to mount; a row's hooks add what data cannot say. One engine turns a
 * row into flags and a pod, so flags and pods are always built from the same effective config. */
#include <stdlib.h>
#include <string.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/component-def.h"
#include "components/control-plane.h"
#include "components/conventions.h"
#include "components/flags.h"
#include "components/static-pod.h"

/* The components' configuration files. kube-proxy has read a KubeProxyConfiguration (v1alpha1, the only
 * version through 1.31) since long before 1.20. kube-scheduler reads a KubeSchedulerConfiguration: v1beta1
 * in 1.20 and 1.21, v1beta2 (new in 1.22) in 1.22, v1beta3 1.23's newest, v1 (1.25) GA. With --config the
 * 1.20 to 1.22 binaries serve unauthenticated HTTP on the file's healthzBindAddress and metricsBindAddress
 * (checked with 1.20.2: --port=0 beside --config has no effect, the file refuses port 0, an empty value is
 * the default [::]:10251), so the table's defaults put them on loopback; 1.23 removed that server
 * (kubernetes/kubernetes#96345). */
const ComponentFileDef kube_scheduler_file = {
        .kind = "KubeSchedulerConfiguration",
        .versions =
            (const ComponentFileVersion[]){
                { { .since = 20, .until = 21 }, "kubescheduler.config.k8s.io/v1beta1" },
                { { .since = 22, .until = 22 }, "kubescheduler.config.k8s.io/v1beta2" },
                { { .since = 23, .until = 24 }, "kubescheduler.config.k8s.io/v1beta3" },
                { { .since = 25 }, "kubescheduler.config.k8s.io/v1" },
                {},
            },
        .dir = "kube-scheduler", /* kops' /var/lib/kube-scheduler/config.yaml */
        .out_name = "kube-scheduler.yaml",
};

const ComponentFileDef kube_proxy_file = {
        .kind = "KubeProxyConfiguration",
        .versions =
            (const ComponentFileVersion[]){
                { {}, "kubeproxy.config.k8s.io/v1alpha1" },
                {},
            },
        .dir = "kube-proxy",
        .out_name = "kube-proxy.yaml",
};

#define CONFIG_OF(member) \
        .config_offset = offsetof(ClusterSpec, member), .config_size = sizeof(((ClusterSpec *)NULL)->member)

/* The front proxy's names and headers a delegating component trusts are the apiserver's (its CA files are
 * the pki layout's in the component's own directory: spec-pki.c). */
#define DELEGATED_AUTHENTICATION_INHERIT                                                                  \
        { "requestheaderAllowedNames", COMPONENT_KUBE_APISERVER, "requestheaderAllowedNames" },           \
            { "requestheaderUsernameHeaders", COMPONENT_KUBE_APISERVER, "requestheaderUsernameHeaders" }, \
            { "requestheaderGroupHeaders", COMPONENT_KUBE_APISERVER, "requestheaderGroupHeaders" }, {     \
                "requestheaderExtraHeaderPrefixes", COMPONENT_KUBE_APISERVER,                             \
                    "requestheaderExtraHeaderPrefixes"                                                    \
        }

static const ComponentDef component_table[_COMPONENT_MAX] = {
        [COMPONENT_KUBE_APISERVER] = {
                .name = KUBE_APISERVER,
                .fields = kube_apiserver_config_fields,
                CONFIG_OF(kube_apiserver),
                .priority_class = PRIORITY_CLUSTER_CRITICAL,
                .cpu_request = "150m",
                .probe_path = "/livez",
                .ready_path = "/readyz",
                .expose_port = true,
                .file_keys = (const char *const[]){ "tlsCertFile", "tlsPrivateKeyFile", "clientCAFile",
                        "kubeletClientCertificate", "kubeletClientKey", "kubeletCertificateAuthority",
                        "serviceAccountSigningKeyFile", "requestheaderClientCAFile", "proxyClientCertFile",
                        "proxyClientKeyFile", "etcdCAFile", "etcdCertFile", "etcdKeyFile", "auditPolicyFile",
                        "auditWebhookConfigFile", "oidcCAFile", "encryptionProviderConfig",
                        "serviceAccountKeyFile", NULL },
                .ca_certs = true,
                .derive = kube_apiserver_derive,
                .finish_pod = kube_apiserver_finish_pod,
        },
        [COMPONENT_KUBE_CONTROLLER_MANAGER] = {
                .name = KUBE_CONTROLLER_MANAGER,
                .fields = kube_controller_manager_config_fields,
                CONFIG_OF(kube_controller_manager),
                .priority_class = PRIORITY_CLUSTER_CRITICAL,
                .cpu_request = "100m",
                .probe_path = "/healthz",
                .file_keys = (const char *const[]){ "kubeconfig", "authenticationKubeconfig",
                        "authorizationKubeconfig", "clusterSigningCertFile", "clusterSigningKeyFile",
                        "rootCAFile", "serviceAccountPrivateKeyFile", "clientCAFile",
                        "requestheaderClientCAFile", NULL },
                .ca_certs = true,
                .inherit = (const ComponentInherit[]){
                        { "serviceClusterIPRange", COMPONENT_KUBE_APISERVER, "serviceClusterIPRange" },
                        DELEGATED_AUTHENTICATION_INHERIT,
                        {},
                },
                .derive = kube_controller_manager_derive,
        },
        [COMPONENT_KUBE_SCHEDULER] = {
                .name = KUBE_SCHEDULER,
                .fields = kube_scheduler_config_fields,
                CONFIG_OF(kube_scheduler),
                .priority_class = PRIORITY_CLUSTER_CRITICAL,
                .cpu_request = "100m",
                .probe_path = "/healthz",
                .file_keys = (const char *const[]){ "kubeconfig", "authenticationKubeconfig",
                        "authorizationKubeconfig", "clientCAFile", "requestheaderClientCAFile", "config", NULL },
                .inherit = (const ComponentInherit[]){ DELEGATED_AUTHENTICATION_INHERIT, {} },
                .file = &kube_scheduler_file,
        },
        [COMPONENT_KUBE_PROXY] = {
                .name = KUBE_PROXY,
                .fields = kube_proxy_config_fields,
                CONFIG_OF(kube_proxy),
                /* kube-proxy is per node, not per cluster: the node's priority class, as kops gives it. */
                .priority_class = PRIORITY_NODE_CRITICAL,
                .cpu_request = "100m",
                .file_keys = (const char *const[]){ "kubeconfig", NULL },
                .ca_certs = true,
                /* The controller-manager allocates the pods' CIDR. */
                .inherit = (const ComponentInherit[]){
                        { "clusterCIDR", COMPONENT_KUBE_CONTROLLER_MANAGER, "clusterCIDR" },
                        {},
                },
                .finish_pod = kube_proxy_finish_pod,
                .file = &kube_proxy_file,
        },
};

/* Room for any component's config: the scratch copy the defaults are filled into. */
typedef union ComponentConfig {
        KubeAPIServerConfig kube_apiserver;
        KubeControllerManagerConfig kube_controller_manager;
        KubeSchedulerConfig kube_scheduler;
        KubeProxyConfig kube_proxy;
} ComponentConfig;

static const ComponentDef *component_def(Component c) {
        return c >= 0 && c < _COMPONENT_MAX ? &component_table[c] : NULL;
}

const char *component_to_string(Component c) {
        const ComponentDef *d = component_def(c);
        return d ? d->name : NULL;
}

Component component_from_string(const char *s) {
        for (Component c = 0; s && c < _COMPONENT_MAX; c++)
                if (streq(component_table[c].name, s))
                        return c;
        return _COMPONENT_INVALID;
}

char *component_scratch_keep(ComponentScratch *scratch, char *s) {
        if (s && strv_push(&scratch->strings, s) < 0) {
                free(s);
                return NULL;
        }
        return s;
}

char **component_scratch_list1(ComponentScratch *scratch, char *s) {
        char **l = s ? new0(char *, 2) : NULL;
        char ***lists = l ? reallocarray(scratch->lists, scratch->n_lists + 1, sizeof(char **)) : NULL;
        if (!lists) {
                free(l);
                free(s);
                return NULL;
        }
        l[0] = s;
        scratch->lists = lists;
        scratch->lists[scratch->n_lists++] = l;
        return l;
}

static void component_scratch_done(ComponentScratch *scratch) {
        for (size_t i = 0; i < scratch->n_lists; i++)
                strv_free(scratch->lists[i]);
        free(scratch->lists);
        strv_free(scratch->strings);
        *scratch = (ComponentScratch){};
}

/* The config's field called key (the YAML key: the field table already says where each one is and of which
 * type, so the table rows name keys rather than repeat offsets), or NULL. */
static const Field *config_field(const ComponentDef *d, const char *key, FieldType type) {
        for (const Field *f = d->fields; f->name; f++)
                if (streq(f->name, key))
                        return f->type == type ? f : NULL;
        return NULL;
}

static void *config_member(const ComponentDef *d, const void *config, const char *key, FieldType type) {
        const Field *f = config_field(d, key, type);
        return f ? FIELD_PTR(config, f) : NULL;
}

static const char *config_string(const ComponentDef *d, const void *config, const char *key) {
        char *const *p = config_member(d, config, key, FIELD_STRING);
        return p ? *p : NULL;
}

/* Only components with an `enabled` key can be switched off; unset means on. */
static bool def_enabled(const ComponentDef *d, const ClusterSpec *spec) {
        const OptBool *b = config_member(d, (const uint8_t *)spec + d->config_offset, "enabled", FIELD_BOOL);
        return !b || !b->set || b->value;
}

bool component_enabled(Component c, const ClusterSpec *spec) {
        const ComponentDef *d = component_def(c);
        return d && def_enabled(d, spec);
}

/* key of component c as the spec has it, else its table default (derived defaults are not followed); a
 * string or a list (lists have no table default). */
static int spec_value_or_default(Component c, const ClusterSpec *spec, const char *key, FieldType type,
                                 const void **ret) {
        const ComponentDef *d = component_def(c);
        const Field *f = d ? config_field(d, key, type) : NULL;
        if (!f)
                return -EINVAL;
        const void *v = *(const void *const *)FIELD_PTR((const uint8_t *)spec + d->config_offset, f);
        *ret = v ?: type == FIELD_STRING ? f->default_value : NULL;
        return 0;
}

static int inherit_defaults(const ComponentDef *d, const ClusterSpec *spec, void *config) {
        for (const ComponentInherit *i = d->inherit; i && i->key; i++) {
                FieldType type = config_field(d, i->key, FIELD_STRV) ? FIELD_STRV : FIELD_STRING;
                void **p = config_member(d, config, i->key, type);
                if (!p)
                        return -EINVAL;
                const void *v;
                int r = spec_value_or_default(i->from, spec, i->from_key, type, &v);
                if (r < 0)
                        return r;
                *p = *p ?: (void *)v; /* aliases the spec or the table, like the table's defaults */
        }
        return 0;
}

/* What the engine makes of one row for one spec: the effective config and its flags. */
typedef struct ComponentBuild {
        ComponentConfig config;
        ComponentScratch scratch;
        char **flags; /* NULL: the component is disabled */
        unsigned minor;
        char *file; /* where it reads the configuration file protokube renders; NULL: it reads none */
} ComponentBuild;

static void component_build_done(ComponentBuild *b) {
        component_scratch_done(&b->scratch);
        free(b->file);
        b->file = NULL;
        b->flags = strv_free(b->flags);
}

/* The spec names the operator's own configuration file for the component (kubeScheduler.config). */
static bool operator_file_set(const ComponentDef *d, const void *config) {
        for (const Field *f = d->fields; f->name; f++)
                if ((f->flags & FIELD_OPERATOR_FILE) && !isempty(*(char *const *)FIELD_PTR(config, f)))
                        return true;
        return false;
}

/* The flags beside the file protokube renders: the settings it has no field for, and --config. */
static int file_flags(const ComponentDef *d, ComponentBuild *b) {
        int r = flags_build_beside_file(d->fields, &b->config, b->minor, &b->flags);
        if (r < 0)
                return r;
        r = flags_push(&b->flags, "config", b->file);
        if (r < 0)
                return r;
        strv_sort(b->flags);
        return 0;
}

/* The effective config (table defaults, inherited ones, then the hook's derived ones) and its flags in the
 * given form; b->flags = NULL when the component is disabled. */
static int component_prepare(const ComponentDef *d, const ClusterSpec *spec, ComponentForm form,
                             ComponentBuild *b) {
        KubeVersion v;
        if (!def_enabled(d, spec))
                return 0;
        /* The version selects the flags; the loader refuses others, this guards specs made in code. */
        int r = kube_version_parse(spec->kubernetes_version, &v);
        if (r < 0)
                return r;
        if (!kube_version_supported(&v))
                return -EOPNOTSUPP;
        memcpy(&b->config, (const uint8_t *)spec + d->config_offset, d->config_size);
        r = flags_fill_defaults(d->fields, &b->config);
        if (r < 0)
                return r;
        r = inherit_defaults(d, spec, &b->config);
        if (r < 0)
                return r;
        r = d->derive ? d->derive(spec, &b->config, &b->scratch) : 0;
        if (r < 0)
                return r;
        b->minor = v.minor;
        if (form == COMPONENT_FORM_FILE && component_file_api_version(d->file, v.minor) &&
            !operator_file_set(d, &b->config)) {
                b->file = component_file_path(d->file, spec->node_config_dir);
                return b->file ? file_flags(d, b) : -ENOMEM;
        }
        return flags_build(d->fields, &b->config, v.minor, &b->flags);
}

int component_flags(Component c, const ClusterSpec *spec, char ***ret) {
        return component_flags_form(c, spec, COMPONENT_FORM_FILE, ret);
}

int component_flags_form(Component c, const ClusterSpec *spec, ComponentForm form, char ***ret) {
        _cleanup_(component_build_done) ComponentBuild b = {};
        const ComponentDef *d = component_def(c);
        if (!d || form < 0 || form >= _COMPONENT_FORM_MAX)
                return -EINVAL;
        int r = component_prepare(d, spec, form, &b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(b.flags);
        return 0;
}

/* The rows marked FIELD_INSTANCE_PORT of the effective config moved to the instance's port. */
static int move_instance_ports(const ComponentDef *d, ComponentBuild *b, ComponentInstance instance) {
        for (const Field *f = d->fields; instance > 0 && f->name; f++) {
                char **value = FIELD_PTR(&b->config, f);
                if (!(f->flags & FIELD_INSTANCE_PORT) || f->type != FIELD_STRING || isempty(*value))
                        continue;
                const char *colon = strrchr(*value, ':');
                unsigned port;
                if (!colon || safe_atou(colon + 1, &port) < 0)
                        return -EINVAL; /* the spec's validation refuses it */
                port += FIELD_INSTANCE_PORT_STEP * (unsigned)instance;
                if (port > 65535)
                        return -ERANGE;
                *value = component_scratch_keep(&b->scratch,
                                                strprintf("%.*s:%u", (int)(colon - *value), *value, port));
                if (!*value)
                        return -ENOMEM;
        }
        return 0;
}

assert_cc(_COMPONENT_INSTANCE_MAX == FIELD_INSTANCES);

int component_config_file(Component c, const ClusterSpec *spec, ComponentConfigFile *ret) {
        return component_config_file_instance(c, spec, COMPONENT_INSTANCE_STATIC, ret);
}

int component_config_file_instance(Component c, const ClusterSpec *spec, ComponentInstance instance,
                                   ComponentConfigFile *ret) {
        _cleanup_(component_build_done) ComponentBuild b = {};
        const ComponentDef *d = component_def(c);
        char *text = NULL;
        if (!d || !ret || instance < 0 || instance >= _COMPONENT_INSTANCE_MAX)
                return -EINVAL;
        int r = component_prepare(d, spec, COMPONENT_FORM_FILE, &b);
        if (r >= 0)
                r = move_instance_ports(d, &b, instance);
        if (r < 0)
                return r;
        if (b.flags && b.file) {
                r = component_file_render(d->file, d->fields, &b.config, b.minor, &text);
                if (r < 0)
                        return r;
        }
        *ret = (ComponentConfigFile){
                .path = text ? TAKE_PTR(b.file) : NULL,
                .out_name = d->file ? d->file->out_name : NULL,
                .text = text,
        };
        return 0;
}

int component_config_path(Component c, const ClusterSpec *spec, char **ret) {
        const ComponentDef *d = component_def(c);
        if (!d)
                return -EINVAL;
        *ret = d->file ? component_file_path(d->file, spec->node_config_dir) : NULL;
        return d->file && !*ret ? -ENOMEM : 0;
}

/* The static pod with the image (the spec's, else the release's), go-runner and the requests. */
static int component_pod_new(const ComponentDef *d, const ClusterSpec *spec, const void *config,
                             char *const *flags, Pod **ret, PodContainer **ret_container) {
        _cleanup_free_ char *image = NULL;
        int r = conventions_component_image(spec, config_string(d, config, "image"), d->name, &image);
        if (r < 0)
                return r;
        StaticPodParams p = {
                .name = d->name,
                .image = image,
                .priority_class = d->priority_class,
                .binary = d->name,
                .go_runner = true,
                .flags = flags,
                .cpu_request = config_string(d, config, "cpuRequest") ?: d->cpu_request,
                .memory_request = config_string(d, config, "memoryRequest"),
        };
        return static_pod_new(&p, ret, ret_container);
}

/* HTTPS probes (and the container port) on securePort, which the table's defaults always set. */
static int add_probes(const ComponentDef *d, const void *config, PodContainer *ct) {
        if (!d->probe_path)
                return 0;
        const OptInt *port = config_member(d, config, "securePort", FIELD_INT);
        if (!port || !port->set)
                return -EINVAL;
        int p = (int)port->value;
        if (d->expose_port && pod_container_add_port(ct, "https", p, p) < 0)
                return -ENOMEM;
        return static_pod_set_health_probes(ct, "HTTPS", p, d->probe_path, d->ready_path);
}

/* Calls f for every file the row's keys name (a string is a list of one; NULL entries are passed too), then
 * for the configuration file protokube renders, if the component reads it. */
static int for_each_file(const ComponentDef *d, const ComponentBuild *b,
                         int (*f)(const char *key, const char *path, void *userdata), void *userdata) {
        for (const char *const *k = d->file_keys; k && *k; k++) {
                char *const *one = config_member(d, &b->config, *k, FIELD_STRING);
                char **const *list = config_member(d, &b->config, *k, FIELD_STRV);
                if (!one && !list)
                        return -EINVAL;             /* a key the field table does not have */
                char *const *values = one ?: *list; /* a string is a list of one */
                size_t n_values = one ? 1 : strv_length(*list);
                for (size_t i = 0; i < n_values; i++) {
                        int r = f(*k, values[i], userdata);
                        if (r < 0)
                                return r;
                }
        }
        return b->file ? f("config", b->file, userdata) : 0;
}

typedef struct FileList {
        const char *files[64]; /* bounds what one pod mounts */
        size_t n;
} FileList;

static int file_list_add(const char *key, const char *path, void *userdata) {
        FileList *l = userdata;
        if (l->n >= ELEMENTSOF(l->files))
                return -E2BIG;
        l->files[l->n++] = path;
        return 0;
}

/* The directories of the files named by the row's keys, read-only. */
static int mount_files(const ComponentDef *d, const ComponentBuild *b, Pod *pod, PodContainer *ct) {
        FileList l = {};
        int r = for_each_file(d, b, file_list_add, &l);
        if (r < 0)
                return r;
        return static_pod_mount_file_dirs(pod, ct, l.files, l.n);
}

static int key_path_add(const char *key, const char *path, void *userdata) {
        char ***l = userdata;
        if (isempty(path))
                return 0;
        if (strv_extend(l, key) < 0 || strv_extend(l, path) < 0)
                return -ENOMEM;
        return 0;
}

int component_files(Component c, const ClusterSpec *spec, char ***ret) {
        _cleanup_(component_build_done) ComponentBuild b = {};
        _cleanup_strv_free_ char **l = NULL;
        const ComponentDef *d = component_def(c);
        if (!d)
                return -EINVAL;
        int r = component_prepare(d, spec, COMPONENT_FORM_FILE, &b);
        if (r < 0)
                return r;
        if (b.flags) {
                l = new0(char *, 1);
                if (!l)
                        return -ENOMEM;
                r = for_each_file(d, &b, key_path_add, &l);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int component_pod_finish(const ComponentDef *d, const ComponentBuild *b, Pod *pod, PodContainer *ct) {
        int r = add_probes(d, &b->config, ct);
        if (r < 0)
                return r;
        r = mount_files(d, b, pod, ct);
        if (r < 0)
                return r;
        r = d->finish_pod ? d->finish_pod(pod, ct, &b->config) : 0;
        if (r < 0)
                return r;
        return d->ca_certs ? static_pod_mount_ca_certs(pod, ct) : 0;
}

int component_pod_build_form(Component c, const ClusterSpec *spec, ComponentForm form, Pod **ret) {
        _cleanup_(component_build_done) ComponentBuild b = {};
        _cleanup_(pod_freep) Pod *pod = NULL;
        PodContainer *ct;
        const ComponentDef *d = component_def(c);
        if (!d || form < 0 || form >= _COMPONENT_FORM_MAX)
                return -EINVAL;
        int r = component_prepare(d, spec, form, &b);
        if (r < 0)
                return r;
        if (b.flags) {
                r = component_pod_new(d, spec, &b.config, b.flags, &pod, &ct);
                if (r < 0)
                        return r;
                r = component_pod_finish(d, &b, pod, ct);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(pod); /* NULL when disabled */
        return 0;
}

int component_pod_build(Component c, const ClusterSpec *spec, Pod **ret) {
        return component_pod_build_form(c, spec, COMPONENT_FORM_FILE, ret);
}
