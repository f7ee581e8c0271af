/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Compute Engine API subset protokube needs (compute/v1): disks and instances of a zone, listed with
 * filters over every page; attachDisk and detachDisk, each an operation polled to DONE. Errors as in
 * gce_client_call(), with the message in *ret_error (may be NULL; caller frees). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gce/client.h"

/* Compute caps a list page at 500. */
#define GCE_COMPUTE_PAGE_SIZE 500

typedef struct GceDisk {
        char *name;
        char *zone;   /* "europe-west1-b": the last segment of the zone's URL */
        char *status; /* "CREATING", "RESTORING", "FAILED", "READY", "DELETING" */
        uint64_t size_gb;
        char *source_snapshot; /* the snapshot it was made from; NULL when none */
        char **labels;         /* alternating key, value, in the answer's order; NULL when none */
        char **users;          /* the instances it is attached to, as "ZONE/NAME"; NULL when none */
        usec_t last_attach;    /* CLOCK_REALTIME of lastAttachTimestamp; 0 when none */
} GceDisk;

typedef struct GceAttachedDisk {
        char *disk; /* the disk's name (last segment of its source URL) */
        char *device_name;
        bool boot;
} GceAttachedDisk;

typedef struct GceInstance {
        char *name;
        char *zone;
        char *status; /* "RUNNING", "TERMINATED", ... */
        char *internal_ip;
        char *external_ip; /* NULL when none */
        char **labels;     /* alternating key, value */
        GceAttachedDisk *disks;
        size_t n_disks;
} GceInstance;

typedef struct GceOperation {
        char *name;
        char *status;        /* "PENDING", "RUNNING", "DONE" */
        char *error_code;    /* the first error's code when DONE with an error, else NULL */
        char *error_message; /* sanitized */
} GceOperation;

void gce_disk_done(GceDisk *d);
void gce_disks_free(GceDisk *d, size_t n);
void gce_instance_done(GceInstance *i);
void gce_instances_free(GceInstance *i, size_t n);
void gce_operation_done(GceOperation *o);
/* The value of label key, or NULL. */
const char *gce_labels_get(char *const *labels, const char *key) _pure_;

/* disks.list of zone with filter (Compute's list filter syntax, NULL for none), every page; zone NULL:
 * disks.aggregatedList, every zone of the project. */
int gce_compute_list_disks(GceClient *c, const char *zone, const char *filter, GceDisk **ret, size_t *ret_n,
                           char **ret_error);
/* disks.get; -ENOENT when there is no such disk. */
int gce_compute_get_disk(GceClient *c, const char *zone, const char *name, GceDisk *ret, char **ret_error);
/* instances.get; -ENOENT when there is no such instance. */
int gce_compute_get_instance(GceClient *c, const char *zone, const char *name, GceInstance *ret,
                             char **ret_error);
/* instances.list of zone (NULL: every zone, instances.aggregatedList) with filter, every page. */
int gce_compute_list_instances(GceClient *c, const char *zone, const char *filter, GceInstance **ret,
                               size_t *ret_n, char **ret_error);

/* instances.attachDisk of disk (in zone) to instance as device_name, READ_WRITE, then the operation polled
 * to DONE within timeout. PK_ECONFLICT when the disk is attached to another instance
 * (RESOURCE_IN_USE_BY_ANOTHER_RESOURCE): Compute decides that atomically, so this is a compare-and-set.
 * -ENOENT for no such disk or instance; PK_ECLOUD for another error of the operation. */
int gce_compute_attach_disk(GceClient *c, const char *zone, const char *instance, const char *disk,
                            const char *device_name, usec_t timeout, char **ret_error);
/* instances.detachDisk of device_name, polled to DONE within timeout. -ENOENT when the instance has no
 * such device. */
int gce_compute_detach_disk(GceClient *c, const char *zone, const char *instance, const char *device_name,
                            usec_t timeout, char **ret_error);

/* The parsers on their own (unit tests, the fuzz target): a disks.list or instances.list page (*ret_next:
 * its nextPageToken, NULL on the last page), one disk, one instance, one operation. PK_EMALFORMED for an
 * answer that is not what Compute documents. */
int gce_compute_parse_disk_page(const char *data, size_t len, GceDisk **ret, size_t *ret_n, char **ret_next);
int gce_compute_parse_instance_page(const char *data, size_t len, GceInstance **ret, size_t *ret_n,
                                    char **ret_next);
int gce_compute_parse_operation(const char *data, size_t len, GceOperation *ret);
