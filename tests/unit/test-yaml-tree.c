/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/yaml-tree.h"
#include "unit-test.h"

static YamlNode *parse_ok(const char *text, unsigned flags) {
        YamlNode *root = NULL;
        char *error = NULL;
        int r = yaml_tree_parse(text, strlen(text), flags, &root, &error);
        if (r < 0)
                fail_msg("parse failed: %d %s", r, strnull(error));
        assert_null(error);
        return root;
}

static int parse_error(const char *text, size_t len, unsigned flags, char **ret_error) {
        YamlNode *root = (YamlNode *)0x1; /* must not be written on failure */
        int r = yaml_tree_parse(text, len, flags, &root, ret_error);
        assert_true(r < 0);
        assert_ptr_equal(root, (YamlNode *)0x1);
        return r;
}

static void test_structure_and_marks(void **state) {
        _cleanup_(yaml_tree_freep) YamlNode *root = parse_ok("a: 1\n"
                                                             "b:\n"
                                                             "  - x\n"
                                                             "  - 'y'\n"
                                                             "c: {d: \"e\", f: ~}\n"
                                                             "g: !!str 5\n"
                                                             "h: |\n"
                                                             "  text\n",
                                                             0);
        assert_non_null(root);
        assert_int_equal(root->kind, YAML_TREE_MAPPING);
        assert_int_equal(root->n_pairs, 5);
        assert_int_equal(root->line, 1);
        assert_int_equal(root->column, 1);

        const YamlNode *a = yaml_tree_get(root, "a");
        assert_int_equal(a->kind, YAML_TREE_SCALAR);
        assert_string_equal(a->value, "1");
        assert_int_equal(a->line, 1);
        assert_int_equal(a->column, 4);
        assert_int_equal(a->style, YAML_TREE_PLAIN);
        assert_false(yaml_tree_is_string(a));

        const YamlNode *b = yaml_tree_get(root, "b");
        assert_int_equal(b->kind, YAML_TREE_SEQUENCE);
        assert_int_equal(b->n_items, 2);
        assert_int_equal(yaml_tree_item(b, 1)->line, 4);
        assert_int_equal(yaml_tree_item(b, 1)->column, 5);
        assert_int_equal(yaml_tree_item(b, 1)->style, YAML_TREE_SINGLE_QUOTED);
        assert_true(yaml_tree_is_string(yaml_tree_item(b, 1)));
        assert_null(yaml_tree_item(b, 2));
        assert_null(yaml_tree_item(a, 0));

        const YamlNode *c = yaml_tree_get(root, "c");
        assert_int_equal(c->kind, YAML_TREE_MAPPING);
        assert_int_equal(c->line, 5);
        assert_int_equal(c->column, 4);
        assert_int_equal(yaml_tree_get(c, "d")->style, YAML_TREE_DOUBLE_QUOTED);
        assert_true(yaml_tree_is_null(yaml_tree_get(c, "f")));
        assert_false(yaml_tree_is_null(yaml_tree_get(c, "d")));
        assert_null(yaml_tree_get(c, "zz"));
        assert_null(yaml_tree_get(NULL, "a"));

        const YamlNode *g = yaml_tree_get(root, "g");
        assert_string_equal(g->tag, "tag:yaml.org,2002:str");
        assert_string_equal(yaml_tree_short_tag(g), "str");
        assert_true(yaml_tree_is_string(g));

        const YamlNode *h = yaml_tree_get(root, "h");
        assert_int_equal(h->style, YAML_TREE_LITERAL);
        assert_string_equal(h->value, "text\n");
        assert_string_equal(yaml_tree_describe(h), "a quoted string");
        assert_string_equal(yaml_tree_describe(b), "a sequence");
        assert_string_equal(yaml_tree_describe(c), "a mapping");
}

static void test_nul_in_scalar(void **state) {
        _cleanup_(yaml_tree_freep) YamlNode *root = parse_ok("a: \"x\\0y\"\n", 0);
        const YamlNode *a = yaml_tree_get(root, "a");
        assert_int_equal(a->len, 3);
        assert_memory_equal(a->value, "x\0y", 3);
}

static void test_empty(void **state) {
        YamlNode *root = (YamlNode *)0x1;
        assert_int_equal(yaml_tree_parse("", 0, 0, &root, NULL), 0);
        assert_null(root);
        assert_int_equal(yaml_tree_parse("# only a comment\n", 17, 0, &root, NULL), 0);
        assert_null(root);
}

static void test_duplicates_marked(void **state) {
        _cleanup_(yaml_tree_freep) YamlNode *root = parse_ok("a: 1\nb: 2\na: 3\nc: 4\nb: 5\na: 6\n", 0);
        assert_int_equal(root->n_pairs, 6);
        assert_null(root->pairs[0].first);
        assert_null(root->pairs[1].first);
        assert_ptr_equal(root->pairs[2].first, &root->pairs[0]);
        assert_null(root->pairs[3].first);
        assert_ptr_equal(root->pairs[4].first, &root->pairs[1]);
        assert_ptr_equal(root->pairs[5].first, &root->pairs[0]);
        /* yaml_tree_get returns the first occurrence */
        assert_string_equal(yaml_tree_get(root, "a")->value, "1");
}

static void test_duplicates_rejected(void **state) {
        _cleanup_free_ char *error = NULL;
        const char *text = "x:\n  a: 1\n  b: 2\n  a: 3\n";
        assert_int_equal(parse_error(text, strlen(text), YAML_TREE_REJECT_DUPLICATES, &error),
                         PK_EMALFORMED);
        assert_string_equal(error, "4:3: duplicate key 'a' (first at 2:3)");
}

static void test_anchors_aliases_rejected(void **state) {
        _cleanup_free_ char *e1 = NULL, *e2 = NULL;
        const char *bomb = "a: &a [x, x]\nb: [*a, *a]\n";
        assert_int_equal(parse_error(bomb, strlen(bomb), 0, &e1), PK_EMALFORMED);
        assert_string_equal(e1, "1:4: anchors and aliases are not supported");
        const char *anchor = "a: &x 1\n";
        assert_int_equal(parse_error(anchor, strlen(anchor), 0, &e2), PK_EMALFORMED);
        assert_true(startswith(e2, "1:4: anchors"));
}

static void test_syntax_errors(void **state) {
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL;
        const char *bad = "a: 1\n b: 2\n";
        assert_int_equal(parse_error(bad, strlen(bad), 0, &e1), PK_EMALFORMED);
        assert_string_equal(e1, "2:3: mapping values are not allowed in this context");
        const char *two = "a: 1\n---\nb: 2\n";
        assert_int_equal(parse_error(two, strlen(two), 0, &e2), PK_EMALFORMED);
        assert_string_equal(e2, "2:1: more than one document in the stream");
        const char bin[] = "a: \x01\n";
        assert_int_equal(parse_error(bin, sizeof(bin) - 1, 0, &e3), PK_EMALFORMED);
        assert_true(startswith(e3, "1:4: "));
        /* no message wanted: still fails cleanly */
        assert_int_equal(parse_error(bad, strlen(bad), 0, NULL), PK_EMALFORMED);
}

static void test_depth_cap(void **state) {
        _cleanup_free_ char *deep = malloc(2 * YAML_TREE_MAX_DEPTH + 8), *error = NULL;
        size_t n = 0;
        for (unsigned i = 0; i < YAML_TREE_MAX_DEPTH + 1; i++)
                deep[n++] = '[';
        for (unsigned i = 0; i < YAML_TREE_MAX_DEPTH + 1; i++)
                deep[n++] = ']';
        assert_int_equal(parse_error(deep, n, 0, &error), PK_ETOOBIG);
        assert_string_equal(error, "1:65: nesting is too deep");

        /* exactly at the cap is fine */
        YamlNode *root = NULL;
        assert_int_equal(yaml_tree_parse(deep + 1, n - 2, 0, &root, NULL), 0);
        yaml_tree_free(root);
}

static void test_size_and_node_caps(void **state) {
        _cleanup_free_ char *big = malloc(YAML_TREE_MAX_INPUT + 1), *e1 = NULL, *e2 = NULL;
        memset(big, '#', YAML_TREE_MAX_INPUT + 1);
        assert_int_equal(parse_error(big, YAML_TREE_MAX_INPUT + 1, 0, &e1), PK_ETOOBIG);
        assert_string_equal(e1, "1:1: input is larger than 1 MiB");

        /* [a,a,a,...] with more items than the node cap */
        size_t n = 0;
        big[n++] = '[';
        for (unsigned i = 0; i < YAML_TREE_MAX_NODES + 10; i++) {
                big[n++] = 'a';
                big[n++] = ',';
        }
        big[n - 1] = ']';
        assert_int_equal(parse_error(big, n, 0, &e2), PK_ETOOBIG);
        assert_true(strstr(e2, "too many nodes"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_structure_and_marks),
                cmocka_unit_test(test_nul_in_scalar),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_duplicates_marked),
                cmocka_unit_test(test_duplicates_rejected),
                cmocka_unit_test(test_anchors_aliases_rejected),
                cmocka_unit_test(test_syntax_errors),
                cmocka_unit_test(test_depth_cap),
                cmocka_unit_test(test_size_and_node_caps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
