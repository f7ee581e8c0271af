/* SPDX-License-Identifier: Apache-2.0 */
/* What kube-controller-manager needs beyond its row in the component table. */
#include "components/component-def.h"

/* kops names the cluster after the spec; aliases the spec, nothing to keep in the scratch. */
int kube_controller_manager_derive(const ClusterSpec *spec, void *config, ComponentScratch *scratch) {
        KubeControllerManagerConfig *c = config;
        c->cluster_name = c->cluster_name ?: spec->name;
        return 0;
}
