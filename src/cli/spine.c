/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI spine: one parser and one --help for every verb and sub-verb, both built from the option tables
 * that the verb's row names (cli.h), and the checks the row asks for. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "cli/cli.h"

#define OPTION_VAL_BASE 0x100 /* getopt's val for row k: above every short option character */
#define OPTIONS_MAX     64
#define NAME_MAX_LEN    64

typedef struct OptionSet {
        const CliOption *tables[3];
        size_t n_tables;
        const CliOption *rows[OPTIONS_MAX];
        char sources[OPTIONS_MAX][NAME_MAX_LEN]; /* "--zone": lives as long as the verb runs */
        size_t n_rows;
} OptionSet;

/* The tables a verb accepts, in the order its help lists them. */
static void option_set_init(OptionSet *s, const CliVerb *verb) {
        *s = (OptionSet){};
        s->tables[s->n_tables++] = cli_common_options;
        if (verb->options)
                s->tables[s->n_tables++] = verb->options;
        if (verb->flags & CLI_NODE_OPTIONS)
                s->tables[s->n_tables++] = cli_node_options;
        for (size_t t = 0; t < s->n_tables; t++)
                for (const CliOption *o = s->tables[t]; o->name && s->n_rows < OPTIONS_MAX; o++) {
                        snprintf(s->sources[s->n_rows], NAME_MAX_LEN, "--%s", o->name);
                        s->rows[s->n_rows++] = o;
                }
}

/* The getopt_long() arguments for the rows: longopts[k].val is OPTION_VAL_BASE + k. optstring starts with
 * "-" (positional arguments come back in order, as if options of value 1, whatever POSIXLY_CORRECT says)
 * and ":" (a missing argument is told apart from an unknown option). */
static void option_set_getopt(const OptionSet *s, struct option *longopts, char *optstring, size_t size) {
        size_t n = 0;
        optstring[n++] = '-';
        optstring[n++] = ':';
        for (size_t k = 0; k < s->n_rows; k++) {
                const CliOption *o = s->rows[k];
                longopts[k] = (struct option){ o->name, o->arg_name ? required_argument : no_argument, NULL,
                                               OPTION_VAL_BASE + (int)k };
                if (o->short_name && n + 3 < size) {
                        optstring[n++] = o->short_name;
                        if (o->arg_name)
                                optstring[n++] = ':';
                }
        }
        longopts[s->n_rows] = (struct option){};
        optstring[n] = 0;
}

/* The row index of getopt's answer c, or -1. */
static ssize_t option_set_find(const OptionSet *s, int c) {
        if (c >= OPTION_VAL_BASE && (size_t)(c - OPTION_VAL_BASE) < s->n_rows)
                return c - OPTION_VAL_BASE;
        for (size_t k = 0; k < s->n_rows; k++)
                if (s->rows[k]->short_name && s->rows[k]->short_name == c)
                        return (ssize_t)k;
        return -1;
}

static int option_error(const CliContext *ctx, int c, char **argv) {
        const char *what = argv[optind - 1];
        char shortname[3] = { '-', (char)optopt, 0 };
        char see[2 * NAME_MAX_LEN];
        /* in a bundle ("-xc"), argv[optind - 1] is the whole bundle: name the letter */
        if (optopt > 0 && optopt < OPTION_VAL_BASE)
                what = shortname;
        snprintf(see, sizeof(see), "protokube %s%s--help", ctx->name, isempty(ctx->name) ? "" : " ");
        if (c == ':')
                return cli_usage_error(ctx->name, "option '%s' needs an argument (see '%s')", what, see);
        return cli_usage_error(ctx->name, "unknown option '%s' (see '%s')", what, see);
}

/* Parses argv[1..] with the verb's tables. For a verb (args != NULL), options and positional arguments mix
 * and the positional ones go to args (room for argc); for the global options (args == NULL), parsing stops
 * at the verb. Returns the index of the first argument not parsed, or -1 after printing a usage error.
 * Stops at --help (ctx->help). */
static int parse_options(OptionSet *s, int argc, char **argv, CliContext *ctx, char **args) {
        struct option longopts[OPTIONS_MAX + 1];
        char optstring[2 * OPTIONS_MAX + 3];
        size_t n_args = 0;

        option_set_getopt(s, longopts, optstring, sizeof(optstring));
        if (!args)
                optstring[0] = '+';
        optind = 0; /* full reinitialisation of getopt for this argv */
        opterr = 0;
        for (;;) {
                int c = getopt_long(argc, argv, optstring, longopts, NULL);
                if (c < 0)
                        break;
                if (c == 1) {
                        args[n_args++] = optarg;
                        continue;
                }
                ssize_t k = c == '?' || c == ':' ? -1 : option_set_find(s, c);
                if (k < 0)
                        return option_error(ctx, c, argv), -1;
                if (s->rows[k]->parse(s->rows[k], ctx, optarg, s->sources[k]) < 0)
                        return -1;
                if (ctx->help)
                        return optind;
        }
        if (!args)
                return optind;
        for (; optind < argc; optind++) /* after "--" */
                args[n_args++] = argv[optind];
        args[n_args] = NULL;
        return optind;
}

int cli_parse_global_options(const CliVerb *global, int argc, char **argv, CliContext *ctx) {
        static OptionSet s; /* its sources live as long as the program */
        ctx->name = "";
        option_set_init(&s, global);
        int r = parse_options(&s, argc, argv, ctx, NULL);
        ctx->name = NULL;
        return r;
}

/* Whether the option `arg` ("--zone", "--zone=z1", "-c") takes a value in the verb or one of its sub-verbs:
 * 1 yes, 0 no, -1 no such option. */
static int option_takes_value(const CliVerb *verb, const char *arg) {
        OptionSet s;
        size_t len = strcspn(arg, "=");
        option_set_init(&s, verb);
        for (size_t k = 0; k < s.n_rows; k++) {
                const CliOption *o = s.rows[k];
                if (arg[1] != '-' ? arg[1] == o->short_name
                                  : strlen(o->name) == len - 2 && strneq(arg + 2, o->name, len - 2))
                        return o->arg_name && arg[len] != '=' && (arg[1] == '-' || arg[2] == 0);
        }
        for (const CliVerb *v = verb->sub_verbs; v && v->name; v++) {
                int r = option_takes_value(v, arg);
                if (r >= 0)
                        return r;
        }
        return -1;
}

/* The index in argv of the sub-verb's name: the first positional argument. It decides which options are
 * accepted, so this scan must know which options take a value: those of the verb and of all its
 * sub-verbs. -1 if there is none, or an unknown option comes first (the verb's parser then reports it). */
static int first_positional(const CliVerb *verb, int argc, char **argv) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (streq(a, "--"))
                        return i + 1 < argc ? i + 1 : -1;
                if (a[0] != '-' || a[1] == 0)
                        return i;
                int r = option_takes_value(verb, a);
                if (r < 0)
                        return -1;
                if (r > 0)
                        i++;
        }
        return -1;
}

static void verb_help(const CliVerb *verb, const CliContext *ctx) {
        OptionSet s;
        option_set_init(&s, verb);
        printf("usage: protokube [GLOBAL OPTIONS] %s", ctx->name);
        if (verb->sub_verbs)
                fputs(verb->run ? " [COMMAND]" : " COMMAND", stdout);
        if (verb->args_synopsis)
                printf(" %s", verb->args_synopsis);
        printf(" [OPTIONS]\n\n%s\n\n", verb->help);
        if (verb->sub_verbs) {
                printf("commands ('protokube %s COMMAND --help' for theirs):\n", ctx->name);
                for (const CliVerb *v = verb->sub_verbs; v->name; v++)
                        printf("  %-14s %s\n", v->name, v->help);
                printf("\n");
        }
        cli_options_help(s.tables, s.n_tables, stdout);
        if (verb->flags & CLI_NEEDS_SPEC)
                printf("\nneeds the cluster spec: -c FILE or PROTOKUBE_CONFIG\n");
        if (verb->flags & CLI_NEEDS_ROOT)
                printf("\nneeds root\n");
}

static int check_ip(const CliContext *ctx, const char *source, const char *value) {
        if (!value || in_addr_literal_valid(value))
                return 0;
        return cli_usage_error(ctx->name, "invalid %s '%s' (expected one IPv4 or IPv6 address, no spaces)",
                               source, value);
}

/* An address enters here (option or environment): it is one IP literal or the verb fails, so that nothing
 * downstream (pool records, DNS) ever holds "192.0.2.11 " or "10.0.0.1,10.0.0.2". */
static int check_node_options(CliContext *ctx) {
        if (check_ip(ctx, ctx->internal_ip_source ?: "--internal-ip", ctx->node.internal_ip) != 0 ||
            check_ip(ctx, ctx->external_ip_source ?: "--external-ip", ctx->node.external_ip) != 0)
                return EXIT_USAGE;
        if (ctx->interval_text &&
            (parse_duration_usec(ctx->interval_text, &ctx->interval) < 0 || ctx->interval == 0))
                return cli_usage_error(ctx->name, "invalid %s '%s' (expected e.g. 10s, 500ms)",
                                       ctx->interval_source, ctx->interval_text);
        return 0;
}

/* What the row asks for, once the options are known. */
static int check_verb(const CliVerb *verb, CliContext *ctx, char **args) {
        size_t n = 0;
        while (args[n])
                n++;
        if ((verb->flags & CLI_NODE_OPTIONS) && check_node_options(ctx) != 0)
                return EXIT_USAGE;
        /* the spec first: without one, no argument would make the verb work */
        if ((verb->flags & CLI_NEEDS_SPEC) && !ctx->spec_path)
                return cli_usage_error(ctx->name,
                                       "no cluster spec given: use -c FILE or set PROTOKUBE_CONFIG");
        if (n > verb->max_args)
                return cli_usage_error(ctx->name, "unexpected argument '%s'", args[verb->max_args]);
        if (n < verb->min_args)
                return cli_usage_error(ctx->name, "missing argument: %s", verb->args_synopsis);
        if ((verb->flags & CLI_NEEDS_ROOT) && geteuid() != 0)
                return cli_usage_error(ctx->name,
                                       "must run as root (it claims, formats and mounts volumes)");
        return 0;
}

static int run_sub_verb(const CliVerb *verb, int argc, char **argv, int at, CliContext *ctx) {
        const CliVerb *sub = NULL;
        for (const CliVerb *v = verb->sub_verbs; v->name && !sub; v++)
                if (streq(v->name, argv[at]))
                        sub = v;
        if (!sub) {
                fprintf(stderr, "protokube %s: unknown command '%s' (expected:", ctx->name, argv[at]);
                for (const CliVerb *v = verb->sub_verbs; v->name; v++)
                        fprintf(stderr, " %s", v->name);
                fprintf(stderr, ")\n");
                return EXIT_USAGE;
        }
        static char name[2 * NAME_MAX_LEN];
        snprintf(name, sizeof(name), "%s %s", ctx->name, sub->name);
        ctx->name = name;
        /* the sub-verb's argv: its name first, then everything else in order */
        memmove(argv + 2, argv + 1, sizeof(char *) * (size_t)(at - 1));
        argv[1] = argv[0];
        return cli_run_verb(sub, argc - 1, argv + 1, ctx);
}

int cli_run_verb(const CliVerb *verb, int argc, char **argv, CliContext *ctx) {
        _cleanup_free_ char **args = NULL;
        OptionSet s;
        int r;

        if (!ctx->name)
                ctx->name = verb->name;
        if (verb->sub_verbs) {
                int at = first_positional(verb, argc, argv);
                if (at > 0 && !(verb->run && verb->max_args > 0))
                        return run_sub_verb(verb, argc, argv, at, ctx);
        }
        option_set_init(&s, verb);
        if (verb->flags & CLI_NODE_OPTIONS && cli_options_from_environment(cli_node_options, ctx) < 0)
                return EXIT_USAGE;
        if (cli_options_from_environment(verb->options, ctx) < 0)
                return EXIT_USAGE;
        args = new0(char *, (size_t)argc + 1);
        if (!args)
                return EXIT_ERROR;
        if (parse_options(&s, argc, argv, ctx, args) < 0)
                return EXIT_USAGE;
        if (ctx->help) {
                verb_help(verb, ctx);
                return EXIT_SUCCESS;
        }
        if (!verb->run) {
                fprintf(stderr, "protokube %s: needs a command:", ctx->name);
                for (const CliVerb *v = verb->sub_verbs; v->name; v++)
                        fprintf(stderr, " %s", v->name);
                fprintf(stderr, " (see 'protokube %s --help')\n", ctx->name);
                return EXIT_USAGE;
        }
        r = check_verb(verb, ctx, args);
        if (r != 0)
                return r;
        return verb->run(ctx, args);
}
