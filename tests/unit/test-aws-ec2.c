/* SPDX-License-Identifier: Apache-2.0 */
/* EC2 helpers and response parsing without a server (the double covers the wire in test-aws-client). */
#include "unit-test.h"

#include <string.h>

#include "aws/ec2.h"
#include "aws/route53.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"

static void test_by_id_name(void **state) {
        _cleanup_free_ char *n = NULL;
        assert_int_equal(aws_ebs_by_id_name("vol-0abc123def4567890", &n), 0);
        assert_string_equal(n, "nvme-Amazon_Elastic_Block_Store_vol0abc123def4567890");
        assert_int_equal(aws_ebs_by_id_name("vol-", &n), -EINVAL);
        assert_int_equal(aws_ebs_by_id_name("vol-../x", &n), -EINVAL);
        assert_int_equal(aws_ebs_by_id_name("i-0abc", &n), -EINVAL);
}

static void test_pick_device(void **state) {
        char *bdm[] = { "/dev/xvda", "/dev/sdf", "/dev/xvdg", NULL };
        AwsInstance inst = { .root_device_name = "/dev/xvda", .block_devices = bdm };
        const char *extra[] = { "xvdh", NULL };
        _cleanup_free_ char *d = NULL, *d2 = NULL;
        assert_int_equal(aws_ec2_pick_device(&inst, extra, &d), 0);
        assert_string_equal(d, "/dev/xvdi"); /* sdf == xvdf, xvdg mapped, xvdh in use by the caller */
        char *none[] = { NULL };
        inst.block_devices = none;
        assert_int_equal(aws_ec2_pick_device(&inst, NULL, &d2), 0);
        assert_string_equal(d2, "/dev/xvdf");

        char names[21][12];
        char *all[22] = {};
        for (int i = 0; i < 21; i++) {
                snprintf(names[i], sizeof(names[i]), "/dev/sd%c", 'f' + i);
                all[i] = names[i];
        }
        inst.block_devices = all;
        char *x = NULL;
        assert_int_equal(aws_ec2_pick_device(&inst, NULL, &x), -ENOSPC);
}

static void test_parse_corpus(void **state) {
        _cleanup_free_ char *v = NULL, *i = NULL, *r = NULL;
        size_t lv, li, lr, n;
        assert_int_equal(read_full_file(SRCDIR "/tests/fuzz/aws-xml/describe-volumes.xml", 1 << 20, &v, &lv),
                         0);
        assert_int_equal(
            read_full_file(SRCDIR "/tests/fuzz/aws-xml/describe-instances.xml", 1 << 20, &i, &li), 0);
        assert_int_equal(read_full_file(SRCDIR "/tests/fuzz/aws-xml/rrsets.xml", 1 << 20, &r, &lr), 0);

        AwsVolume *vols;
        assert_int_equal(aws_ec2_parse_volumes(v, lv, &vols, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(vols[0].volume_id, "vol-1");
        assert_int_equal(vols[0].size_gib, 8);
        assert_int_equal(vols[0].n_attachments, 1);
        assert_string_equal(vols[0].attachments[0].device, "/dev/xvdf");
        assert_string_equal(aws_tags_get(vols[0].tags, vols[0].n_tags, "k8s.io/etcd/main"), "a/a,b,c");
        assert_string_equal(aws_tags_get(vols[0].tags, vols[0].n_tags, "empty"), "");
        aws_volumes_free(vols, n);

        AwsInstance *inst;
        assert_int_equal(aws_ec2_parse_instances(i, li, &inst, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(inst[0].public_ip, "54.0.0.1");
        assert_string_equal(inst[0].state, "running");
        aws_instances_free(inst, n);

        AwsRecordSet *s;
        assert_int_equal(aws_route53_parse_record_sets(r, lr, &s, &n), 0);
        assert_int_equal(n, 2);
        assert_false(s[0].alias);
        assert_true(s[1].alias);
        assert_null(s[1].values[0]);
        aws_record_sets_free(s, n);

        /* A volume without its id is malformed, not half a volume. */
        const char *bad =
            "<R><volumeSet><item><availabilityZone>a</availabilityZone><status>x</status></item>"
            "</volumeSet></R>";
        assert_int_equal(aws_ec2_parse_volumes(bad, strlen(bad), &vols, &n), PK_EMALFORMED);
        const char *ctl = "<R><volumeSet><item><volumeId>vol-&#1;</volumeId></item></volumeSet></R>";
        assert_int_equal(aws_ec2_parse_volumes(ctl, strlen(ctl), &vols, &n), PK_EMALFORMED);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_by_id_name),
                cmocka_unit_test(test_pick_device),
                cmocka_unit_test(test_parse_corpus),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
