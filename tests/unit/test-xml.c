/* SPDX-License-Identifier: Apache-2.0 */
#include "unit-test.h"

#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/xml.h"

static void test_parse_and_walk(void **state) {
        const char *doc =
            "<?xml version=\"1.0\"?>\n<R xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
            "<set><item><k>a &amp; b</k></item><other/><item><k><![CDATA[<c>]]></k></item></set>"
            "<x:id xmlns:x=\"urn:x\">42</x:id></R>";
        _cleanup_(xml_node_freep) XmlNode *root = NULL;
        assert_int_equal(xml_parse(doc, strlen(doc), &root), 0);
        assert_string_equal(root->name, "R");
        assert_string_equal(xml_path_text(root, "id"), "42"); /* namespace prefix dropped */
        unsigned n = 0;
        XML_FOREACH_NAMED(i, xml_child(root, "set"), "item") {
                n++;
                assert_string_equal(xml_path_text(i, "k"), n == 1 ? "a & b" : "<c>");
        }
        assert_int_equal(n, 2);
        assert_null(xml_path(root, "set/none"));
        assert_null(xml_path_text(root, "nope"));
        assert_string_equal(xml_path_text(root, "set/other"), "");
        assert_null(xml_path(root, "set//item"));
}

static int parse_str(const char *s) {
        XmlNode *n = NULL;
        int r = xml_parse(s, strlen(s), &n);
        xml_node_free(n);
        return r;
}

static void test_refusals(void **state) {
        assert_int_equal(parse_str(""), PK_EMALFORMED);
        assert_int_equal(parse_str("<a>"), PK_EMALFORMED);
        assert_int_equal(parse_str("<a></b>"), PK_EMALFORMED);
        assert_int_equal(parse_str("<a/><b/>"), PK_EMALFORMED);
        assert_int_equal(parse_str("text"), PK_EMALFORMED);
        /* No DOCTYPE, so no entity definitions (billion laughs, external entities). */
        assert_int_equal(parse_str("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>"), PK_EMALFORMED);
        assert_int_equal(parse_str("<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>"), PK_EMALFORMED);
        assert_int_equal(parse_str("<a>&undefined;</a>"), PK_EMALFORMED);

        _cleanup_free_ char *deep = NULL;
        for (unsigned i = 0; i < XML_DEPTH_MAX; i++)
                assert_int_equal(strextend_printf(&deep, "<a>"), 0);
        for (unsigned i = 0; i < XML_DEPTH_MAX; i++)
                assert_int_equal(strextend_printf(&deep, "</a>"), 0);
        assert_int_equal(parse_str(deep), 0);
        _cleanup_free_ char *deeper = strjoin("<b>", deep, "</b>");
        assert_int_equal(parse_str(deeper), PK_ETOOBIG);
}

static void test_escape(void **state) {
        _cleanup_free_ char *s = strdup("x:");
        assert_int_equal(xml_escape_append(&s, "<a href=\"1\">&'</a>"), 0);
        assert_string_equal(s, "x:&lt;a href=&quot;1&quot;&gt;&amp;&apos;&lt;/a&gt;");
        assert_int_equal(xml_escape_append(&s, "bell\a"), -EINVAL);
        assert_string_equal(s, "x:&lt;a href=&quot;1&quot;&gt;&amp;&apos;&lt;/a&gt;");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_and_walk),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_escape),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
