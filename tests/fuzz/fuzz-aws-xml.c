/* SPDX-License-Identifier: Apache-2.0 */
/* Every XML reader of the AWS client over one input: the DOM itself, the error document, DescribeVolumes,
 * DescribeInstances and ListResourceRecordSets pages. Malformed input must be an error, never a crash. */
#include <stdint.h>
#include <stdlib.h>

#include "aws/client.h"
#include "aws/ec2.h"
#include "aws/route53.h"
#include "shared/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        XmlNode *doc = NULL;
        if (xml_parse(data, size, &doc) >= 0) {
                (void)xml_path_text(doc, "a/b/c");
                xml_node_free(doc);
        }

        char *code, *msg, *id;
        aws_error_document_parse(data, size, &code, &msg, &id);
        free(code);
        free(msg);
        free(id);

        AwsVolume *v;
        AwsInstance *i;
        AwsRecordSet *s;
        size_t n;
        if (aws_ec2_parse_volumes(data, size, &v, &n) >= 0)
                aws_volumes_free(v, n);
        if (aws_ec2_parse_instances(data, size, &i, &n) >= 0)
                aws_instances_free(i, n);
        if (aws_route53_parse_record_sets(data, size, &s, &n) >= 0)
                aws_record_sets_free(s, n);
        return 0;
}
