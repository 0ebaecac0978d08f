/* build.c - filterbuild build: inputs to a signed filter and table, published atomically */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "bloom.h"
#include "crl.h"
#include "fb.h"
#include "fetch.h"
#include "ffile.h"
#include "input.h"
#include "pair.h"
#include "pgsrc.h"
#include "publish.h"
#include "sign.h"
#include "table.h"
#include "util.h"

#define BUILD_MAX_ISSUERS	256
#define BUILD_MAX_KEEP		10000
#define BUILD_MAX_DELEGATES	256

/* Long options without a one-letter code (above any char). */
enum {
	OPT_ALLOW_SHRINK = 256,
	OPT_MAX_SHRINK,
	OPT_CACHE_DIR,
	OPT_FETCH_MAX_SIZE,
	OPT_FETCH_TIMEOUT,
	OPT_FETCH_CA,
	OPT_UNVERIFIED_CRL,
	OPT_ALLOW_WEAK_SIG,
	OPT_NO_DELTA,
	OPT_CLOCK_SKEW,
	OPT_CRL_VALIDITY,
	OPT_ALLOW_ROLLBACK,
	OPT_KEEP_GOING,
	OPT_REPORT,
	OPT_EXPIRY_GRACE,
	OPT_TRUSTED_KEY,
	OPT_DELEGATE,
	OPT_STANDBY_MAX_LAG,
	OPT_SUBSCRIBER_MAX_LAG,
	OPT_ISSUED,
	OPT_ISSUED_CUTOFF,
};

struct build_opts {
	const char	*key;
	const char	*out;
	double		 fp_rate;
	int64_t		 valid_for;
	uint64_t	 version;	/* 0: current + 1 */
	const char	*scope;
	enum input_format format;
	enum bloom_layout layout;	/* 0: auto, chosen once n is known */
	const char	*issuers[BUILD_MAX_ISSUERS];
	size_t		 nissuers;
	/* --delegate CA.pem=CRLISSUER.pem statements, as given. */
	const char	*delegates[BUILD_MAX_DELEGATES];
	size_t		 ndelegates;
	/* Public keys that may have signed the current version (rotation). */
	const char	*trusted[SIGN_RING_MAX - 1];
	size_t		 ntrusted;
	bool		 allow_expired;
	bool		 allow_shrink;
	unsigned	 max_shrink;	/* percent */
	bool		 unverified_crl;
	bool		 allow_weak_sig;
	bool		 no_delta;
	bool		 allow_rollback;
	bool		 keep_going;
	const char	*report;	/* JSON report path, or NULL */
	const struct ffile_info *enforced;	/* fb_build_source's */
	int64_t		 clock_skew;
	int64_t		 crl_validity;	/* 0: a CRL without nextUpdate fails */
	unsigned	 keep;
	int64_t		 expiry_grace;	/* --source rows kept past expires_at */
	bool		 quiet;
	const char	*source;	/* postgresql:// connection, or NULL */
	bool		 source_only;	/* --source and no INPUT */
	const char	*query;		/* NULL: PGSRC_DEFAULT_QUERY */
	int64_t		 standby_max_lag; /* seconds; 0: a standby is refused */
	int64_t		 subscriber_max_lag; /* seconds; 0: a subscriber is refused */
	struct fetch_opts fetch;	/* http(s) inputs */
	/* --issued files and --issued-cutoff (0: per scope) */
	const char	*issued[ISSUED_MAX_FILES];
	size_t		 nissued;
	int64_t		 issued_cutoff;
};

/* Progress on stderr, only for a terminal and without --quiet. */
struct progress {
	bool		 on;
	double		 start;
	double		 last;
};

static void
build_usage(FILE *fp)
{
	fputs("usage: filterbuild build --key KEY.pem --out DIR [options] INPUT...\n"
	    "       filterbuild build --key KEY.pem --out DIR --source URL [options] [INPUT...]\n"
	    "\n"
	    "Reads revocation lists, builds a Bloom filter and its authoritative\n"
	    "table, signs the filter and publishes the pair in DIR as a new\n"
	    "version (DIR/vNNN/{filter.rcf,table.rct}, DIR/current switched last).\n"
	    "INPUT is a text list (one id per line, '#' comments), a JSON array\n"
	    "(strings or {\"id\", \"scope\", \"revoked_at\", \"reason\"} objects), or\n"
	    "an X.509 CRL in PEM or DER; '-' is standard input; an http:// or\n"
	    "https:// URL is fetched (conditional GET over --cache-dir). Duplicates\n"
	    "collapse.\n"
	    "\n"
	    "  --key KEY.pem        Ed25519 signing key (filterbuild keygen)\n"
	    "  --out DIR            output directory (created if missing)\n"
	    "  --fp-rate P          target false-positive rate (default 0.001)\n"
	    "  --valid-for DUR      validity: N with s, m, h or d (default 1h);\n"
	    "                       never past the earliest CRL nextUpdate\n"
	    "  --version N          filter version; must be above the current one\n"
	    "                       (default: current + 1)\n"
	    "  --scope NAME         scope of text and JSON ids (default \"default\")\n"
	    "  --format F           auto, text, json or crl (default auto)\n"
	    "  --issuer CA.pem      verify CRLs against this issuer (repeatable); a\n"
	    "                       CRL signer that is not its CA needs its chain\n"
	    "                       (to a self-signed --issuer) and its issuer's CRL\n"
	    "  --delegate CA.pem=CRLISSUER.pem\n"
	    "                       CA has the revocation of all its certificates\n"
	    "                       published in CRLISSUER's indirect CRLs, so those\n"
	    "                       cover CA's scope for bare serials too (without\n"
	    "                       it they cover only certificates naming\n"
	    "                       CRLISSUER as cRLIssuer); repeatable\n"
	    "  --unverified-crl     use a CRL that no --issuer certificate verifies\n"
	    "                       (logged, and marked unverified in the filter)\n"
	    "  --allow-weak-crl-sig accept CRLs signed with MD2, MD4, MD5 or SHA-1\n"
	    "  --no-delta           use a base CRL that announces a delta CRL alone\n"
	    "  --clock-skew DUR     a CRL's thisUpdate may be this far ahead (5m)\n"
	    "  --crl-validity DUR   use a CRL without nextUpdate until its\n"
	    "                       thisUpdate + DUR (refused without this)\n"
	    "  --allow-crl-rollback publish a CRL older (lower CRL number) than the\n"
	    "                       one the current version used for its issuer\n"
	    "  --keep-going         skip a bad input instead of failing; a CRL scope\n"
	    "                       it leaves uncovered keeps the current version's\n"
	    "                       entries until that CRL's nextUpdate; exit 3\n"
	    "  --report FILE        write a JSON report of every input and outcome\n"
	    "  --trusted-key PUB.pem the current version may be signed by this key\n"
	    "                       too (repeatable; after a key rotation): it is\n"
	    "                       compared with, and kept from, only when its\n"
	    "                       signature verifies against --key or one of these\n"
	    "  --allow-expired      a CRL past nextUpdate only warns\n"
	    "  --allow-shrink       publish an empty list, a version without a scope\n"
	    "                       of the current one, or a scope that shrank by more\n"
	    "                       than --max-shrink (each is refused otherwise)\n"
	    "  --max-shrink PCT     share of a scope's keys a version may drop\n"
	    "                       against the current one (default 50)\n"
	    "  --keep N             versions kept in DIR (default 3)\n"
	    "  --issued FILE        the issued set of exact scopes (repeatable):\n"
	    "                       certificates (PEM or DER: each joins its\n"
	    "                       issuer's scope) or an id list (text or JSON,\n"
	    "                       ids of --scope); a scope with its issued set\n"
	    "                       is answered exactly (see filterbuild(1))\n"
	    "  --issued-cutoff TIME the time (RFC 3339 or Unix seconds) up to\n"
	    "                       which the issued set lists every id; needed\n"
	    "                       for id lists (default for certificates: the\n"
	    "                       newest notBefore listed in the scope)\n"
	    "  --layout L           auto (default), blocked (one cache line per key),\n"
	    "                       classic, or fuse (binary fuse filter with w-bit\n"
	    "                       fingerprints, w = ceil(log2(1/fp-rate)) in 4..16:\n"
	    "                       FP rate 2^-w in about 1.125 w bits per key; needs\n"
	    "                       --fp-rate >= 2^-16). auto picks fuse when it can meet\n"
	    "                       --fp-rate in no more memory than blocked, else blocked\n"
	    "  --source URL         also read a PostgreSQL source ('postgresql://...'\n"
	    "                       or a libpq connection string) in one REPEATABLE\n"
	    "                       READ transaction (config/postgresql-schema.sql)\n"
	    "  --query SQL          the source's query (default: " PGSRC_DEFAULT_QUERY ");\n"
	    "                       columns by name: id, and optionally scope,\n"
	    "                       revoked_at, reason, expires_at\n"
	    "  --standby-max-lag DUR\n"
	    "                       the source may be a standby (hot standby) shown\n"
	    "                       to be at most DUR behind its sender; the filter\n"
	    "                       is dated that far back (default: a standby is\n"
	    "                       refused; see filterbuild(1))\n"
	    "  --subscriber-max-lag DUR\n"
	    "                       the source's tables may be fed by a logical\n"
	    "                       replication subscription whose apply worker is\n"
	    "                       shown to be at most DUR behind its publisher; the\n"
	    "                       filter is dated that far back (default: such a\n"
	    "                       subscriber is refused; see filterbuild(1))\n"
	    "  --expiry-grace DUR   keep a source row this long past its expires_at\n"
	    "                       (default 10m: more than any verifier's leeway plus\n"
	    "                       the clock difference between hosts)\n"
	    "  --cache-dir DIR      cache of URL inputs (default: $CACHE_DIRECTORY,\n"
	    "                       else $XDG_CACHE_HOME/revcheck, else\n"
	    "                       ~/.cache/revcheck); must not be group/other-writable\n"
	    "  --fetch-max-size N   largest URL input in bytes (default 67108864)\n"
	    "  --fetch-timeout DUR  time for one URL input (default 60s)\n"
	    "  --fetch-ca FILE      CA certificates for https inputs (default: the\n"
	    "                       system's)\n"
	    "  --quiet              no progress or summary\n"
	    "  --help               this text\n"
	    "\n"
	    "On any error DIR is left exactly as it was.\n", fp);
}

static void
progress_phase(struct progress *p, const char *phase)
{
	if (!p->on)
		return;
	fprintf(stderr, "\r\033[Kfilterbuild: %s (%.1f s)", phase,
	    util_monotime() - p->start);
	fflush(stderr);
}

static void
progress_keys(void *arg, uint64_t n)
{
	struct progress *p = arg;
	double now = util_monotime(), el;

	if (!p->on || now - p->last < 0.2)
		return;
	p->last = now;
	el = now - p->start;
	fprintf(stderr, "\r\033[Kfilterbuild: reading: %" PRIu64 " keys, "
	    "%.0f keys/s", n, el > 0 ? (double)n / el : 0.0);
	fflush(stderr);
}

/* pair_build()'s phase callback. */
static void
build_phase(void *arg, const char *step)
{
	progress_phase(arg, step);
}

static void
progress_done(struct progress *p)
{
	if (p->on)
		fputs("\r\033[K", stderr);
}

/* What a build_opt_*() group returns for an option it does not own. */
#define BUILD_OPT_OTHER	1

/* The names --format or --layout takes, and their values. */
struct build_names {
	const char	*opt;
	const char	*want;		/* the names, for a message */
	const char	*name[5];	/* NULL-terminated */
	int		 value[4];
};

static const struct build_names build_formats = {
	"--format", "auto, text, json or crl",
	{ "auto", "text", "json", "crl", NULL },
	{ INPUT_AUTO, INPUT_TEXT, INPUT_JSON, INPUT_CRL },
};

static const struct build_names build_layouts = {
	"--layout", "auto, blocked, classic or fuse",
	{ "auto", "classic", "blocked", "fuse", NULL },
	{ 0, BLOOM_CLASSIC, BLOOM_BLOCKED, BLOOM_FUSE },
};

/* *value of the name arg among n's. 0, or FB_EXIT_USAGE after a message. */
static int
build_pick(const struct build_names *n, const char *arg, int *value)
{
	size_t i;

	for (i = 0; n->name[i] != NULL; i++)
		if (strcmp(n->name[i], arg) == 0) {
			*value = n->value[i];
			return 0;
		}
	return fb_usage_err("build", "%s '%s': want %s", n->opt, arg, n->want);
}

/*
 * A duration option's value (optarg) into *out, from min to max. 0, or
 * FB_EXIT_USAGE after a message: "OPT 'VALUE': want WANT".
 */
static int
build_opt_duration(const char *opt, int64_t min, int64_t max,
    const char *want, int64_t *out)
{
	if (util_parse_duration(optarg, out) != 0 || *out < min || *out > max)
		return fb_usage_err("build", "%s '%s': want %s", opt, optarg,
		    want);
	return 0;
}

/* A --standby-max-lag or --subscriber-max-lag value. 0, or FB_EXIT_USAGE. */
static int
build_opt_lag(const char *opt, int64_t *out)
{
	if (fb_parse_standby_lag(optarg, out) != 0)
		return fb_usage_err("build", "%s '%s': want a duration from 1s "
		    "to 1d", opt, optarg);
	return 0;
}

/* Every option at its default (build_usage says which). */
static void
build_defaults(struct build_opts *o)
{
	memset(o, 0, sizeof(*o));
	fetch_opts_init(&o->fetch);
	o->fp_rate = 0.001;
	o->valid_for = 3600;
	o->scope = REVKEY_DEFAULT_SCOPE;
	o->format = INPUT_AUTO;
	o->layout = 0;
	o->keep = 3;
	o->max_shrink = 50;
	o->expiry_grace = FB_EXPIRY_GRACE_DEFAULT;
	o->clock_skew = 300;
}

/*
 * The options that shape the filter and where it goes: --fp-rate,
 * --valid-for, --version, --scope, --format, --layout, --keep, --key,
 * --out, --quiet. 0, FB_EXIT_USAGE after a message, or BUILD_OPT_OTHER.
 */
static int
build_opt_filter(struct build_opts *o, int c)
{
	uint64_t u;
	int v = 0, rc;

	switch (c) {
	case 'p':
		if (util_parse_double(optarg, &o->fp_rate) != 0 ||
		    !(o->fp_rate > 0.0 && o->fp_rate < 1.0))
			return fb_usage_err("build", "--fp-rate '%s': "
			    "want a number in (0, 1)", optarg);
		break;
	case 'v':
		return build_opt_duration("--valid-for", INT64_MIN, INT64_MAX,
		    "a duration such as 90s, 15m, 1h or 7d", &o->valid_for);
	case 'V':
		if (util_parse_u64(optarg, UINT64_MAX, &o->version) != 0 ||
		    o->version == 0)
			return fb_usage_err("build", "--version '%s': "
			    "want an integer of at least 1", optarg);
		break;
	case 's':
		if (!revkey_scope_valid(optarg, strlen(optarg)))
			return fb_usage_err("build", "--scope '%s': not a "
			    "valid scope name", optarg);
		o->scope = optarg;
		break;
	case 'K':
		if (util_parse_u64(optarg, BUILD_MAX_KEEP, &u) != 0 ||
		    u == 0)
			return fb_usage_err("build", "--keep '%s': want an "
			    "integer in 1..%d", optarg, BUILD_MAX_KEEP);
		o->keep = (unsigned)u;
		break;
	case 'f':
	case 'L':
		if ((rc = build_pick(c == 'f' ? &build_formats :
		    &build_layouts, optarg, &v)) != 0)
			return rc;
		if (c == 'f')
			o->format = (enum input_format)v;
		else
			o->layout = (enum bloom_layout)v;
		break;
	case 'k': o->key = optarg; break;
	case 'o': o->out = optarg; break;
	case 'q': o->quiet = o->fetch.quiet = true; break;
	default: return BUILD_OPT_OTHER;
	}
	return 0;
}

/*
 * The options that judge the CRLs and the comparison with the current
 * version: --issuer, --delegate, --trusted-key, --unverified-crl,
 * --allow-*, --no-delta, --clock-skew, --crl-validity, --max-shrink,
 * --keep-going, --report. 0, FB_EXIT_USAGE after a message, or
 * BUILD_OPT_OTHER.
 */
static int
build_opt_checks(struct build_opts *o, int c)
{
	uint64_t u;

	switch (c) {
	case 'i':
		if (o->nissuers == BUILD_MAX_ISSUERS)
			return fb_usage_err("build", "more than %d "
			    "--issuer options", BUILD_MAX_ISSUERS);
		o->issuers[o->nissuers++] = optarg;
		break;
	case OPT_DELEGATE:
		if (o->ndelegates == BUILD_MAX_DELEGATES)
			return fb_usage_err("build", "more than %d "
			    "--delegate options", BUILD_MAX_DELEGATES);
		if (strchr(optarg, '=') == NULL)
			return fb_usage_err("build", "--delegate '%s': "
			    "want CA.pem=CRLISSUER.pem", optarg);
		o->delegates[o->ndelegates++] = optarg;
		break;
	case OPT_TRUSTED_KEY:
		if (o->ntrusted == sizeof(o->trusted) /
		    sizeof(o->trusted[0]))
			return fb_usage_err("build", "more than %zu "
			    "--trusted-key options",
			    sizeof(o->trusted) / sizeof(o->trusted[0]));
		o->trusted[o->ntrusted++] = optarg;
		break;
	case 'x': o->allow_expired = true; break;
	case OPT_ALLOW_SHRINK: o->allow_shrink = true; break;
	case OPT_UNVERIFIED_CRL: o->unverified_crl = true; break;
	case OPT_ALLOW_WEAK_SIG: o->allow_weak_sig = true; break;
	case OPT_NO_DELTA: o->no_delta = true; break;
	case OPT_ALLOW_ROLLBACK: o->allow_rollback = true; break;
	case OPT_KEEP_GOING: o->keep_going = true; break;
	case OPT_REPORT: o->report = optarg; break;
	case OPT_CLOCK_SKEW:
		return build_opt_duration("--clock-skew", INT64_MIN, INT64_MAX,
		    "a duration such as 90s or 5m", &o->clock_skew);
	case OPT_CRL_VALIDITY:
		return build_opt_duration("--crl-validity", 1, INT64_MAX,
		    "a duration such as 1d", &o->crl_validity);
	case OPT_MAX_SHRINK:
		if (util_parse_u64(optarg, 100, &u) != 0)
			return fb_usage_err("build", "--max-shrink '%s': "
			    "want a percentage in 0..100", optarg);
		o->max_shrink = (unsigned)u;
		break;
	default: return BUILD_OPT_OTHER;
	}
	return 0;
}

/*
 * The options of the --source database and of URL inputs: --source,
 * --query, --standby-max-lag, --subscriber-max-lag, --expiry-grace,
 * --cache-dir, --fetch-*. 0, FB_EXIT_USAGE after a message, or
 * BUILD_OPT_OTHER.
 */
static int
build_opt_inputs(struct build_opts *o, int c)
{
	uint64_t u;

	switch (c) {
	case 'S': o->source = optarg; break;
	case 'Q': o->query = optarg; break;
	case OPT_EXPIRY_GRACE:
		if (fb_parse_grace(optarg, &o->expiry_grace) != 0)
			return fb_usage_err("build", "--expiry-grace '%s': "
			    "want a duration up to 1d (0 for none)",
			    optarg);
		break;
	case OPT_STANDBY_MAX_LAG:
		return build_opt_lag("--standby-max-lag", &o->standby_max_lag);
	case OPT_SUBSCRIBER_MAX_LAG:
		return build_opt_lag("--subscriber-max-lag",
		    &o->subscriber_max_lag);
	case OPT_CACHE_DIR: o->fetch.cache_dir = optarg; break;
	case OPT_FETCH_CA: o->fetch.ca_file = optarg; break;
	case OPT_FETCH_MAX_SIZE:
		if (util_parse_u64(optarg, SIZE_MAX - 1,
		    &o->fetch.max_size) != 0 || o->fetch.max_size == 0)
			return fb_usage_err("build", "--fetch-max-size "
			    "'%s': want a number of bytes", optarg);
		break;
	case OPT_FETCH_TIMEOUT:
		return build_opt_duration("--fetch-timeout", 1, 86400,
		    "a duration up to 1d", &o->fetch.timeout);
	case OPT_ISSUED:
		if (o->nissued == ISSUED_MAX_FILES)
			return fb_usage_err("build", "more than %d --issued "
			    "options", ISSUED_MAX_FILES);
		o->issued[o->nissued++] = optarg;
		break;
	case OPT_ISSUED_CUTOFF:
		if (util_parse_rfc3339(optarg, &o->issued_cutoff) != 0 &&
		    util_parse_u64(optarg, INT64_MAX, &u) == 0)
			o->issued_cutoff = (int64_t)u;
		else if (util_parse_rfc3339(optarg, &o->issued_cutoff) != 0)
			o->issued_cutoff = 0;
		if (o->issued_cutoff <= 0)
			return fb_usage_err("build", "--issued-cutoff '%s': want "
			    "an RFC 3339 time or Unix seconds", optarg);
		break;
	default: return BUILD_OPT_OTHER;
	}
	return 0;
}

/*
 * Reads argv into o; *first_input is the index of the first INPUT. 0,
 * -1 after printing --help, or FB_EXIT_USAGE after a message.
 */
static int
build_parse(struct build_opts *o, int argc, char **argv, int *first_input)
{
	static const struct option opts[] = {
		{ "key",	   required_argument, NULL, 'k' },
		{ "out",	   required_argument, NULL, 'o' },
		{ "fp-rate",	   required_argument, NULL, 'p' },
		{ "valid-for",	   required_argument, NULL, 'v' },
		{ "version",	   required_argument, NULL, 'V' },
		{ "scope",	   required_argument, NULL, 's' },
		{ "format",	   required_argument, NULL, 'f' },
		{ "issuer",	   required_argument, NULL, 'i' },
		{ "allow-expired", no_argument,	      NULL, 'x' },
		{ "allow-shrink",  no_argument,	      NULL, OPT_ALLOW_SHRINK },
		{ "max-shrink",	   required_argument, NULL, OPT_MAX_SHRINK },
		{ "unverified-crl", no_argument,     NULL, OPT_UNVERIFIED_CRL },
		{ "allow-weak-crl-sig", no_argument, NULL, OPT_ALLOW_WEAK_SIG },
		{ "no-delta",	   no_argument,	      NULL, OPT_NO_DELTA },
		{ "clock-skew",	   required_argument, NULL, OPT_CLOCK_SKEW },
		{ "crl-validity",  required_argument, NULL, OPT_CRL_VALIDITY },
		{ "allow-crl-rollback", no_argument, NULL, OPT_ALLOW_ROLLBACK },
		{ "keep-going",	   no_argument,	      NULL, OPT_KEEP_GOING },
		{ "report",	   required_argument, NULL, OPT_REPORT },
		{ "expiry-grace",  required_argument, NULL, OPT_EXPIRY_GRACE },
		{ "trusted-key",   required_argument, NULL, OPT_TRUSTED_KEY },
		{ "delegate",	   required_argument, NULL, OPT_DELEGATE },
		{ "keep",	   required_argument, NULL, 'K' },
		{ "layout",	   required_argument, NULL, 'L' },
		{ "quiet",	   no_argument,	      NULL, 'q' },
		{ "cache-dir",	   required_argument, NULL, OPT_CACHE_DIR },
		{ "fetch-max-size", required_argument, NULL, OPT_FETCH_MAX_SIZE },
		{ "fetch-timeout", required_argument, NULL, OPT_FETCH_TIMEOUT },
		{ "fetch-ca",	   required_argument, NULL, OPT_FETCH_CA },
		{ "source",	   required_argument, NULL, 'S' },
		{ "query",	   required_argument, NULL, 'Q' },
		{ "standby-max-lag", required_argument, NULL, OPT_STANDBY_MAX_LAG },
		{ "subscriber-max-lag", required_argument, NULL,
		    OPT_SUBSCRIBER_MAX_LAG },
		{ "issued",	   required_argument, NULL, OPT_ISSUED },
		{ "issued-cutoff", required_argument, NULL, OPT_ISSUED_CUTOFF },
		{ "help",	   no_argument,	      NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	build_defaults(o);
	fb_getopt_reset();
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h') {
			build_usage(stdout);
			return -1;
		}
		if ((rc = build_opt_filter(o, c)) == BUILD_OPT_OTHER &&
		    (rc = build_opt_checks(o, c)) == BUILD_OPT_OTHER &&
		    (rc = build_opt_inputs(o, c)) == BUILD_OPT_OTHER)
			return fb_usage_err("build", "bad option");
		if (rc != 0)
			return rc;
	}
	if (o->key == NULL)
		return fb_usage_err("build", "--key KEY.pem is required");
	if (o->out == NULL)
		return fb_usage_err("build", "--out DIR is required");
	if (optind >= argc && o->source == NULL)
		return fb_usage_err("build", "no INPUT (or --source) given");
	if (o->query != NULL && o->source == NULL)
		return fb_usage_err("build", "--query needs --source");
	if (o->issued_cutoff != 0 && o->nissued == 0)
		return fb_usage_err("build", "--issued-cutoff needs --issued");
	if (o->standby_max_lag != 0 && o->source == NULL)
		return fb_usage_err("build", "--standby-max-lag needs --source");
	if (o->subscriber_max_lag != 0 && o->source == NULL)
		return fb_usage_err("build", "--subscriber-max-lag needs "
		    "--source");
	if ((o->standby_max_lag + o->subscriber_max_lag) * 2 > o->valid_for)
		return fb_usage_err("build", "--standby-max-lag and "
		    "--subscriber-max-lag together must be at most half of "
		    "--valid-for: the filter is dated that far back");
	*first_input = optind;
	return 0;
}

/* Loads every certificate of each --issuer file. 0, or -1 with a message. */
static int
build_load_issuers(const struct build_opts *o, X509 ***out, size_t *nout)
{
	X509 **v = NULL, **nv, *x;
	size_t n = 0, i;
	FILE *fp;

	for (i = 0; i < o->nissuers; i++) {
		size_t before = n;

		fp = fopen(o->issuers[i], "r");
		if (fp == NULL) {
			fb_err("%s: %s", o->issuers[i], strerror(errno));
			goto fail;
		}
		while ((x = PEM_read_X509(fp, NULL, NULL, NULL)) != NULL) {
			nv = realloc(v, (n + 1) * sizeof(*v));
			if (nv == NULL) {
				X509_free(x);
				(void)fclose(fp);
				fb_err("%s: out of memory", o->issuers[i]);
				goto fail;
			}
			v = nv;
			v[n++] = x;
		}
		ERR_clear_error();
		(void)fclose(fp);
		if (n == before) {
			fb_err("%s: no PEM certificate found", o->issuers[i]);
			goto fail;
		}
	}
	*out = v;
	*nout = n;
	return 0;
fail:
	for (i = 0; i < n; i++)
		X509_free(v[i]);
	free(v);
	return -1;
}

/* The first certificate of a PEM file; NULL after a message. */
static X509 *
build_load_cert(const char *path)
{
	X509 *x;
	FILE *fp;

	if ((fp = fopen(path, "r")) == NULL) {
		fb_err("%s: %s", path, strerror(errno));
		return NULL;
	}
	x = PEM_read_X509(fp, NULL, NULL, NULL);
	(void)fclose(fp);
	ERR_clear_error();
	if (x == NULL)
		fb_err("%s: no PEM certificate found", path);
	return x;
}

/*
 * Turns each --delegate CA.pem=CRLISSUER.pem into the two scopes (of the
 * CA's and the CRL issuer's subject Names). *out is malloc'ed (NULL when
 * there are none). 0, or -1 with a message.
 */
static int
build_load_delegations(const struct build_opts *o,
    struct input_delegation **out)
{
	struct input_delegation *d;
	X509 *ca = NULL, *ci = NULL;
	char ca_path[4096];
	const char *eq;
	size_t i, n;
	int rc = -1;

	*out = NULL;
	if (o->ndelegates == 0)
		return 0;
	if ((d = calloc(o->ndelegates, sizeof(*d))) == NULL) {
		fb_err("out of memory");
		return -1;
	}
	for (i = 0; i < o->ndelegates; i++) {
		eq = strchr(o->delegates[i], '=');
		n = (size_t)(eq - o->delegates[i]);
		if (n == 0 || n >= sizeof(ca_path) || eq[1] == '\0') {
			fb_err("--delegate '%s': want CA.pem=CRLISSUER.pem",
			    o->delegates[i]);
			goto out;
		}
		memcpy(ca_path, o->delegates[i], n);
		ca_path[n] = '\0';
		if ((ca = build_load_cert(ca_path)) == NULL ||
		    (ci = build_load_cert(eq + 1)) == NULL)
			goto out;
		if (revkey_x509_scope(d[i].ca_scope,
		    X509_get_subject_name(ca)) != 0 ||
		    revkey_x509_scope(d[i].crl_issuer_scope,
		    X509_get_subject_name(ci)) != 0 ||
		    crl_name_text(X509_get_subject_name(ca), d[i].ca_issuer,
		    sizeof(d[i].ca_issuer)) != 0) {
			fb_err("--delegate '%s': cannot encode the subject "
			    "names", o->delegates[i]);
			goto out;
		}
		if (strcmp(d[i].ca_scope, d[i].crl_issuer_scope) == 0) {
			fb_err("--delegate '%s': the CA and the CRL issuer are "
			    "the same", o->delegates[i]);
			goto out;
		}
		X509_free(ca);
		X509_free(ci);
		ca = ci = NULL;
	}
	*out = d;
	d = NULL;
	rc = 0;
out:
	X509_free(ca);
	X509_free(ci);
	free(d);
	return rc;
}

/*
 * Warns about each --delegate that gave its CA nothing: no indirect CRL of
 * that CRL issuer without a distribution point name among the inputs.
 * (Nothing is covered then, so this is advice, not a refusal.)
 */
static void
build_warn_delegations(const struct build_opts *o,
    const struct input_delegation *d, const struct input_set *set)
{
	const struct ffile_scope *sc;
	size_t i, j;
	unsigned p;
	bool used;

	for (i = 0; i < o->ndelegates; i++) {
		used = false;
		for (j = 0; j < set->nscopes && !used; j++) {
			sc = &set->scopes[j];
			if (strcmp(sc->name, d[i].ca_scope) != 0)
				continue;
			/* Covered whole by a CRL of its own anyway. */
			if (sc->source == FFILE_SRC_CRL && sc->npart == 0 &&
			    (sc->flags & FFILE_SCOPE_ATTRIBUTED) == 0)
				used = true;
			for (p = 0; p < sc->npart; p++)
				if ((sc->part[p].flags & FFILE_PART_DELEGATED) != 0)
					used = true;
		}
		if (!used)
			fb_err("warning: --delegate %s: no indirect CRL of that "
			    "CRL issuer without a distribution point name among "
			    "the inputs: the CA's bare serials stay not covered",
			    o->delegates[i]);
	}
}

/*
 * Opens the current version in vdir for the comparisons and --keep-going:
 * its filter (and, with want_table, its table) is trusted only when the
 * filter's signature verifies against ring (the build key and the
 * --trusted-key keys) and the table is the one the filter names. A copy
 * that does not verify could carry any key counts and CRL numbers, and
 * would let a shrink or a replayed CRL through. Returns 0 with *f (and
 * *t) set, or -1 with err and nothing open.
 */
static int
build_open_previous(const char *vdir, const struct sign_ring *ring,
    bool want_table, struct ffile **f, struct table **t, char *err,
    size_t errlen)
{
	char path[4200], why[1024];
	int n;

	*f = NULL;
	*t = NULL;
	n = snprintf(path, sizeof(path), "%s/" PUBLISH_FILTER_NAME, vdir);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		(void)snprintf(err, errlen, "%.200s: path too long", vdir);
		return -1;
	}
	if ((*f = ffile_open(path, err, errlen)) == NULL)
		return -1;
	if (ffile_verify(*f, ring, why, sizeof(why)) != 0) {
		(void)snprintf(err, errlen, "%.300s: %.200s: signed by neither "
		    "--key nor a --trusted-key, so its key counts and CRL "
		    "numbers cannot be trusted (--trusted-key PUB.pem for the "
		    "key that signed it)", path, why);
		goto fail;
	}
	if (!want_table)
		return 0;
	n = snprintf(path, sizeof(path), "%s/" PUBLISH_TABLE_NAME, vdir);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		(void)snprintf(err, errlen, "%.200s: path too long", vdir);
		goto fail;
	}
	if ((*t = table_open(path, err, errlen)) == NULL)
		goto fail;
	if (table_check_binding(*t, ffile_info(*f)->table_sha256,
	    ffile_info(*f)->table_len, why, sizeof(why)) != 0) {
		(void)snprintf(err, errlen, "%.300s: not the table its signed "
		    "filter names: %.200s", path, why);
		goto fail;
	}
	return 0;
fail:
	table_close(*t);
	ffile_close(*f);
	*f = NULL;
	*t = NULL;
	return -1;
}

/*
 * input_prev_opts.authoritative of a database source alone: its rows are
 * the truth for every scope, an empty one included.
 */
static bool
build_db_scope(void *arg, const char *scope)
{
	(void)arg;
	(void)scope;
	return true;
}

/*
 * A database source alone: the list scopes of the version nodes enforce
 * that it no longer names (their last row expired or was deleted) stay
 * covered with no keys, unless --allow-shrink lets them go (not_covered).
 * 0, or -1 after a message.
 */
static int
build_cover_db_scopes(const struct build_opts *o, struct input_set *set,
    const struct ffile *prev)
{
	const struct ffile_info *was = o->enforced != NULL ? o->enforced :
	    prev != NULL ? ffile_info(prev) : NULL;
	char err[1024];
	size_t added = 0;

	/* --allow-shrink: the scopes it no longer names are let go. */
	if (!o->source_only || was == NULL || o->allow_shrink)
		return 0;
	if (input_cover_scopes(set, was, &added, err, sizeof(err)) != 0) {
		fb_err("%s", err);
		return -1;
	}
	if (added > 0 && !o->quiet)
		fb_err("%zu scope(s) of version %" PRIu64 " without a row in "
		    "the source: kept covered with no keys", added,
		    was->version);
	return 0;
}

/*
 * Compares the inputs with the current version (prev, NULL when it could
 * not be opened or verified: why says so): a dropped scope, one that
 * shrank too much or a replayed CRL is refused unless allowed. A current
 * version that cannot be read or verified cannot vouch for anything, so
 * it is refused the same way. 0, or -1 with a message.
 */
static int
build_check_previous(const struct build_opts *o, const struct input_set *set,
    const struct ffile *prev, const char *why, const struct fb_report *rep)
{
	const char *gone[FFILE_MAX_SCOPES > 64 ? 64 : FFILE_MAX_SCOPES];
	size_t ngone = 0, i;
	struct input_prev_opts po;
	char err[1024];
	int rc;

	/*
	 * A database source alone names no CRL scope and speaks for every
	 * scope it covers: nothing to compare with.
	 */
	if (prev == NULL && o->source_only) {
		if (!o->quiet)
			fb_err("warning: not compared with the current version: "
			    "%s (the database alone is the input)", why);
		return 0;
	}
	if (prev == NULL) {
		if (!o->allow_shrink) {
			fb_err("cannot compare with the current version: %s; "
			    "--allow-shrink to publish without the comparison",
			    why);
			return -1;
		}
		if (!o->quiet)
			fb_err("warning: not compared with the current "
			    "version: %s (--allow-shrink)", why);
		return 0;
	}
	memset(&po, 0, sizeof(po));
	po.allow_shrink = o->allow_shrink;
	po.allow_rollback = o->allow_rollback;
	po.max_shrink_pct = o->max_shrink;
	po.quiet = o->quiet;
	/* --keep-going: CRL scopes past nextUpdate are left out on purpose. */
	for (i = 0; i < rep->nscopes && ngone < sizeof(gone) / sizeof(gone[0]);
	    i++)
		if (!rep->scopes[i].kept)
			gone[ngone++] = rep->scopes[i].scope;
	po.gone = gone;
	po.ngone = ngone;
	if (o->source_only)
		po.authoritative = build_db_scope;
	rc = input_check_previous(set, o->enforced != NULL ? o->enforced :
	    ffile_info(prev), &po, err, sizeof(err));
	if (rc != 0)
		fb_err("%s", err);
	return rc;
}

/*
 * Reads the --source database into set; *cursor (when not NULL) gets the
 * snapshot's change horizon. A standby is read only when --standby-max-lag
 * allows it and it is shown that close to its sender, tables a logical
 * replication subscription feeds only when --subscriber-max-lag allows it
 * and its apply worker is shown that close to its publisher; *lag is how
 * far behind the data may be (0 for a primary that subscribes to nothing
 * read), asked before the read's snapshot is taken, and rows expire as of
 * io->now - *lag. 0, or -1 after a message.
 */
static int
build_read_source(const struct build_opts *o, struct input_set *set,
    const struct input_opts *io, uint64_t *cursor, int64_t *lag,
    struct pgsrc_quarantine *q, struct pgsrc_issued *issued)
{
	struct input_opts sio = *io;
	struct pgsrc *p;
	char err[1024];
	int64_t slag;
	int rc = -1, v;

	if ((p = pgsrc_connect(o->source, err, sizeof(err))) == NULL) {
		fb_err("%s", err);
		return -1;
	}
	v = pgsrc_check_standby(p, o->standby_max_lag, lag, NULL, err,
	    sizeof(err));
	if (v != PGSRC_SB_PRIMARY && v != PGSRC_SB_CURRENT) {
		fb_err("%s: nothing published", err);
		goto out;
	}
	if (v == PGSRC_SB_CURRENT && !o->quiet)
		fb_err("the source is a standby shown at most %" PRId64 " s "
		    "behind its sender: the filter is dated %" PRId64 " s back",
		    *lag, *lag);
	v = pgsrc_check_subscriber(p, o->subscriber_max_lag, o->query != NULL,
	    &slag, err, sizeof(err));
	if (v != PGSRC_SUB_NONE && v != PGSRC_SUB_CURRENT) {
		fb_err("%s: nothing published", err);
		goto out;
	}
	if (v == PGSRC_SUB_CURRENT && !o->quiet)
		fb_err("the source's tables are fed by a logical replication "
		    "subscription shown at most %" PRId64 " s behind its "
		    "publisher: the filter is dated %" PRId64 " s back", slag,
		    *lag + slag);
	*lag += slag;
	sio.now = io->now - *lag;
	rc = pgsrc_read_full_issued(p, o->query, set, &sio, cursor, issued, err,
	    sizeof(err));
	if (rc != 0)
		fb_err("%s", err);
	else
		*q = *pgsrc_quarantined(p);
out:
	pgsrc_close(p);
	return rc;
}

/* One build's state, from the options to the published pair. */
struct build_run {
	struct build_opts o;
	struct progress	 pr;
	struct input_opts io;
	struct input_set set;
	struct fb_report rep;
	struct pair	 pair;
	struct sign_ring ring;
	struct input_delegation *dgs;
	struct ffile	*prev;		/* the current version, verified */
	struct table	*prev_tab;
	struct pgsrc_quarantine srcq;
	struct fb_exact	 exact;		/* exact scopes (build_exact.c) */
	struct pgsrc_issued srci;	/* the source's issued set */
	EVP_PKEY	*key;
	X509		**issuers;
	size_t		 nissuers;
	size_t		 n;		/* keys, once sorted */
	char		 vdir[4096];	/* the current version's directory */
	char		 prev_err[1024]; /* why prev is NULL, or "" */
	uint64_t	 cur;		/* the current version, 0: none */
	uint64_t	 version;	/* the one published */
	int64_t		 now;
	int64_t		 src_lag;	/* how far behind the source may be */
	int64_t		 issued_at;
};

/* Everything but b->o (build_parse's) to its empty state. */
static void
build_run_init(struct build_run *b, const struct ffile_info *enforced,
    int argc, int first)
{
	b->o.enforced = enforced;
	b->o.source_only = b->o.source != NULL && first >= argc;
	fb_report_init(&b->rep);
	b->pr.on = !b->o.quiet && isatty(STDERR_FILENO);
	b->pr.start = b->pr.last = util_monotime();
	input_set_init(&b->set);
	sign_ring_init(&b->ring);
	memcpy(b->exact.files.paths, b->o.issued, b->o.nissued *
	    sizeof(b->o.issued[0]));
	b->exact.files.npaths = b->o.nissued;
	b->exact.files.list_scope = b->o.scope;
	b->exact.cutoff = b->o.issued_cutoff;
	b->exact.quiet = b->o.quiet;
}

static void
build_run_free(struct build_run *b)
{
	size_t i;

	fb_report_free(&b->rep);
	fb_exact_free(&b->exact);
	pgsrc_issued_free(&b->srci);
	table_close(b->prev_tab);
	ffile_close(b->prev);
	sign_ring_free(&b->ring);
	free(b->dgs);
	pair_free(&b->pair);
	input_set_free(&b->set);
	for (i = 0; i < b->nissuers; i++)
		X509_free(b->issuers[i]);
	free(b->issuers);
	EVP_PKEY_free(b->key);
}

/*
 * 1. The current version and the one to publish, refused before any
 * work: DIR stays untouched. 0, or -1 after a message.
 */
static int
build_stage_version(struct build_run *b)
{
	const struct build_opts *o = &b->o;
	char err[1024];
	int rc;

	rc = publish_current(o->out, b->vdir, sizeof(b->vdir), &b->cur, err,
	    sizeof(err));
	if (rc < 0) {
		fb_err("%s", err);
		return -1;
	}
	/*
	 * No "current" link, but versions in DIR: the link was lost (or a
	 * first build was killed before making one). The highest version
	 * stands in for it, for the version number and the comparisons:
	 * starting over at 1 would lose the history and be refused by every
	 * daemon's rollback state, and no comparison would stop a shrink.
	 */
	if (rc == 1 && (rc = publish_previous(o->out, UINT64_MAX, b->vdir,
	    sizeof(b->vdir), &b->cur, err, sizeof(err))) == 0)
		fb_err("warning: %s: no \"current\" link; version %"
		    PRIu64 ", the highest there, stands in for it (restore "
		    "the link if another version was the one published)",
		    o->out, b->cur);
	if (rc < 0) {
		fb_err("%s", err);
		return -1;
	}
	if (rc == 1)
		b->cur = 0;
	if (o->version != 0 && o->version <= b->cur) {
		fb_err("%s: version %" PRIu64 " is not above the current version "
		    "%" PRIu64, o->out, o->version, b->cur);
		return -1;
	}
	if (o->version == 0 && b->cur == UINT64_MAX) {
		fb_err("%s: no version above %" PRIu64, o->out, b->cur);
		return -1;
	}
	b->version = o->version != 0 ? o->version : b->cur + 1;
	return 0;
}

/*
 * 2. The signing key and the ring the current version must verify
 * against (--key, --trusted-key), the --issuer certificates and the
 * --delegate statements. 0, or -1 after a message.
 */
static int
build_stage_keys(struct build_run *b)
{
	char err[1024];
	size_t i;

	if ((b->key = fb_load_signer(&b->ring, b->o.key)) == NULL)
		return -1;
	for (i = 0; i < b->o.ntrusted; i++)
		if (sign_ring_add(&b->ring, b->o.trusted[i], err,
		    sizeof(err)) != 0) {
			fb_err("%s", err);
			return -1;
		}
	if (build_load_issuers(&b->o, &b->issuers, &b->nissuers) != 0 ||
	    build_load_delegations(&b->o, &b->dgs) != 0)
		return -1;
	return 0;
}

/* How every input is read, as of b->now. */
static void
build_input_opts(struct build_run *b)
{
	const struct build_opts *o = &b->o;
	struct input_opts *io = &b->io;

	memset(io, 0, sizeof(*io));
	io->scope = o->scope;
	io->format = o->format;
	io->issuers = b->issuers;
	io->nissuers = b->nissuers;
	io->allow_expired = o->allow_expired;
	io->allow_empty = o->allow_shrink;
	io->unverified_ok = o->unverified_crl;
	io->allow_weak_sig = o->allow_weak_sig;
	io->no_delta = o->no_delta;
	io->clock_skew = o->clock_skew;
	io->crl_validity = o->crl_validity;
	io->now = b->now;
	io->expiry_grace = o->expiry_grace;
	io->delegations = b->dgs;
	io->ndelegations = o->ndelegates;
	io->quiet = o->quiet;
	io->progress = b->pr.on ? progress_keys : NULL;
	io->progress_arg = &b->pr;
}

/*
 * 3. Every INPUT (argv from first) and the --source into b->set, each
 * recorded for the report; with --keep-going a bad INPUT is skipped.
 * cursor (when not NULL) gets the source snapshot's change horizon. 0, or
 * -1 after a message.
 */
static int
build_stage_read(struct build_run *b, int argc, char **argv, int first,
    uint64_t *cursor)
{
	char err[1024];
	size_t i;

	b->now = util_now();
	build_input_opts(b);
	progress_phase(&b->pr, "reading");
	for (i = (size_t)first; i < (size_t)argc; i++) {
		if ((fetch_is_url(argv[i]) ? fetch_input(&b->set, argv[i],
		    &b->o.fetch, &b->io, err, sizeof(err)) : input_read(&b->set,
		    argv[i], &b->io, err, sizeof(err))) != 0) {
			progress_done(&b->pr);
			if (fb_report_input(&b->rep, argv[i], err,
			    input_set_records(&b->set)) != 0) {
				fb_err("out of memory");
				return -1;
			}
			if (!b->o.keep_going) {
				fb_err("%s", err);
				return -1;
			}
			fb_err("warning: --keep-going: skipped: %s", err);
			continue;
		}
		if (fb_report_input(&b->rep, argv[i], NULL,
		    input_set_records(&b->set)) != 0) {
			fb_err("out of memory");
			return -1;
		}
	}
	if (b->o.source != NULL && build_read_source(&b->o, &b->set, &b->io,
	    cursor, &b->src_lag, &b->srcq, &b->srci) != 0) {
		progress_done(&b->pr);
		return -1;
	}
	return 0;
}

/*
 * 4. The inputs made one set and judged: CRLs resolved, the current
 * version opened (verified) for --keep-going and the comparisons, the
 * keys sorted, the layout chosen and every check passed. 0, or -1 after
 * a message.
 */
static int
build_stage_check(struct build_run *b)
{
	const struct build_opts *o = &b->o;
	char err[1024], msg[96];

	if (input_resolve_crls(&b->set, o->quiet, o->no_delta, err,
	    sizeof(err)) != 0) {
		progress_done(&b->pr);
		fb_err("%s", err);
		return -1;
	}
	build_warn_delegations(o, b->dgs, &b->set);
	/* The current version, verified once, for --keep-going and the checks. */
	if (b->cur != 0 && build_open_previous(b->vdir, &b->ring,
	    b->rep.failed > 0, &b->prev, &b->prev_tab, b->prev_err,
	    sizeof(b->prev_err)) != 0 && b->rep.failed > 0) {
		fb_err("--keep-going: cannot keep scopes of the current version: "
		    "%s", b->prev_err);
		return -1;
	}
	if (b->rep.failed > 0 && b->cur != 0 &&
	    fb_report_keep(&b->rep, &b->set, b->prev, b->prev_tab, b->now,
	    err, sizeof(err)) != 0) {
		fb_err("--keep-going: %s", err);
		return -1;
	}
	if (b->pr.on) {
		snprintf(msg, sizeof(msg), "sorting %zu keys",
		    table_builder_count(&b->set.builder));
		progress_phase(&b->pr, msg);
	}
	table_builder_sort_unique(&b->set.builder);
	b->n = table_builder_count(&b->set.builder);
	input_count_scopes(&b->set);
	if (b->cur != 0 && build_cover_db_scopes(o, &b->set, b->prev) != 0)
		return -1;
	if (b->set.nscopes == 0) {
		fb_err("inputs cover no scope");
		return -1;
	}
	/* A layout that cannot meet --fp-rate is refused first, as before. */
	if (b->pr.on) {
		snprintf(msg, sizeof(msg), "filter: %zu distinct keys", b->n);
		progress_phase(&b->pr, msg);
	}
	if (pair_layout(b->n, o->fp_rate, o->layout, &b->o.layout, err,
	    sizeof(err)) != 0) {
		fb_err("%s", err);
		return -1;
	}
	if (input_check_signers(&b->set, err, sizeof(err)) != 0) {
		fb_err("%s", err);
		return -1;
	}
	if (b->cur != 0 && build_check_previous(o, &b->set, b->prev,
	    b->prev_err, &b->rep) != 0)
		return -1;
	/* Scopes with their issued set made exact (build_exact.c). */
	b->exact.pg = b->srci.present ? &b->srci : NULL;
	if (b->srci.unreadable && !o->quiet)
		fb_err("warning: " PGSRC_ISSUED_TABLE " is not granted to the "
		    "source's role: no scope is made exact from it");
	b->exact.pg_lag = b->src_lag;
	if (fb_exact_build(&b->exact, &b->set, err, sizeof(err)) != 0) {
		progress_done(&b->pr);
		fb_err("%s", err);
		return -1;
	}
	return 0;
}

/*
 * 5. The pair built, signed and published in DIR as b->version, and said
 * on stdout. 0, or -1 after a message.
 */
static int
build_stage_publish(struct build_run *b)
{
	const struct build_opts *o = &b->o;
	char err[1024], vname[PUBLISH_VNAME_LEN + 1], until[UTIL_RFC3339_LEN];
	struct pair_opts po;

	memset(&po, 0, sizeof(po));
	po.key = b->key;
	po.version = b->version;
	/* Complete as of the source's time: a standby's or subscriber's data is that old. */
	po.issued_at = b->issued_at = b->now - b->src_lag;
	po.expires_at = po.issued_at + o->valid_for;
	po.fp_rate = o->fp_rate;
	po.layout = o->layout;
	po.phase = build_phase;
	po.phase_arg = &b->pr;
	po.skip = b->exact.skip;
	po.nskip = b->exact.nskip;
	if (pair_build_publish(&b->pair, &b->set.builder, b->set.scopes,
	    b->set.nscopes, &po, o->out, o->keep, err, sizeof(err)) != 0) {
		progress_done(&b->pr);
		fb_err("%s", err);
		return -1;
	}
	progress_done(&b->pr);
	if (!o->quiet) {
		publish_version_name(vname, b->version);
		util_rfc3339(until, b->pair.info.expires_at);
		printf("published version %" PRIu64 " in %s/%s: %zu keys, %zu "
		    "scopes, %s layout, %" PRIu64 " bits, k=%" PRIu32 ", fill "
		    "%.4f, valid until %s\n", b->version, o->out, vname, b->n,
		    b->set.nscopes, bloom_layout_name(b->pair.info.layout),
		    b->pair.info.m, b->pair.info.k,
		    bloom_fill_ratio(&b->pair.bloom), until);
	}
	return 0;
}

/*
 * 6. After publishing: what fb_build_source() returns (res, when not
 * NULL) and the source's quarantine report. Its exit status.
 */
static int
build_stage_done(struct build_run *b, struct fb_built *res)
{
	if (res != NULL) {
		res->version = b->version;
		res->keys = b->n;
		res->q = b->srcq;
	}
	/* Only a report: a failure to write it is said, and the build stands. */
	if (b->o.source != NULL) {
		if (b->srcq.rows > 0)	/* even --quiet: as each row's line */
			fb_err("warning: %" PRIu64 " row(s) of the source left out "
			    "(quarantined: no check can name them; see the log "
			    "above and %s/" FB_QUARANTINE_NAME ")", b->srcq.rows,
			    b->o.out);
		(void)fb_quarantine_write(b->o.out, &b->srcq, b->version,
		    b->issued_at);
	}
	b->rep.version = b->version;
	return b->rep.failed > 0 ? FB_EXIT_PARTIAL : FB_EXIT_OK;
}

/* fb_build(), and for fb_build_source() what was published. */
static int
build_main(int argc, char **argv, const struct ffile_info *enforced,
    struct fb_built *res)
{
	struct build_run b;
	char err[1024];
	int first = 0, rc, ret = FB_EXIT_FAIL;

	memset(&b, 0, sizeof(b));
	rc = build_parse(&b.o, argc, argv, &first);
	if (rc != 0)
		return rc < 0 ? FB_EXIT_OK : rc;
	build_run_init(&b, enforced, argc, first);
	if (build_stage_version(&b) == 0 && build_stage_keys(&b) == 0 &&
	    build_stage_read(&b, argc, argv, first, res != NULL ?
	    &res->cursor : NULL) == 0 && build_stage_check(&b) == 0 &&
	    build_stage_publish(&b) == 0)
		ret = build_stage_done(&b, res);
	b.rep.exit_status = ret;
	if (b.o.report != NULL && fb_report_write(&b.rep, b.o.report, err,
	    sizeof(err)) != 0) {
		fb_err("%s", err);
		ret = FB_EXIT_FAIL;
	}
	build_run_free(&b);
	return ret;
}

int
fb_build(int argc, char **argv)
{
	return build_main(argc, argv, NULL, NULL);
}

int
fb_build_source(int argc, char **argv, const struct ffile_info *enforced,
    struct fb_built *res)
{
	memset(res, 0, sizeof(*res));
	return build_main(argc, argv, enforced, res);
}
