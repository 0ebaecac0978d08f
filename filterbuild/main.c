/* main.c - filterbuild: subcommand dispatch, global --help and --version */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <getopt.h>

#include "fb.h"
#include "jwt.h"
#include "log.h"
#include "util.h"

struct fb_cmd {
	const char	*name;
	int		(*run)(int argc, char **argv);
	const char	*summary;
};

/* One line per subcommand, in the order --help lists them. */
static const struct fb_cmd fb_cmds[] = {
	{ "keygen",  fb_keygen,  "create an Ed25519 signing key" },
	{ "build",   fb_build,   "build, sign and publish a filter and its table" },
	{ "follow",  fb_follow,  "follow a PostgreSQL source: publish signed deltas" },
	{ "inspect", fb_inspect, "show a filter's header, scopes and staleness" },
	{ "verify",  fb_verify,  "check signature, format and table binding" },
	{ "audit",   fb_audit,   "report the filter version and staleness of revcheckd nodes" },
};

void
fb_err(const char *fmt, ...)
{
	va_list ap;

	fputs("filterbuild: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int
fb_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "filterbuild %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'filterbuild %s --help'.\n", cmd);
	return FB_EXIT_USAGE;
}

int
fb_parse_grace(const char *s, int64_t *out)
{
	if (strcmp(s, "0") == 0)
		*out = 0;
	else if (util_parse_duration(s, out) != 0 ||
	    *out > FB_EXPIRY_GRACE_MAX)
		return -1;
	if (*out < JWT_LEEWAY_MAX)
		fb_err("warning: --expiry-grace %s is shorter than the longest "
		    "token leeway revcheckd allows (%ds): a token whose row "
		    "expired less than its issuer's leeway ago is accepted "
		    "again; keep the grace above every issuer's \"leeway\"",
		    s, JWT_LEEWAY_MAX);
	return 0;
}

int
fb_parse_standby_lag(const char *s, int64_t *out)
{
	if (util_parse_duration(s, out) != 0 || *out < 1 ||
	    *out > FB_STANDBY_LAG_MAX)
		return -1;
	return 0;
}

EVP_PKEY *
fb_load_signer(struct sign_ring *ring, const char *path)
{
	EVP_PKEY *key;
	char err[512];

	if ((key = sign_load_private(path, err, sizeof(err))) == NULL) {
		fb_err("%s", err);
		return NULL;
	}
	if (sign_ring_add_key(ring, key) != 0) {
		fb_err("%s: cannot use the key", path);
		EVP_PKEY_free(key);
		return NULL;
	}
	return key;
}

void
fb_getopt_reset(void)
{
	/* glibc: 0 also reinitializes its internal state. */
	optind = 0;
	opterr = 1;
}

static void
fb_usage(FILE *fp)
{
	size_t i;

	fputs("usage: filterbuild COMMAND [OPTIONS] ...\n\n"
	    "Compiles revocation lists into signed, versioned Bloom filters and\n"
	    "their authoritative tables, and publishes each pair atomically.\n\n"
	    "Commands:\n", fp);
	for (i = 0; i < sizeof(fb_cmds) / sizeof(fb_cmds[0]); i++)
		fprintf(fp, "  %-8s %s\n", fb_cmds[i].name, fb_cmds[i].summary);
	fputs("\nRun 'filterbuild COMMAND --help' for a command's options.\n"
	    "Exit status: 0 success, 1 failure, 2 usage error, 3 build --keep-going\n"
	    "published without an input that failed.\n", fp);
}

int
main(int argc, char **argv)
{
	size_t i;

	log_init("filterbuild", LOG_LVL_INFO);
	if (argc < 2) {
		fb_usage(stderr);
		return FB_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fb_usage(stdout);
		return FB_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("filterbuild %s\n", REVCHECK_VERSION);
		return FB_EXIT_OK;
	}
	for (i = 0; i < sizeof(fb_cmds) / sizeof(fb_cmds[0]); i++)
		if (strcmp(argv[1], fb_cmds[i].name) == 0)
			return fb_cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "filterbuild: unknown command '%s'\n", argv[1]);
	fb_usage(stderr);
	return FB_EXIT_USAGE;
}
