/* SPDX-License-Identifier: Apache-2.0 */
/* What kube-controller-manager needs beyond its row in the component table: defaults from other components.
 */
#include "components/component-def.h"
#include "components/flags.h"

int kube_controller_manager_derive(const ClusterSpec *spec, void *config, ComponentScratch *scratch) {
        KubeControllerManagerConfig *c = config;
        KubeAPIServerConfig api = spec->kube_apiserver;
        /* The service range must be the apiserver's; the cluster name is the spec's. Both alias the spec or
         * the tables, nothing to keep in the scratch. */
        int r = flags_fill_defaults(kube_apiserver_config_fields, &api);
        if (r < 0)
                return r;
        c->service_cluster_ip_range = c->service_cluster_ip_range ?: api.service_cluster_ip_range;
        c->cluster_name = c->cluster_name ?: spec->name;
        return 0;
}
