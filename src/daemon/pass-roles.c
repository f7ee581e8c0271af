/* SPDX-License-Identifier: Apache-2.0 */
/* The roles' tables of steps: what a pass of a node of that role observes, plans, applies and prints, in
 * which order (docs/ARCHITECTURE.md, "One pass, in one direction"). A new role is a new table here; a new
 * step is its file and its rows in the tables of the roles that take it. Nothing outside these tables
 * decides by role. */
#include "basic/macro.h"
#include "daemon/pass-types.h"
#include "daemon/step-api-names.h"
#include "daemon/step-api-view.h"
#include "daemon/step-backups.h"
#include "daemon/step-certs.h"
#include "daemon/step-control-plane.h"
#include "daemon/step-dns.h"
#include "daemon/step-etcd-manifests.h"
#include "daemon/step-etcd-upgrade.h"
#include "daemon/step-join.h"
#include "daemon/step-kubelet-boot.h"
#include "daemon/step-kubelet-config.h"
#include "daemon/step-kubelet-handoff.h"
#include "daemon/step-kubelet-rollout.h"
#include "daemon/step-members.h"
#include "daemon/step-node-join.h"
#include "daemon/step-node-proxy.h"
#include "daemon/step-pivot.h"
#include "daemon/step-pod-network.h"
#include "daemon/step-restore.h"
#include "daemon/step-volumes.h"

#define OBSERVE(s) \
        { PASS_PHASE_OBSERVE, &(s), PASS_WAVE_ALL }
#define PLAN(s) \
        { PASS_PHASE_PLAN, &(s), PASS_WAVE_ALL }
#define APPLY(s, wave) \
        { PASS_PHASE_APPLY, &(s), (wave) }
#define FINISH(s) \
        { PASS_PHASE_FINISH, &(s), PASS_WAVE_ALL }
#define PRINT(s) \
        { PASS_PHASE_PRINT, &(s), PASS_WAVE_ALL }
#define JOIN(s) \
        { PASS_PHASE_JOIN, &(s), PASS_WAVE_ALL }

/* A master: its etcd members' volumes, DNS for discovery, the control plane and its certificates, etcd's
 * membership, restores and backups, and the self-hosted pivot with its checkpoint.
 *
 * The pivot's record is read first: the API's names follow the pivot's turns while it is under way. The
 * members are decided before the volumes are planned (whether a member's manifest is current depends on
 * its decision); the certificates before the etcd manifests are rendered (a member gets its manifest once
 * its pairs are there); the API's names before DNS (the desired records leave out whom they withhold).
 *
 * The kubelet's files are written after its certificates (its kubeconfig names them).
 *
 * Every claim comes first (a lost one is known before any device work); DNS before the etcd manifests, so
 * that a member's name already points here when kubelet starts etcd (docs/etcd-dns.md); a member's
 * certificates before its manifest. A pass that brings up main's volume and another's takes main's wave
 * first (its devices, certificates, restore, member, manifest), then the rest's: the API's etcd does not
 * wait for the events volume. */
static const PassRow master_rows[] = {
        OBSERVE(pass_step_pivot),
        OBSERVE(pass_step_volumes),
        OBSERVE(pass_step_dns),
        OBSERVE(pass_step_api_names),
        OBSERVE(pass_step_members),
        OBSERVE(pass_step_certs),
        OBSERVE(pass_step_etcd_upgrade), /* the record through the store the certificates opened */
        OBSERVE(pass_step_control_plane),
        OBSERVE(pass_step_kubelet_config),
        OBSERVE(pass_step_kubelet_handoff_master), /* the lock's holder, its own Node */
        OBSERVE(pass_step_kubelet_rollout),
        OBSERVE(pass_step_join),               /* the cluster CA as the certificates' observation read it */
        OBSERVE(pass_step_pod_network_master), /* the Nodes, through this master's own apiserver */

        PLAN(pass_step_members),
        PLAN(pass_step_etcd_upgrade), /* the image a member is held at: whether its manifest is current */
        PLAN(pass_step_volumes),
        PLAN(pass_step_certs),
        PLAN(pass_step_etcd_manifests),
        PLAN(pass_step_api_names),
        PLAN(pass_step_dns),
        PLAN(pass_step_control_plane),
        PLAN(pass_step_kubelet_config),
        PLAN(pass_step_kubelet_handoff_master),
        PLAN(pass_step_kubelet_rollout),
        PLAN(pass_step_join),
        PLAN(pass_step_pod_network_master),

        APPLY(pass_step_volumes, PASS_WAVE_ALL), /* every claim */
        APPLY(pass_step_volume_devices, PASS_WAVE_FIRST),
        APPLY(pass_step_dns, PASS_WAVE_ALL),
        APPLY(pass_step_certs, PASS_WAVE_FIRST),
        APPLY(pass_step_restore, PASS_WAVE_FIRST),
        APPLY(pass_step_members, PASS_WAVE_FIRST),
        APPLY(pass_step_etcd_upgrade, PASS_WAVE_FIRST),
        APPLY(pass_step_etcd_manifests, PASS_WAVE_FIRST),
        APPLY(pass_step_volume_devices, PASS_WAVE_REST),
        APPLY(pass_step_certs, PASS_WAVE_REST),
        APPLY(pass_step_restore, PASS_WAVE_REST),
        APPLY(pass_step_members, PASS_WAVE_REST),
        APPLY(pass_step_etcd_upgrade, PASS_WAVE_REST),
        APPLY(pass_step_etcd_manifests, PASS_WAVE_REST),
        APPLY(pass_step_control_plane, PASS_WAVE_ALL),
        APPLY(pass_step_kubelet_config, PASS_WAVE_ALL), /* after the certificates: its kubeconfig */
        APPLY(pass_step_kubelet_handoff_master, PASS_WAVE_ALL),
        APPLY(pass_step_kubelet_rollout, PASS_WAVE_ALL),
        APPLY(pass_step_backups, PASS_WAVE_ALL),
        APPLY(pass_step_join, PASS_WAVE_ALL), /* after every step of the node's own control plane */
        APPLY(pass_step_pod_network_master, PASS_WAVE_ALL),
        APPLY(pass_step_volumes_done, PASS_WAVE_ALL),
        APPLY(pass_step_pivot, PASS_WAVE_ALL), /* the checkpoint, then one pivot step */

        FINISH(pass_step_dns), /* the changes still propagating, for /metrics */

        PRINT(pass_step_volumes),
        PRINT(pass_step_dns),
        PRINT(pass_step_control_plane),
        PRINT(pass_step_kubelet_config),
        PRINT(pass_step_kubelet_handoff_master),
        PRINT(pass_step_kubelet_rollout),
        PRINT(pass_step_certs),
        PRINT(pass_step_members),
        PRINT(pass_step_etcd_upgrade),
        PRINT(pass_step_pivot),
        PRINT(pass_step_join),
        PRINT(pass_step_pod_network_master),
        {},
};

/* A worker: the node's view of the API, from the masters the volume provider lists (read only: a worker's
 * pass never claims a volume, never looks at one's device, never renders a control-plane pod), then its
 * kubelet's bootstrap, whose CA is fetched from the masters of that view, then (kubenet) the pods'
 * network, read through a master of that view with the kubelet's identity once it joined, kube-proxy's
 * static pod with that identity, and where the join stands: its CSR, then its Node (docs/workers.md).
 * `join plan` asks the steps that keep a stage of the join, in the join's order. */
static const PassRow worker_rows[] = {
        OBSERVE(pass_step_api_view),
        OBSERVE(pass_step_kubelet_boot),
        OBSERVE(pass_step_kubelet_handoff_worker),
        OBSERVE(pass_step_pod_network_worker), /* after the listing: the masters to ask */
        OBSERVE(pass_step_node_proxy),
        OBSERVE(pass_step_node_join), /* after the kubelet's files: its token and pinned CA */
        PLAN(pass_step_api_view),
        PLAN(pass_step_kubelet_boot),
        PLAN(pass_step_kubelet_handoff_worker),
        PLAN(pass_step_pod_network_worker),
        PLAN(pass_step_node_proxy),
        PLAN(pass_step_node_join),
        APPLY(pass_step_api_view, PASS_WAVE_ALL),
        APPLY(pass_step_kubelet_boot, PASS_WAVE_ALL),
        APPLY(pass_step_kubelet_handoff_worker, PASS_WAVE_ALL), /* what /healthz says of the holder */
        APPLY(pass_step_pod_network_worker, PASS_WAVE_ALL),
        APPLY(pass_step_node_proxy, PASS_WAVE_ALL),
        APPLY(pass_step_node_join, PASS_WAVE_ALL),
        PRINT(pass_step_api_view),
        PRINT(pass_step_kubelet_boot),
        PRINT(pass_step_kubelet_handoff_worker),
        PRINT(pass_step_pod_network_worker),
        PRINT(pass_step_node_proxy),
        PRINT(pass_step_node_join),
        JOIN(pass_step_api_view),
        JOIN(pass_step_kubelet_boot),
        JOIN(pass_step_node_join),
        {},
};

static const PassRole roles[] = {
        [NODE_ROLE_MASTER] = { .role = NODE_ROLE_MASTER, .rows = master_rows },
        [NODE_ROLE_WORKER] = { .role = NODE_ROLE_WORKER, .rows = worker_rows },
};
/* one table per role the node options accept */
assert_cc(ELEMENTSOF(roles) == _NODE_ROLE_MAX);

const PassRole *pass_role(NodeRole role) {
        return role >= 0 && role < _NODE_ROLE_MAX ? &roles[role] : NULL;
}
