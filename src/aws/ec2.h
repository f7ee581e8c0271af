/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The EC2 Query API subset protokube needs (API version 2016-11-15): form-encoded POSTs, XML answers. Errors
 * are PK_ECLOUD and friends with the message in *ret_error (may be NULL; caller frees), as in
 * aws_client_call(). */

#include <stddef.h>
#include <stdint.h>

#include "aws/client.h"

#define AWS_EC2_API_VERSION "2016-11-15"
/* EC2 caps DescribeVolumes pages at 500; a runaway NextToken chain stops here (5 million volumes). */
#define AWS_EC2_PAGES_MAX 10000

typedef struct AwsTag {
        char *key;
        char *value;
} AwsTag;

typedef struct AwsVolumeAttachment {
        char *instance_id;
        char *device;       /* "/dev/xvdf" */
        char *state;        /* "attaching", "attached", "detaching", "detached", "busy" */
        usec_t attach_time; /* CLOCK_REALTIME; 0 when EC2 did not say */
} AwsVolumeAttachment;

typedef struct AwsVolume {
        char *volume_id;
        char *availability_zone;
        char *state; /* "creating", "available", "in-use", "deleting", "deleted", "error" */
        char *volume_type;
        char *snapshot_id; /* the snapshot it was made from, NULL when none */
        uint64_t size_gib;
        AwsTag *tags;
        size_t n_tags;
        AwsVolumeAttachment *attachments;
        size_t n_attachments;
} AwsVolume;

typedef struct AwsInstance {
        char *instance_id;
        char *availability_zone;
        char *state;            /* "pending", "running", ... */
        char *private_ip;       /* NULL when none */
        char *private_dns_name; /* "ip-10-0-1-5.ec2.internal" (a kops node's name); NULL when none */
        char *public_ip;        /* NULL when none */
        char *root_device_name;
        char **block_devices; /* device names of the block device mapping, NULL-terminated */
        AwsTag *tags;
        size_t n_tags;
} AwsInstance;

/* A server-side filter: Filter.N.Name=name, Filter.N.Value.M=values[M-1] (values NULL-terminated). Names as
 * in the EC2 API Reference: "tag:KubernetesCluster", "tag-key", "availability-zone",
 * "attachment.instance-id". */
typedef struct AwsFilter {
        const char *name;
        const char *const *values;
} AwsFilter;

void aws_volume_done(AwsVolume *v);
void aws_volumes_free(AwsVolume *v, size_t n);
void aws_instance_done(AwsInstance *i);
void aws_instances_free(AwsInstance *i, size_t n);
/* Value of tag key, or NULL. */
const char *aws_tags_get(const AwsTag *tags, size_t n, const char *key) _pure_;

/* DescribeVolumes with filters (and/or volume_ids, NULL-terminated; both may be NULL), following NextToken
 * over every page. *ret: array of *ret_n volumes, free with aws_volumes_free(). */
int aws_ec2_describe_volumes(AwsClient *c, const AwsFilter *filters, size_t n_filters,
                             const char *const *volume_ids, AwsVolume **ret, size_t *ret_n,
                             char **ret_error);

/* DescribeInstances by id (NULL-terminated) and/or filters, all pages. Free with aws_instances_free(). */
int aws_ec2_describe_instances(AwsClient *c, const AwsFilter *filters, size_t n_filters,
                               const char *const *instance_ids, AwsInstance **ret, size_t *ret_n,
                               char **ret_error);

/* This instance: its id from IMDS (meta-data/instance-id), then DescribeInstances for the rest. */
int aws_ec2_describe_self(AwsClient *c, AwsInstance *ret, char **ret_error);

/* The by-id name an EBS volume gets on a Nitro instance: "vol-0abc" ->
 * "nvme-Amazon_Elastic_Block_Store_vol0abc" (udev's rule for the NVMe serial, which holds the volume id
 * without its dash). Caller frees. */
int aws_ebs_by_id_name(const char *volume_id, char **ret);

/* The first of /dev/xvdf../dev/xvdz that neither the instance's block device mapping (root included) nor
 * extra_used (NULL-terminated, may be NULL) holds; "sdX" and "xvdX" count as the same name, as EC2 treats
 * them. -ENOSPC when all are taken. Caller frees. */
int aws_ec2_pick_device(const AwsInstance *instance, const char *const *extra_used, char **ret);

/* The response parsers on their own (for the fuzz target): a whole DescribeVolumes / DescribeInstances page.
 */
int aws_ec2_parse_volumes(const void *data, size_t len, AwsVolume **ret, size_t *ret_n);
int aws_ec2_parse_instances(const void *data, size_t len, AwsInstance **ret, size_t *ret_n);

/* AttachVolume. EC2 answers at once with state "attaching"; wait with aws_ec2_wait_attached(). PK_ECONFLICT
 * when the volume is in use or being attached/detached (VolumeInUse, IncorrectState), -EADDRINUSE when the
 * device name is taken on the instance. */
int aws_ec2_attach_volume(AwsClient *c, const char *volume_id, const char *instance_id, const char *device,
                          char **ret_error);

/* DetachVolume of volume_id from instance_id (NULL: whoever holds it). EC2 answers at once with state
 * "detaching"; the volume is free once DescribeVolumes shows no attachment. */
int aws_ec2_detach_volume(AwsClient *c, const char *volume_id, const char *instance_id, char **ret_error);

/* Polls DescribeVolumes every interval until volume_id is "attached" to instance_id. Returns 0 (and the
 * device name EC2 reports in *ret_device, caller frees; may be NULL), PK_ECONFLICT when it is attached to
 * another instance, PK_ETIMEOUT after timeout. */
int aws_ec2_wait_attached(AwsClient *c, const char *volume_id, const char *instance_id, usec_t timeout,
                          usec_t interval, char **ret_device, char **ret_error);
