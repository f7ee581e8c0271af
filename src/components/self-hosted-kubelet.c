/* SPDX-License-Identifier: Apache-2.0 */
/* The managed kubelet (docs/kubelet-handoff.md): with spec.kubelet.selfHosted every node's kubelet is
 * handed from the bootstrap kubelet the init system starts to a kubelet in a pod of the DaemonSet
 * "kubelet", which takes the node's lock file; so upgrading the kubelet is a rollout through the API.
 *
 * What the pod runs is what the bootstrap kubelet runs, from the same sources: the node's kubelet.env
 * (protokube's, with the node's own facts: its name, address, kubeconfig, certificates, static pods, the
 * lock) and the cluster's KubeletConfiguration, here from the ConfigMap "kubelet-config" (the node's flags
 * outrank a file, so the node's facts stay the node's). Its credentials are the node's own files, never a
 * shared Secret. The flags an operator adds through the API are the container's args, after protokube's.
 *
 * A kubelet in a container needs, since 1.16 removed --containerized, exactly what it reaches on the host
 * (checked on this kernel and containerd, docs/kubelet-handoff.md, "What the pod mounts"): the node's PID
 * namespace and network, privilege, and at the same paths as on the host: its root dir with bidirectional
 * propagation (what it mounts there for volumes must reach the runtime), the node's kubelet directory, the
 * CRI socket's directory, the static pods' directory, a master's pki dir and the components'
 * configuration directory (read-only: its kubeconfig and client pair, and the static pods' hostPath
 * volumes, which the kubelet checks in its own view), iptables' lock,
 * /sys (its cgroups, recursively), /dev and /var/log (the pods' logs). */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/component-file.h"
#include "components/conventions.h"
#include "components/kubelet.h"
#include "components/self-hosted-internal.h"
#include "manifest/pod-yaml.h"
#include "model/conventions.h"
#include "model/workload.h"
#include "shared/crypto.h"

#define KUBELET                  "kubelet"
#define CONFIG_MAP               "kubelet-config"
#define CONFIG_MOUNT             "/etc/kubernetes/kubelet-config"
#define CONFIG_DIGEST_ANNOTATION "protokube.io/kubelet-config"
#define PID_FILE                 "/tmp/kubelet.pid" /* in the container's own file system */
#define RUNTIME_DIR_DEFAULT      "/run/containerd"
#define XTABLES_LOCK             "/run/xtables.lock" /* iptables' lock: the kubelet's rules are the node's */

/* The container's command: the node's flags, the machine's own (KUBELET_EXTRA_ARGS of its optional
 * /etc/default/kubelet, as the bootstrap kubelet's unit has them), then the ConfigMap's file (the last
 * --config wins), then the operator's args ("$@"). Its pid is kept for the readiness probe: exec keeps it.
 * The API expands a container's command ("$$" is its escape of "$"), hence "$$$$" for the shell's "$$"; a
 * probe's command is not expanded.
 *
 * The managed kubelet takes the lock but does not exit on contention: the bootstrap kubelet, started again
 * by its unit as soon as it exited, opens the lock file to wait for it, and that open would make a managed
 * kubelet that watches the file exit in turn (seen here: the two took turns every few seconds). So only
 * the bootstrap kubelet gives way; the managed one holds the node until it ends. */
#define ENTRY_SCRIPT                                                                                \
        "set -e; . \"$0\"; [ ! -r " KUBELET_DEFAULTS_FILE " ] || . " KUBELET_DEFAULTS_FILE "; "     \
        "echo $$$$ >" PID_FILE "; exec " KUBELET_IMAGE_BINARY " $KUBELET_ARGS $KUBELET_EXTRA_ARGS " \
        "--exit-on-lock-contention=false --config=" CONFIG_MOUNT "/config.yaml \"$@\""
/* Ready only while this container's kubelet holds a flock: the lock file, since it takes no other. A
 * kubelet still waiting for the lock is a "->" line of /proc/locks, not FLOCK in the second field. */
#define READY_SCRIPT                                                      \
        "read -r me <" PID_FILE " && while read -r _ kind _ _ pid _; do " \
        "[ \"$kind\" = FLOCK ] && [ \"$pid\" = \"$me\" ] && exit 0; done </proc/locks; exit 1"

static int config_digest(const char *text, char ret[static 65]) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *h = NULL;
        uint8_t d[32];
        int r = crypto_sha256_new(&h);
        if (r >= 0)
                r = crypto_sha256_update(h, text, strlen(text));
        if (r >= 0)
                r = crypto_sha256_final(h, d);
        if (r < 0)
                return r;
        crypto_hex(d, sizeof(d), ret);
        return 0;
}

static int build_config_map(const ClusterSpec *spec, SelfHostedAssets *a, char **ret_config) {
        _cleanup_strv_free_ char **labels = NULL;
        _cleanup_free_ char *config = NULL, *text = NULL;
        int r = kubelet_config_render(spec, &config);
        if (r >= 0)
                r = self_hosted_labels(KUBELET, "node", &labels);
        if (r < 0)
                return r;
        char *data[] = { (char *)"config.yaml", config, NULL };
        r = config_map_to_yaml(&(KubeObjectRef){ CONFIG_MAP, STATIC_POD_NAMESPACE, labels }, data, &text);
        if (r < 0)
                return r;
        r = self_hosted_assets_add(a, SELF_HOSTED_CONFIG_MAP, STATIC_POD_NAMESPACE, CONFIG_MAP, &text,
                                   strlen(text), false);
        if (r < 0)
                return r;
        *ret_config = TAKE_PTR(config);
        return 0;
}

#define BIDIRECTIONAL "Bidirectional"   /* its own mounts reach the host */
#define HOST_TO_POD   "HostToContainer" /* the host's later mounts reach it */

/* A host directory at the same path in the container, with that mount propagation (NULL: none). */
static int mount_dir(Pod *pod, PodContainer *c, const char *name, const char *path, const char *type,
                     bool read_only, const char *propagation) {
        int r = pod_add_host_mount(pod, c, name, path, type, read_only);
        if (r < 0 || !propagation)
                return r;
        PodVolumeMount *m = &c->volume_mounts[c->n_volume_mounts - 1];
        m->propagation = strdup(propagation);
        return m->propagation ? 0 : -ENOMEM;
}

/* The CRI socket's directory: the endpoint's path without its last component. */
static int runtime_dir(const KubeletConfig *k, char **ret) {
        const char *path =
            k->container_runtime_endpoint ? startswith(k->container_runtime_endpoint, "unix://") : NULL;
        /* validated: "unix://" and an absolute path */
        *ret = path ? strndup(path, MAX((size_t)(strrchr(path, '/') - path), (size_t)1))
                    : strdup(RUNTIME_DIR_DEFAULT);
        return *ret ? 0 : -ENOMEM;
}

static int add_host_mounts(const ClusterSpec *spec, const SelfHostedParams *p, Pod *pod, PodContainer *c) {
        const KubeletConfig *k = &spec->kubelet;
        const char *kubelet_dir = p->kubelet_dir ?: KUBELET_DIR_DEFAULT;
        const char *root_dir = k->root_dir ?: KUBELET_DIR_DEFAULT;
        const char *manifests = p->manifest_dir ?: k->static_pod_path ?: KUBELET_STATIC_POD_PATH_DEFAULT;
        _cleanup_free_ char *runtime = NULL;
        bool same = streq(kubelet_dir, root_dir);
        int r = runtime_dir(k, &runtime);
        if (r >= 0)
                r = mount_dir(pod, c, "root-dir", root_dir, "DirectoryOrCreate", false, BIDIRECTIONAL);
        if (r >= 0 && !same)
                r = mount_dir(pod, c, "kubelet-dir", kubelet_dir, "Directory", false, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "runtime", runtime, "Directory", false, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "static-pods", manifests, "DirectoryOrCreate", true, NULL);
        if (r >= 0) /* the machine's own flags */
                r = mount_dir(pod, c, "defaults", KUBELET_DEFAULTS_DIR, "DirectoryOrCreate", true, NULL);
        /* A master's kubeconfig, client pair and CA are in the pki dir; the kubelet also checks each static
         * pod's hostPath volumes in its own view (1.20 has no containerized mode): the etcd and control
         * plane pods' certificates there, kube-proxy's and the scheduler's files in the config dir. */
        if (r >= 0 && cluster_spec_pki_managed(spec))
                r = mount_dir(pod, c, "pki", spec->pki.dir, "DirectoryOrCreate", true, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "component-config", p->config_dir ?: COMPONENT_CONFIG_ROOT,
                              "DirectoryOrCreate", true, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "xtables-lock", XTABLES_LOCK, "FileOrCreate", false, NULL);
        if (r >= 0 && p->mount_root) /* a master's etcd volumes: its static pods' manifests link there */
                r = mount_dir(pod, c, "volumes", p->mount_root, "DirectoryOrCreate", true, HOST_TO_POD);
        if (r >= 0 && k->resolv_conf)
                r = mount_dir(pod, c, "resolv-conf", k->resolv_conf, "File", true, NULL);
        if (r >= 0 && k->volume_plugin_dir)
                r = mount_dir(pod, c, "volume-plugins", k->volume_plugin_dir, "DirectoryOrCreate", false,
                              NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "sys", "/sys", "Directory", false, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "dev", "/dev", "Directory", false, NULL);
        if (r >= 0)
                r = mount_dir(pod, c, "logs", "/var/log", "Directory", false, NULL);
        return r;
}

static int build_container(const ClusterSpec *spec, const SelfHostedParams *p, Pod *pod) {
        _cleanup_free_ char *image = NULL, *env = NULL;
        PodContainer *c;
        int r = conventions_component_image(spec, spec->kubelet.image, KUBELET, &image);
        if (r < 0)
                return r;
        env = strjoin(p->kubelet_dir ?: KUBELET_DIR_DEFAULT, "/" KUBELET_ENV_FILE);
        if (!env)
                return -ENOMEM;
        r = pod_add_container(pod, KUBELET, image, &c);
        if (r < 0)
                return r;
        c->privileged = true;
        c->command = strv_new("/bin/sh", "-c", ENTRY_SCRIPT, env);
        c->readiness_probe = (PodProbe){ .set = true, .period_seconds = 5 };
        c->readiness_probe.exec_command = strv_new("/bin/sh", "-c", READY_SCRIPT);
        if (!c->command || !c->readiness_probe.exec_command)
                return -ENOMEM;
        r = pod_add_object_volume(pod, "config", CONFIG_MAP, true, 0);
        if (r >= 0)
                r = pod_container_add_mount(c, "config", CONFIG_MOUNT, true);
        if (r < 0)
                return r;
        return add_host_mounts(spec, p, pod, c);
}

static int build_daemon_set(const ClusterSpec *spec, const SelfHostedParams *p, const char *config,
                            SelfHostedAssets *a) {
        _cleanup_(workload_freep) Workload *w = new0(Workload, 1);
        _cleanup_free_ char *text = NULL;
        char digest[65];
        if (!w)
                return -ENOMEM;
        *w = (Workload){ .kind = WORKLOAD_DAEMON_SET, .max_unavailable = 1 };
        int r = pod_new(KUBELET, STATIC_POD_NAMESPACE, &w->pod);
        if (r < 0)
                return r;
        Pod *pod = w->pod;
        pod->host_network = pod->host_pid = true;
        w->name = strdup(KUBELET);
        w->namespace = strdup(STATIC_POD_NAMESPACE);
        pod->priority_class_name = strdup(PRIORITY_NODE_CRITICAL);
        if (!w->name || !w->namespace || !pod->priority_class_name)
                return -ENOMEM;
        r = config_digest(config, digest);
        if (r >= 0) /* a change of the ConfigMap's file rolls the kubelets, one node at a time */
                r = pod_kv_set(&pod->annotations, CONFIG_DIGEST_ANNOTATION, digest);
        if (r >= 0)
                r = self_hosted_set_labels(&w->labels, KUBELET, "node");
        if (r >= 0)
                r = self_hosted_set_labels(&pod->labels, KUBELET, "node");
        if (r >= 0) /* every node, whatever its taints: the bootstrap kubelet's among them */
                r = pod_add_toleration(pod, NULL, "Exists", NULL, NULL);
        if (r >= 0)
                r = build_container(spec, p, pod);
        if (r >= 0)
                r = workload_to_yaml(w, &text);
        if (r < 0)
                return r;
        return self_hosted_assets_add(a, SELF_HOSTED_DAEMON_SET, STATIC_POD_NAMESPACE, KUBELET, &text,
                                      strlen(text), false);
}

int self_hosted_kubelet_build(const ClusterSpec *spec, const SelfHostedParams *p, SelfHostedAssets *a,
                              char **ret_error) {
        _cleanup_free_ char *config = NULL;
        if (!spec->kubelet.self_hosted.set || !spec->kubelet.self_hosted.value)
                return 0;
        int r = build_config_map(spec, a, &config);
        if (r >= 0)
                r = build_daemon_set(spec, p, config, a);
        if (r < 0)
                return error_setf(ret_error, r, "the managed kubelet: %s", pk_strerror(r));
        return 0;
}
