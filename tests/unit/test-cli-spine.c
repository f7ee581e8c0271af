/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI spine (src/cli/spine.c): one verb table and option tables drive the parser and --help. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "cli/cli.h"
#include "unit-test.h"

static int n_calls;
static CliContext seen;
static char *seen_args[8];
static const char *arg_flavour;

static int record(CliContext *ctx, char **args) {
        n_calls++;
        seen = *ctx;
        memset(seen_args, 0, sizeof(seen_args));
        for (size_t i = 0; args[i] && i < ELEMENTSOF(seen_args) - 1; i++)
                seen_args[i] = args[i];
        return 42;
}

static int parse_flavour(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_flavour = value;
        return 0;
}

static const CliOption flavour_options[] = {
        { .name = "flavour",
          .arg_name = "F",
          .env = "PROTOKUBE_TEST_FLAVOUR",
          .help = "the flavour",
          .parse = parse_flavour },
        {},
};

static const CliVerb cake_verbs[] = {
        { .name = "eat",
          .run = record,
          .help = "eat one",
          .flags = CLI_NODE_OPTIONS,
          .options = flavour_options,
          .args_synopsis = "THING",
          .min_args = 1,
          .max_args = 1 },
        {},
};

static const CliVerb cake = { .name = "cake", .help = "cakes", .sub_verbs = cake_verbs };
static const CliVerb plain = {
        .name = "plain", .run = record, .help = "plain", .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS
};

/* Runs the verb on a copy of argv (the spine reorders it) with a fresh context; returns the exit code. */
static int run(const CliVerb *verb, const char *const *argv) {
        char *copy[16] = {};
        int argc = 0;
        for (; argv[argc]; argc++)
                copy[argc] = (char *)argv[argc];
        CliContext ctx = { .interval = 10 };
        n_calls = 0;
        arg_flavour = NULL;
        return cli_run_verb(verb, argc, copy, &ctx);
}

/* run(), with stdout captured into buf. */
static int run_captured(const CliVerb *verb, const char *const *argv, char *buf, size_t size) {
        FILE *tmp = tmpfile();
        assert_non_null(tmp);
        fflush(stdout);
        int saved = dup(STDOUT_FILENO);
        assert_true(saved >= 0 && dup2(fileno(tmp), STDOUT_FILENO) >= 0);
        int r = run(verb, argv);
        fflush(stdout);
        assert_true(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        rewind(tmp);
        size_t n = fread(buf, 1, size - 1, tmp);
        buf[n] = 0;
        fclose(tmp);
        return r;
}

static void test_options_and_arguments_mix_and_pick_the_sub_verb(void **state) {
        const char *argv[] = {
                "cake", "--zone", "z1", "eat", "--flavour", "lemon", "pie", "--pool=/p", NULL
        };
        assert_int_equal(run(&cake, argv), 42);
        assert_int_equal(n_calls, 1);
        assert_string_equal(seen.name, "cake eat");
        assert_string_equal(seen.node.zone, "z1");
        assert_string_equal(seen.node.pool_dir, "/p");
        assert_string_equal(arg_flavour, "lemon");
        assert_string_equal(seen_args[0], "pie");
        assert_null(seen_args[1]);
}

static void test_double_dash_ends_the_options(void **state) {
        const char *argv[] = { "cake", "eat", "--", "--not-an-option", NULL };
        assert_int_equal(run(&cake, argv), 42);
        assert_string_equal(seen_args[0], "--not-an-option");
}

static void test_usage_errors_do_not_call_the_verb(void **state) {
        const char *unknown[] = { "cake", "eat", "pie", "--bogus", NULL };
        const char *sub_option_at_parent[] = { "cake", "--flavour", "x", NULL };
        const char *missing_value[] = { "cake", "eat", "pie", "--flavour", NULL };
        const char *missing_argument[] = { "cake", "eat", NULL };
        const char *extra_argument[] = { "cake", "eat", "pie", "tart", NULL };
        const char *unknown_sub[] = { "cake", "bake", NULL };
        const char *no_sub[] = { "cake", NULL };
        const char *no_spec[] = { "plain", NULL };
        const char *bad_ip[] = { "plain", "-c", "s.yaml", "--internal-ip", "10.0.0.1 ", NULL };
        const char *const *cases[] = { unknown,        sub_option_at_parent, missing_value, missing_argument,
                                       extra_argument, unknown_sub,          no_sub,        no_spec,
                                       bad_ip };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(run(cases[i][0][0] == 'c' ? &cake : &plain, cases[i]), EXIT_USAGE);
                assert_int_equal(n_calls, 0);
        }
}

static void test_environment_then_options(void **state) {
        const char *no_zone[] = { "plain", "-c", "s.yaml", NULL };
        const char *zone[] = { "plain", "--internal-ip", "10.0.0.1", "--zone", "z2", "-c", "s.yaml", NULL };
        assert_int_equal(setenv("PROTOKUBE_ZONE", "envz", 1), 0);
        assert_int_equal(setenv("PROTOKUBE_INTERNAL_IP", "not-an-address", 1), 0);
        assert_int_equal(run(&plain, zone), 42); /* the options win, and the bad variable is not used */
        assert_string_equal(seen.node.zone, "z2");
        assert_string_equal(seen.node.internal_ip, "10.0.0.1");
        assert_string_equal(seen.spec_path, "s.yaml");
        assert_int_equal(run(&plain, no_zone), EXIT_USAGE); /* the bad variable is used, and refused */
        assert_int_equal(unsetenv("PROTOKUBE_INTERNAL_IP"), 0);
        assert_int_equal(run(&plain, no_zone), 42);
        assert_string_equal(seen.node.zone, "envz");
        assert_int_equal(unsetenv("PROTOKUBE_ZONE"), 0);
}

static void test_help_comes_from_the_tables(void **state) {
        const char *argv[] = { "cake", "eat", "--help", NULL };
        const char *parent[] = { "cake", "-h", NULL };
        char buf[8192];
        assert_int_equal(run_captured(&cake, argv, buf, sizeof(buf)), 0);
        assert_int_equal(n_calls, 0);
        assert_non_null(strstr(buf, "usage: protokube [GLOBAL OPTIONS] cake eat THING [OPTIONS]\n"));
        const CliOption *const tables[] = { cli_common_options, flavour_options, cli_node_options };
        for (size_t t = 0; t < ELEMENTSOF(tables); t++)
                for (const CliOption *o = tables[t]; o->name; o++) {
                        char line[128];
                        snprintf(line, sizeof(line), "--%s%s%s ", o->name, o->arg_name ? " " : "",
                                 o->arg_name ? o->arg_name : "");
                        assert_non_null(strstr(buf, line));
                        assert_non_null(strstr(buf, o->help));
                        if (o->env)
                                assert_non_null(strstr(buf, o->env));
                }
        assert_int_equal(run_captured(&cake, parent, buf, sizeof(buf)), 0);
        assert_non_null(strstr(buf, "  eat "));
        assert_null(strstr(buf, "--flavour"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_options_and_arguments_mix_and_pick_the_sub_verb),
                cmocka_unit_test(test_double_dash_ends_the_options),
                cmocka_unit_test(test_usage_errors_do_not_call_the_verb),
                cmocka_unit_test(test_environment_then_options),
                cmocka_unit_test(test_help_comes_from_the_tables),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
