/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* AWS's names that become parts of host names: an S3 bucket (a state store URL's s3://BUCKET), a region
 * (?region=, AWS_REGION, IMDS's answer). One rule each, here: the spec's check, the store, the AWS client
 * and IMDS use them, and the spec's room cannot include the store's or the AWS client's. */

#include <stdbool.h>
#include <stddef.h>

/* An S3 bucket name as S3 allows them for new buckets (S3 User Guide, "Bucket naming rules"): 3-63 of
 * [a-z0-9.-], starting and ending with a letter or digit. len: the name's length in b. */
bool aws_bucket_name_valid(const char *b, size_t len);

/* A region name, which becomes part of host names: 1-64 of [a-z0-9-], not starting or ending with '-'. */
bool aws_region_name_valid(const char *region);
