/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The names a state store URL carries (s3://BUCKET[/PREFIX][?region=REGION]), checked where the spec is
 * validated and again where the store opens: one rule each, here, since the spec's room cannot include the
 * store's or the AWS client's. */

#include <stdbool.h>
#include <stddef.h>

/* An S3 bucket name as S3 allows them for new buckets (S3 User Guide, "Bucket naming rules"): 3-63 of
 * [a-z0-9.-], starting and ending with a letter or digit. len: the name's length in b. */
bool s3_bucket_name_valid(const char *b, size_t len);

/* A region name, which becomes part of host names: 1-64 of [a-z0-9-], not starting or ending with '-'. */
bool s3_region_name_valid(const char *region);
