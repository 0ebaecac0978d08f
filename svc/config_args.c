/* config_args.c - command-line flags: the two getopt passes, defaults filled last, --help */
#include <assert.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_opt.h"

enum {
	F_CONFIG = 'c', F_HELP = 'h', F_VERSION = 'V',
	F_CHECK = 1000, F_BASE = 1100,
};

/* The flag of a key: its '_' become '-'. */
static void
flag_name(const char *key, char *out, size_t outlen)
{
	size_t i;

	assert(outlen > 0);
	for (i = 0; key[i] != '\0' && i < outlen - 1; i++)
		out[i] = key[i] == '_' ? '-' : key[i];
	out[i] = '\0';
}

static void
build_longopts(struct option *lo, char names[][32])
{
	size_t i, n = 0;

	for (i = 0; i < config_nopts; i++) {
		flag_name(config_opts[i].key, names[i], sizeof(names[i]));
		lo[n].name = names[i];
		lo[n].has_arg = config_opts[i].type == OPT_BOOL ?
		    optional_argument : required_argument;
		lo[n].flag = NULL;
		lo[n].val = F_BASE + (int)i;
		n++;
	}
	lo[n++] = (struct option){ "config", required_argument, NULL, F_CONFIG };
	lo[n++] = (struct option){ "check-config", no_argument, NULL, F_CHECK };
	lo[n++] = (struct option){ "version", no_argument, NULL, F_VERSION };
	lo[n++] = (struct option){ "help", no_argument, NULL, F_HELP };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
}

/*
 * A boolean flag's value: after '=' (--fast-path=false), or as the next
 * word when that is true or false (--fast-path false, the form --help
 * shows), which is then consumed; a bare flag is true (NULL). getopt
 * only ever hands an optional argument over in the first form.
 */
static const char *
flag_value(const struct config_opt *o, int argc, char **argv)
{
	if (o->type != OPT_BOOL || optarg != NULL || optind >= argc ||
	    argv[optind] == NULL)
		return optarg;
	if (strcmp(argv[optind], "true") == 0 ||
	    strcmp(argv[optind], "false") == 0)
		return argv[optind++];
	return NULL;
}

/*
 * A connect timeout nobody set fits inside its total: upstream_timeout
 * 1s alone means a 1s connect timeout, not a refusal. One set
 * explicitly is left for config_validate() to judge.
 */
static void
fit_connect(struct config *c, const char *key, int64_t *conn, int64_t total)
{
	const struct config_opt *o = config_find_opt(key);

	assert(o != NULL);
	if ((c->keys_set & CONFIG_KEY_BIT(o)) == 0 && *conn > total)
		*conn = total;
}

static int
fill_defaults(struct config *c, char *err, size_t errlen)
{
	const struct config_opt *o;
	char **sp;

	fit_connect(c, "upstream_connect_timeout",
	    &c->upstream_connect_timeout, c->upstream_timeout);
	fit_connect(c, "sync_connect_timeout", &c->sync_connect_timeout,
	    c->sync_timeout);
	for (o = config_opts; o < config_opts + config_nopts; o++) {
		if (o->def == NULL || o->type != OPT_STR)
			continue;
		sp = (char **)((char *)c + o->off);
		if (*sp == NULL && (*sp = strdup(o->def)) == NULL) {
			snprintf(err, errlen, "%s: out of memory", o->key);
			return -1;
		}
	}
	return 0;
}

/*
 * Pass 1: the file (*cfile) and the actions; every other flag waits for
 * pass 2. Returns 0, or -1 with err and c->usage_error for a flag that
 * is unknown or lacks its value, or a stray argument.
 */
static int
scan_actions(struct config *c, int argc, char **argv,
    const struct option *lo, const char **cfile, char *err, size_t errlen)
{
	int ch, idx;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:hV", lo, &idx)) != -1) {
		switch (ch) {
		case F_CONFIG:
			*cfile = optarg;
			break;
		case F_CHECK:
			c->action = CONFIG_CHECK;
			break;
		case F_VERSION:
			if (c->action == CONFIG_RUN)
				c->action = CONFIG_VERSION;
			break;
		case F_HELP:
			c->action = CONFIG_HELP;
			break;
		case '?':
		case ':':
			if (optopt != 0)
				snprintf(err, errlen, "bad or incomplete "
				    "option -%c", optopt);
			else
				snprintf(err, errlen, "unknown or incomplete "
				    "option \"%.64s\"", argv[optind - 1]);
			c->usage_error = true;
			return -1;
		default:
			/* A boolean's separate value is no stray argument. */
			if (ch >= F_BASE && ch < F_BASE + (int)config_nopts)
				(void)flag_value(&config_opts[ch - F_BASE],
				    argc, argv);
			break;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument \"%.64s\"",
		    argv[optind]);
		c->usage_error = true;
		return -1;
	}
	return 0;
}

int
config_from_args(struct config *c, int argc, char **argv, char *err,
    size_t errlen)
{
	struct option lo[CONFIG_OPTS_MAX + 5];
	char names[CONFIG_OPTS_MAX][32];
	char e[512];
	const char *cfile = NULL;
	bool cli_keys = false;
	int ch, idx;

	build_longopts(lo, names);
	if (scan_actions(c, argc, argv, lo, &cfile, err, errlen) == -1)
		return -1;
	if (c->action == CONFIG_HELP || c->action == CONFIG_VERSION)
		return 0;
	if (cfile != NULL) {
		if ((c->config_file = strdup(cfile)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (config_load_file(c, cfile, err, errlen) == -1)
			return -1;
	}

	/* Pass 2: flags override the file. */
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:hV", lo, &idx)) != -1) {
		if (ch < F_BASE || ch >= F_BASE + (int)config_nopts)
			continue;
		const struct config_opt *o = &config_opts[ch - F_BASE];
		if (o->type == OPT_KEYS && !cli_keys) {
			config_clear_keys(c);
			cli_keys = true;
		}
		if (config_set_opt(c, o, flag_value(o, argc, argv), e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "--%s: %s", names[ch - F_BASE],
			    e);
			c->usage_error = true;
			return -1;
		}
	}
	return fill_defaults(c, err, errlen);
}
/* Prints "  --flag ARG", then help from column 28, then (default). */
static void
usage_opt(FILE *fp, const struct config_opt *o)
{
	char flag[32];
	const char *h, *nl;
	int n;

	flag_name(o->key, flag, sizeof(flag));
	n = fprintf(fp, "  --%s%s%s", flag, o->arg != NULL ? " " : "",
	    o->arg != NULL ? o->arg : "");
	if (n > 26)
		fprintf(fp, "\n%27s", "");
	else
		fprintf(fp, "%*s", 27 - (n > 0 ? n : 0), "");
	for (h = o->help; (nl = strchr(h, '\n')) != NULL; h = nl + 1)
		fprintf(fp, "%.*s\n%27s", (int)(nl - h), h, "");
	fprintf(fp, "%s", h);
	if (o->def != NULL)
		fprintf(fp, " (%s)", o->def);
	fputc('\n', fp);
}

void
config_usage(FILE *fp)
{
	size_t i;

	fputs(
"usage: revcheckd [-c FILE] [--listen HOST:PORT] [--filter-dir DIR]\n"
"                 [--trusted-key PUB.pem]... [--state-dir DIR] [--max-age D]\n"
"                 [--check-config] [--version] [--help] [options]\n"
"\n"
"  -c, --config FILE        JSON config file (comments allowed)\n", fp);
	for (i = 0; i < config_nopts; i++)
		usage_opt(fp, &config_opts[i]);
	fputs(
"  --check-config           validate the configuration and exit\n"
"  --version                print the version and exit\n"
"  --help                   print this help and exit\n"
"\n"
"Durations are seconds or N followed by s, m, h or d.\n", fp);
}
