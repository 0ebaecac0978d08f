/* follow.c - filterbuild follow: a PostgreSQL source published as a signed delta chain */
/*
 * The chain on disk is the follower's only state: every delta and head
 * carries the source cursor it was made at, and all of them are written
 * atomically (publish_file), so a restart after a SIGKILL at any instant
 * finds a verifiable chain and resumes from the cursor of its last file.
 * A change can be in two files only if the first never became durable.
 *
 *   DIR/vN/filter.rcf, table.rct    a base (a full build, "re-base")
 *   DIR/vN/delta/000..01.rcd ...    deltas 1, 2, ... chained by hash
 *   DIR/vN/delta/head.rcd           the newest head: chain through delta
 *                                   seq is complete, fresh until expiry
 *
 * Expired rows leave through deltas too, --expiry-grace after their
 * expires_at (a verifier still accepts a token a leeway past its exp). A
 * delta's issued_at is the time T its round read the source at, and the
 * round removed every row whose expires_at + grace passed since the
 * previous delta's issued_at (the base's, for delta 1: a build leaves out
 * what expired by its issued_at - grace). So the chain also says how far
 * the expiry sweep went, and a restart goes on from there. A removal, whatever its cause, is published only when no
 * row of the source still in force maps to the key (follow_recheck).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "delta.h"
#include "fb.h"
#include "ffile.h"
#include "followhttp.h"
#include "input.h"
#include "leader.h"
#include "log.h"
#include "netaddr.h"
#include "overlay.h"
#include "pgsrc.h"
#include "publish.h"
#include "sign.h"
#include "util.h"

#define FOLLOW_MAX_ARGS		32
/*
 * Seconds between reconnection attempts, at most: a refused connect costs
 * the server nothing, and the chain is fresh again within this much of
 * the database coming back (every node is stale after a long outage).
 */
#define FOLLOW_BACKOFF_MAX	2

struct follow_opts {
	const char	*source;
	const char	*key;
	const char	*out;
	const char	*scope;
	const char	*fp_rate;
	const char	*layout;
	const char	*keep;
	const char	*valid_for_arg;
	const char	*grace_arg;
	const char	*standby_arg;
	int64_t		 standby_max_lag; /* seconds; 0: no standby */
	const char	*subscriber_arg;
	const char	*lock_name;	/* --lock-name; NULL: the directory's */
	struct leader	*ld;		/* the election (leader.h) */
	const char	*listen;	/* --listen: metrics and health */
	int64_t		 subscriber_max_lag; /* seconds; 0: no subscriber */
	int64_t		 grace;		/* --expiry-grace */
	int64_t		 interval_ms;
	int64_t		 valid_for;
	int64_t		 head_every;
	int64_t		 rebase_every;	/* 0: never on a schedule */
	uint64_t	 rebase_after;	/* entries in the chain */
	bool		 once;
	bool		 quiet;
};

/* Where the chain stands. */
struct follow_state {
	bool		 have;		/* a base with a readable chain */
	char		 vdir[4096];
	char		 ddir[4096];
	struct ffile	*base;
	struct delta_pos pos;
	uint64_t	 cursor;
	uint64_t	 chain_entries;
	int64_t		 base_at;
	int64_t		 head_at;
	int64_t		 swept_at;	/* expiries up to here are published */
	/* Rows left out: the base's, plus added changes since. */
	struct pgsrc_quarantine q;
};

/* One batch of changes being collected. */
struct follow_batch {
	const struct follow_state *st;
	const struct follow_opts *o;
	struct delta_entry *v;
	size_t		 n;
	size_t		 cap;
	bool		 rebase;	/* an uncovered scope, or too many */
	int		 can;		/* PGSRC_CAN_* of the connection */
	int64_t		 changed_at;
	int64_t		 now;
	int64_t		 cut;		/* now - grace: expired at or before */
};

static volatile sig_atomic_t follow_stop;

static void
follow_on_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

static void
follow_usage(FILE *fp)
{
	fputs("usage: filterbuild follow --source URL --key KEY.pem --out DIR [options]\n"
	    "\n"
	    "Follows a PostgreSQL source (config/postgresql-schema.sql): publishes a\n"
	    "full base, then a signed delta for every batch of changes, woken by\n"
	    "LISTEN/NOTIFY or every --interval. The chain in DIR is the cursor: a\n"
	    "restart resumes from it without losing or repeating a change.\n"
	    "\n"
	    "  --source URL         'postgresql://...' or a libpq connection string\n"
	    "  --key KEY.pem        Ed25519 signing key\n"
	    "  --out DIR            output directory (as for build)\n"
	    "  --interval DUR       poll interval when no notification comes (default\n"
	    "                       1s; 100ms, 2s, 1m...)\n"
	    "  --valid-for DUR      validity of the base and of each delta and head\n"
	    "                       (default 1h)\n"
	    "  --head-every DUR     re-sign the head this often when idle (default 60s)\n"
	    "  --rebase-after N     re-base when the chain holds N entries (default\n"
	    "                       100000)\n"
	    "  --rebase-every DUR   re-base on this schedule (default 1d)\n"
	    "  --expiry-grace DUR   a row's revocation lasts this long past its\n"
	    "                       expires_at (default 10m; more than the verifiers'\n"
	    "                       leeway plus the clock difference between hosts)\n"
	    "  --standby-max-lag DUR\n"
	    "                       read a standby (hot standby) only while it is\n"
	    "                       shown to be at most DUR behind its sender; deltas\n"
	    "                       and heads are dated that far back (default: a\n"
	    "                       standby is refused; see filterbuild(1))\n"
	    "  --subscriber-max-lag DUR\n"
	    "                       read tables a logical replication subscription\n"
	    "                       feeds only while its apply worker is shown to be\n"
	    "                       at most DUR behind its publisher; deltas and\n"
	    "                       heads are dated that far back (default: such a\n"
	    "                       subscriber is refused; see filterbuild(1))\n"
	    "  --lock-name NAME     elect the writer among followers by the\n"
	    "                       advisory lock of NAME (default: of the\n"
	    "                       output directory's identity, DIR/.follow-id)\n"
	    "  --once               publish what is there, then exit\n"
	    "  --listen HOST:PORT   serve /metrics, /healthz, /livez and /readyz\n"
	    "                       there (default: none)\n"
	    "  --log-format FMT     text (default) or json: one JSON object a line\n"
	    "  --scope, --fp-rate, --layout, --keep, --quiet: as for build\n"
	    "                       (--query is build's only: follow reads\n"
	    "                       revcheck_revocations; see filterbuild(1))\n"
	    "  --help               this text\n", fp);
}

/*
 * follow reads the documented table only: a query over other tables
 * would put rows in the base whose changes reach no delta.
 */
static int
follow_no_query(void)
{
	return fb_usage_err("follow", "--query is for a one-shot build "
	    "--source only: follow reads the table " PGSRC_TABLE "; feed it "
	    "from your own table with a trigger or an INSERT ... SELECT "
	    "(docs/OPERATIONS.md, \"Feeding the table from your own\")");
}

/* Parses "100ms" or a util_parse_duration() duration into milliseconds. */
static int
follow_parse_ms(const char *s, int64_t *ms)
{
	size_t n = strlen(s);
	uint64_t u;
	int64_t sec;

	if (n > 2 && strcmp(s + n - 2, "ms") == 0) {
		char buf[32];

		if (n - 2 >= sizeof(buf))
			return -1;
		memcpy(buf, s, n - 2);
		buf[n - 2] = '\0';
		if (util_parse_u64(buf, 86400000, &u) != 0 || u == 0)
			return -1;
		*ms = (int64_t)u;
		return 0;
	}
	if (util_parse_duration(s, &sec) != 0 || sec > 86400)
		return -1;
	*ms = sec * 1000;
	return 0;
}

/* --listen's address parses (said as a usage error when not): 0 or -1. */
static int
follow_listen_ok(const char *s)
{
	struct sockaddr_storage ss;
	unsigned sl;
	char err[256];

	if (netaddr_parse_listen(s, &ss, &sl, err, sizeof(err)) == 0)
		return 0;
	(void)fb_usage_err("follow", "--%s", err);
	return -1;
}

/* --standby-max-lag or --subscriber-max-lag (opt): 0, or the usage error. */
static int
follow_lag_opt(const char *opt, const char *arg, int64_t *lag,
    const char **argp)
{
	if (fb_parse_standby_lag(arg, lag) != 0)
		return fb_usage_err("follow", "%s '%s': want a duration from "
		    "1s to 1d", opt, arg);
	*argp = arg;
	return 0;
}

/* --log-format text|json: 0, or the usage error (printed). */
static int
follow_log_format(const char *f)
{
	if (strcmp(f, "json") != 0 && strcmp(f, "text") != 0)
		return fb_usage_err("follow", "--log-format '%s': want text or "
		    "json", f);
	log_set_json(strcmp(f, "json") == 0);
	return 0;
}

/* What follow_parse checks once every option is read: 0 or FB_EXIT_USAGE. */
static int
follow_check_opts(const struct follow_opts *o)
{
	if (o->source == NULL || o->key == NULL || o->out == NULL)
		return fb_usage_err("follow", "--source, --key and --out are "
		    "required");
	if (o->head_every * 2 > o->valid_for)
		return fb_usage_err("follow", "--head-every must be at most half "
		    "of --valid-for, or idle nodes go stale");
	if ((o->standby_max_lag + o->subscriber_max_lag) * 2 > o->valid_for)
		return fb_usage_err("follow", "--standby-max-lag and "
		    "--subscriber-max-lag together must be at most half of "
		    "--valid-for: what it signs is dated that far back");
	return 0;
}

static int
follow_parse(struct follow_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "source",	  required_argument, NULL, 'S' },
		{ "key",	  required_argument, NULL, 'k' },
		{ "out",	  required_argument, NULL, 'o' },
		{ "interval",	  required_argument, NULL, 'i' },
		{ "valid-for",	  required_argument, NULL, 'v' },
		{ "head-every",	  required_argument, NULL, 'H' },
		{ "rebase-after", required_argument, NULL, 'A' },
		{ "rebase-every", required_argument, NULL, 'E' },
		{ "once",	  no_argument,	     NULL, '1' },
		{ "lock-name",	  required_argument, NULL, 'N' },
		{ "expiry-grace", required_argument, NULL, 'G' },
		{ "standby-max-lag", required_argument, NULL, 'Y' },
		{ "subscriber-max-lag", required_argument, NULL, 'Z' },
		{ "query",	  required_argument, NULL, 'Q' },
		{ "scope",	  required_argument, NULL, 's' },
		{ "fp-rate",	  required_argument, NULL, 'p' },
		{ "layout",	  required_argument, NULL, 'L' },
		{ "keep",	  required_argument, NULL, 'K' },
		{ "quiet",	  no_argument,	     NULL, 'q' },
		{ "listen",	  required_argument, NULL, 'l' },
		{ "log-format",	  required_argument, NULL, 'J' },
		{ "help",	  no_argument,	     NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->interval_ms = 1000;
	o->valid_for = 3600;
	o->head_every = 60;
	o->rebase_every = 86400;
	o->rebase_after = 100000;
	o->grace = FB_EXPIRY_GRACE_DEFAULT;
	fb_getopt_reset();
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'S': o->source = optarg; break;
		case 'k': o->key = optarg; break;
		case 'o': o->out = optarg; break;
		case 'i':
			if (follow_parse_ms(optarg, &o->interval_ms) != 0)
				return fb_usage_err("follow", "--interval '%s': "
				    "want 100ms, 2s, 1m... up to 1d", optarg);
			break;
		case 'v':
			if (util_parse_duration(optarg, &o->valid_for) != 0)
				return fb_usage_err("follow", "--valid-for '%s': "
				    "want a duration such as 15m or 1h", optarg);
			o->valid_for_arg = optarg;
			break;
		case 'H':
			if (util_parse_duration(optarg, &o->head_every) != 0)
				return fb_usage_err("follow", "--head-every '%s': "
				    "want a duration such as 30s", optarg);
			break;
		case 'A':
			if (util_parse_u64(optarg, DELTA_MAX_ENTRIES,
			    &o->rebase_after) != 0 || o->rebase_after == 0)
				return fb_usage_err("follow", "--rebase-after "
				    "'%s': want 1..%" PRIu64, optarg,
				    DELTA_MAX_ENTRIES);
			break;
		case 'E':
			if (strcmp(optarg, "never") == 0)
				o->rebase_every = 0;
			else if (util_parse_duration(optarg,
			    &o->rebase_every) != 0)
				return fb_usage_err("follow", "--rebase-every "
				    "'%s': want a duration or never", optarg);
			break;
		case '1': o->once = true; break;
		case 'N': o->lock_name = optarg; break;
		case 'G':
			if (fb_parse_grace(optarg, &o->grace) != 0)
				return fb_usage_err("follow", "--expiry-grace "
				    "'%s': want a duration up to 1d (0 for none)",
				    optarg);
			o->grace_arg = optarg;
			break;
		case 'Y':
			if (follow_lag_opt("--standby-max-lag", optarg,
			    &o->standby_max_lag, &o->standby_arg) != 0)
				return FB_EXIT_USAGE;
			break;
		case 'Z':
			if (follow_lag_opt("--subscriber-max-lag", optarg,
			    &o->subscriber_max_lag, &o->subscriber_arg) != 0)
				return FB_EXIT_USAGE;
			break;
		case 'Q': return follow_no_query();
		case 's': o->scope = optarg; break;
		case 'p': o->fp_rate = optarg; break;
		case 'L': o->layout = optarg; break;
		case 'K': o->keep = optarg; break;
		case 'q': o->quiet = true; break;
		case 'l':
			if (follow_listen_ok(optarg) != 0)
				return FB_EXIT_USAGE;
			o->listen = optarg;
			break;
		case 'J':
			if (follow_log_format(optarg) != 0)
				return FB_EXIT_USAGE;
			break;
		case 'h': follow_usage(stdout); return -1;
		default: return fb_usage_err("follow", "bad option");
		}
	}
	if (optind < argc)
		return fb_usage_err("follow", "unexpected argument '%s'",
		    argv[optind]);
	return follow_check_opts(o);
}

int
fb_quarantine_write(const char *dir, const struct pgsrc_quarantine *q,
    uint64_t version, int64_t at)
{
	cJSON *root, *arr, *o;
	char *txt = NULL, err[1024];
	size_t i;
	int rc = -1;

	if ((root = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(root, "rows", (double)q->rows) == NULL ||
	    cJSON_AddNumberToObject(root, "version", (double)version) == NULL ||
	    cJSON_AddNumberToObject(root, "updated_at", (double)at) == NULL ||
	    (arr = cJSON_AddArrayToObject(root, "sample")) == NULL)
		goto out;
	for (i = 0; i < q->nsample; i++) {
		if ((o = cJSON_CreateObject()) == NULL)
			goto out;
		cJSON_AddItemToArray(arr, o);
		if (cJSON_AddStringToObject(o, "scope", q->sample[i].scope) ==
		    NULL || cJSON_AddStringToObject(o, "id",
		    q->sample[i].id) == NULL || cJSON_AddStringToObject(o,
		    "why", q->sample[i].why) == NULL)
			goto out;
	}
	if ((txt = cJSON_PrintUnformatted(root)) == NULL)
		goto out;
	if (publish_file(dir, FB_QUARANTINE_NAME, (const unsigned char *)txt,
	    strlen(txt), err, sizeof(err)) != 0) {
		fb_err("%s", err);
		rc = -1;
		goto out_free;
	}
	rc = 0;
	goto out_free;
out:
	fb_err("%s/" FB_QUARANTINE_NAME ": out of memory", dir);
out_free:
	cJSON_free(txt);
	cJSON_Delete(root);
	return rc;
}

/*
 * Adds the rows the round's changes left out (r) to the chain's tally and
 * rewrites the report when there are any.
 */
static void
follow_quarantine_add(struct follow_state *st, const struct follow_opts *o,
    const struct pgsrc_quarantine *r, int64_t at)
{
	size_t i;

	if (r->rows == 0)
		return;
	st->q.rows += r->rows;
	for (i = 0; i < r->nsample && st->q.nsample < PGSRC_QSAMPLE; i++)
		st->q.sample[st->q.nsample++] = r->sample[i];
	(void)fb_quarantine_write(o->out, &st->q, st->pos.base_version, at);
}

static void
follow_state_clear(struct follow_state *st)
{
	ffile_close(st->base);
	memset(st, 0, sizeof(*st));
}

/*
 * Reads the chain of the current base: the base, deltas 1, 2, ... while
 * they exist, verify and link, then the head. st->have is false (and the
 * reason logged) when there is no base, no head, or anything unreadable:
 * the caller re-bases. Returns 0, or -1 on a local error.
 */
struct follow_walk {
	uint64_t	 entries;
	uint64_t	 cursor;
	int64_t		 swept_at;
};

/* delta_chain_walk's callback: sums what the chain holds. */
static int
follow_walked(void *arg, const struct delta *d)
{
	struct follow_walk *w = arg;

	w->entries += delta_info(d)->nentries;
	w->cursor = delta_info(d)->cursor;
	w->swept_at = delta_info(d)->issued_at;
	return 0;
}

/*
 * Opens the current base into st (pos at the base, no delta). Returns 1
 * when it is usable, 0 when there is none or it is not ours (logged), -1
 * on a local error.
 */
static int
follow_open_base(struct follow_state *st, const struct follow_opts *o,
    const struct sign_ring *ring)
{
	char path[4200], err[1024];
	uint64_t version = 0;
	int rc;

	follow_state_clear(st);
	rc = publish_current(o->out, st->vdir, sizeof(st->vdir), &version, err,
	    sizeof(err));
	if (rc != 0) {
		if (rc < 0)
			log_warn("follow: %s", err);
		return 0;
	}
	if ((size_t)snprintf(st->ddir, sizeof(st->ddir), "%s/" DELTA_DIR,
	    st->vdir) >= sizeof(st->ddir) ||
	    (size_t)snprintf(path, sizeof(path), "%s/" PUBLISH_FILTER_NAME,
	    st->vdir) >= sizeof(path)) {
		log_err("follow: %s: path too long", st->vdir);
		return -1;
	}
	st->base = ffile_open(path, err, sizeof(err));
	if (st->base == NULL || ffile_verify(st->base, ring, err,
	    sizeof(err)) != 0) {
		log_warn("follow: base %" PRIu64 " not usable (%s): re-basing",
		    version, err);
		return 0;
	}
	st->pos.base_version = ffile_info(st->base)->version;
	memcpy(st->pos.base_sha256, ffile_sha256(st->base), 32);
	memcpy(st->pos.last_sha256, st->pos.base_sha256, 32);
	st->base_at = ffile_info(st->base)->issued_at;
	st->swept_at = st->base_at;
	return 1;
}

/*
 * Reads the current base and its chain into st. st->have is false (the
 * reason logged) when there is no base, no head, or a broken chain: the
 * caller re-bases. Returns 0, or -1 on a local error.
 */
static int
follow_load(struct follow_state *st, const struct follow_opts *o,
    const struct sign_ring *ring)
{
	struct follow_walk w = { 0, 0, 0 };
	struct delta *head = NULL;
	uint64_t cursor, head_seq;
	char err[1024];
	int rc;

	if ((rc = follow_open_base(st, o, ring)) <= 0)
		return rc;
	w.swept_at = st->swept_at;
	if (delta_chain_walk(st->ddir, ring, &st->pos, follow_walked, &w,
	    &head, &head_seq, err, sizeof(err)) != 0) {
		log_warn("follow: %s: re-basing", err);
		return 0;
	}
	st->chain_entries = w.entries;
	st->swept_at = w.swept_at;
	cursor = w.cursor;
	if (head != NULL) {
		cursor = delta_info(head)->cursor;
		st->head_at = delta_info(head)->issued_at;
		delta_free(head);
	} else if (st->pos.seq == 0 || head_seq != st->pos.seq - 1) {
		/* Only a kill between a delta and its head leaves no head. */
		log_warn("follow: base %" PRIu64 ": no head for delta %" PRIu64
		    ": re-basing", st->pos.base_version, st->pos.seq);
		return 0;
	}
	st->cursor = cursor;
	st->have = true;
	return 0;
}

/*
 * Signs and writes the head for where the chain stands, complete as of
 * `at`: the time of the read it follows (never the time of signing, which
 * is later than what the read showed). 0 or -1.
 */
static int
follow_head(struct follow_state *st, const struct follow_opts *o,
    EVP_PKEY *key, int64_t at)
{
	struct delta_info in;
	unsigned char *buf = NULL;
	size_t len;
	char err[1024];

	memset(&in, 0, sizeof(in));
	in.kind = DELTA_KIND_HEAD;
	in.base_version = st->pos.base_version;
	memcpy(in.base_sha256, st->pos.base_sha256, 32);
	in.seq = st->pos.seq;
	memcpy(in.prev_sha256, st->pos.last_sha256, 32);
	in.issued_at = at;
	in.expires_at = in.issued_at + o->valid_for;
	in.cursor = st->cursor;
	if (delta_encode(&in, NULL, 0, key, &buf, &len, err, sizeof(err)) != 0 ||
	    publish_file(st->ddir, DELTA_HEAD_NAME, buf, len, err,
	    sizeof(err)) != 0) {
		log_err("follow: head: %s", err);
		free(buf);
		return -1;
	}
	free(buf);
	st->head_at = in.issued_at;
	return 0;
}

/* delta_chain_walk's callback: the overlay takes each delta. */
static int
follow_overlay_apply(void *arg, const struct delta *d)
{
	return overlay_apply(arg, d);
}

/*
 * What nodes enforce now, per scope: the base's key counts, plus each key
 * the chain added that the base's table lacks, less each key it removed
 * that the table holds. *eff is the base's header with these counts in
 * *scopes (caller frees). 0, or -1 (logged) when the table or chain
 * cannot be read: the caller then compares with the base alone.
 */
static int
follow_enforced(const struct follow_state *st, const struct sign_ring *ring,
    struct ffile_info *eff, struct ffile_scope **scopes)
{
	const struct ffile_info *bi = ffile_info(st->base);
	const struct ffile_scope *bs;
	struct delta_pos pos = st->pos;
	struct overlay *ov = NULL;
	struct table *tab = NULL;
	struct table_rec rec;
	struct ffile_scope *sc = NULL;
	struct delta *head = NULL;
	uint64_t head_seq;
	unsigned char sha[32];
	char path[4200], err[1024];
	size_t it = 0, i;
	int op, in, rc = -1;

	/* From the base itself, not where the chain stands. */
	pos.seq = 0;
	memcpy(pos.last_sha256, pos.base_sha256, 32);
	if ((size_t)snprintf(path, sizeof(path), "%s/" PUBLISH_TABLE_NAME,
	    st->vdir) >= sizeof(path) || util_sha256_file(path, sha, err,
	    sizeof(err)) != 0 || memcmp(sha, bi->table_sha256, 32) != 0 ||
	    (tab = table_open(path, err, sizeof(err))) == NULL) {
		log_warn("follow: %s: not the base's table", path);
		goto out;
	}
	if ((ov = overlay_new()) == NULL || (sc = calloc(bi->nscopes > 0 ?
	    bi->nscopes : 1, sizeof(*sc))) == NULL ||
	    delta_chain_walk(st->ddir, ring, &pos, follow_overlay_apply, ov,
	    &head, &head_seq, err, sizeof(err)) != 0) {
		log_warn("follow: counting what the chain enforces: %s",
		    ov == NULL ? "no memory or no random seed for the overlay" :
		    sc == NULL ? "out of memory" : err);
		goto out;
	}
	memcpy(sc, bi->scopes, bi->nscopes * sizeof(*sc));
	while ((op = overlay_next(ov, &it, &rec)) != 0) {
		if ((bs = ffile_scope(st->base, rec.key.scope)) == NULL ||
		    (in = table_lookup(tab, &rec.key, NULL)) < 0)
			continue;
		i = (size_t)(bs - bi->scopes);
		if (op == DELTA_ADD && in == 0)
			sc[i].keys++;
		else if (op == DELTA_REMOVE && in == 1 && sc[i].keys > 0)
			sc[i].keys--;
	}
	*eff = *bi;
	eff->scopes = sc;
	*scopes = sc;
	sc = NULL;
	rc = 0;
out:
	free(sc);
	delta_free(head);
	overlay_free(ov);
	table_close(tab);
	return rc;
}

/*
 * Set when pgsrc_check_replication() refused: rows a subscription's apply
 * worker wrote meanwhile are in no change, and the fix (the trigger made
 * ALWAYS, or the subscription dropped) need not touch the trigger, so
 * the first round that passes re-bases. Cleared by a re-base.
 */
static bool	follow_repl_rebase;
/* The last warning of pgsrc_check_replication() logged. */
static char	follow_repl_said[1024];

/* A full build from the source, then the head of its empty chain. */
static int
follow_rebase(struct follow_state *st, const struct follow_opts *o,
    EVP_PKEY *key, const struct sign_ring *ring)
{
	char *args[FOLLOW_MAX_ARGS];
	struct ffile_info eff;
	struct ffile_scope *scopes = NULL;
	struct fb_built res;
	int n = 0, rc;

#define ARG(x)		(args[n++] = (char *)(x))
#define OPT(f, v)	do { if ((v) != NULL) { ARG(f); ARG(v); } } while (0)
	ARG("build");
	OPT("--key", o->key);
	OPT("--out", o->out);
	OPT("--source", o->source);
	OPT("--scope", o->scope);
	OPT("--fp-rate", o->fp_rate);
	OPT("--layout", o->layout);
	OPT("--keep", o->keep);
	OPT("--valid-for", o->valid_for_arg);
	OPT("--expiry-grace", o->grace_arg);
	OPT("--standby-max-lag", o->standby_arg);
	OPT("--subscriber-max-lag", o->subscriber_arg);
	if (o->quiet)
		ARG("--quiet");
	args[n] = NULL;
#undef OPT
#undef ARG
	/* Compared with what the chain enforces, not with its base. */
	rc = fb_build_source(n, args, st->have && follow_enforced(st, ring,
	    &eff, &scopes) == 0 ? &eff : NULL, &res);
	free(scopes);
	if (rc != FB_EXIT_OK)
		return -1;
	if (follow_open_base(st, o, ring) <= 0 ||
	    ffile_info(st->base)->version != res.version) {
		log_err("follow: version %" PRIu64 " was published but is not "
		    "current", res.version);
		return -1;
	}
	/*
	 * Not yet "have": the chain becomes usable once its head is written.
	 * The head says what the base's read showed: complete as of its
	 * issued_at (the build's time, less a standby's or subscriber's lag).
	 */
	st->cursor = res.cursor;
	st->q = res.q;
	if (follow_head(st, o, key, ffile_info(st->base)->issued_at) != 0)
		return -1;
	st->have = true;
	follow_repl_rebase = false;
	if (!o->quiet)
		log_info("follow: re-based: version %" PRIu64 ", %zu keys, "
		    "cursor %" PRIu64, res.version, res.keys, res.cursor);
	return 0;
}

/*
 * A new zeroed entry at the end of the batch (counted by follow_count),
 * or NULL with err when memory runs out.
 */
static struct delta_entry *
follow_push(struct follow_batch *b, char *err, size_t errlen)
{
	struct delta_entry *nv;
	size_t ncap;

	if (b->n == b->cap) {
		ncap = b->cap == 0 ? 64 : b->cap * 2;
		if (ncap > SIZE_MAX / sizeof(*nv) ||
		    (nv = realloc(b->v, ncap * sizeof(*nv))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		b->v = nv;
		b->cap = ncap;
	}
	memset(&b->v[b->n], 0, sizeof(b->v[b->n]));
	return &b->v[b->n];
}

/* Counts the entry follow_push() returned; past --rebase-after, re-base. */
static void
follow_count(struct follow_batch *b)
{
	b->n++;
	if (b->st->chain_entries + b->n > b->o->rebase_after)
		b->rebase = true;
}

/* Turns entry e into the removal of its key. */
static void
follow_removal(struct delta_entry *e)
{
	e->op = DELTA_REMOVE;
	e->rec.revoked_at = 0;
	e->rec.reason[0] = '\0';
}

/* pgsrc_change_fn: collects a change as a delta entry. */
static int
follow_change(void *arg, const struct pgsrc_change *c, char *err,
    size_t errlen)
{
	struct follow_batch *b = arg;
	struct delta_entry *e;
	char e2[512];

	if (c->changed_at > b->changed_at)
		b->changed_at = c->changed_at;
	if (b->rebase)
		return 0;
	if ((e = follow_push(b, err, errlen)) == NULL)
		return -1;
	if (input_row_rec(&c->row, NULL, &e->rec, e2, sizeof(e2)) != 0) {
		snprintf(err, errlen, "change of id \"%.*s\": %s",
		    (int)(c->row.id_len > 64 ? 64 : c->row.id_len), c->row.id,
		    e2);
		return -1;
	}
	if (ffile_scope(b->st->base, e->rec.key.scope) == NULL) {
		/* Only a base says which scopes are covered. */
		b->rebase = true;
		return 0;
	}
	/* An add that has already expired needs no revocation. */
	if (c->removed || (c->expires_at != 0 && c->expires_at <= b->cut))
		follow_removal(e);
	else
		e->op = DELTA_ADD;
	follow_count(b);
	return 0;
}

/*
 * pgsrc_row_fn of the expiry sweep: a row whose expires_at passed since
 * the last sweep becomes the removal of its key. A row no build or change
 * could take (a bad value, a scope the base does not cover) was never
 * published, so there is nothing to remove.
 */
static int
follow_expired(void *arg, const struct input_row *row, char *err,
    size_t errlen)
{
	struct follow_batch *b = arg;
	struct table_rec rec;
	struct delta_entry *e;
	char e2[512];

	if (b->rebase || input_row_rec(row, b->o->scope, &rec, e2,
	    sizeof(e2)) != 0 || ffile_scope(b->st->base, rec.key.scope) == NULL)
		return 0;
	if ((e = follow_push(b, err, errlen)) == NULL)
		return -1;
	e->rec = rec;
	follow_removal(e);
	follow_count(b);
	return 0;
}

/* The keys a batch removes, and what the source still holds for them. */
struct follow_live {
	const struct revkey **keys;	/* sorted, unique */
	struct table_rec *found;	/* per key: the row(s) in force */
	bool		*have;
	size_t		 n;
	const char	*scope;		/* of a row without one */
};

/* qsort/bsearch comparator of revkey pointers. */
static int
follow_key_cmp(const void *a, const void *b)
{
	return revkey_cmp(*(const struct revkey *const *)a,
	    *(const struct revkey *const *)b);
}

/*
 * pgsrc_row_fn of the recheck: a row in force whose key is one being
 * removed keeps it revoked. Of several rows, the earliest known
 * revoked_at and the first reason win, as a build merges rows; but of
 * subject or session cutoffs the latest, since a later cutoff revokes
 * more tokens. Such a row that cannot be read is an error, as it would
 * stop a build.
 */
static int
follow_live_row(void *arg, const struct input_row *row, char *err,
    size_t errlen)
{
	struct follow_live *l = arg;
	const struct revkey *kp, *const *hit;
	struct table_rec rec, *f;
	char e2[512];
	size_t j;

	if (input_row_rec(row, l->scope, &rec, e2, sizeof(e2)) != 0) {
		snprintf(err, errlen, "a row in force for a removed key, id "
		    "\"%.*s\": %s", (int)(row->id_len > 64 ? 64 : row->id_len),
		    row->id, e2);
		return -1;
	}
	kp = &rec.key;
	hit = bsearch(&kp, l->keys, l->n, sizeof(*l->keys), follow_key_cmp);
	if (hit == NULL)
		return 0;	/* another serial with the same digits */
	j = (size_t)(hit - l->keys);
	f = &l->found[j];
	if (!l->have[j]) {
		*f = rec;
		l->have[j] = true;
		return 0;
	}
	f->revoked_at = table_merge_revoked(rec.key.scope, f->revoked_at,
	    rec.revoked_at);
	if (f->reason[0] == '\0')
		memcpy(f->reason, rec.reason, sizeof(f->reason));
	return 0;
}

/*
 * A removal (a deleted row, an update, an expiry) must never release a
 * key that the source still revokes through another row: another
 * spelling of the same serial ("0A", "0a", "00:0a"). Inside the round's
 * snapshot, every key the batch removes is looked up among the rows in
 * force; a key that has one gets an add after its removal (the last
 * entry of a key wins). Without the recheck statement, a batch with a
 * removal re-bases instead. Returns 0, or -1 with err.
 */
static int
follow_recheck(struct follow_batch *b, struct pgsrc *p, char *err,
    size_t errlen)
{
	struct follow_live l;
	struct delta_entry *e;
	size_t i, m = 0, nfound = 0;
	int rc = -1;

	memset(&l, 0, sizeof(l));
	for (i = 0; i < b->n; i++)
		m += b->v[i].op == DELTA_REMOVE;
	if (m == 0 || b->rebase)
		return 0;
	l.keys = calloc(m, sizeof(*l.keys));
	l.found = calloc(m, sizeof(*l.found));
	l.have = calloc(m, sizeof(*l.have));
	if (l.keys == NULL || l.found == NULL || l.have == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < b->n; i++)
		if (b->v[i].op == DELTA_REMOVE)
			l.keys[l.n++] = &b->v[i].rec.key;
	qsort(l.keys, l.n, sizeof(*l.keys), follow_key_cmp);
	for (i = 0, m = 0; i < l.n; i++)
		if (m == 0 || follow_key_cmp(&l.keys[m - 1], &l.keys[i]) != 0)
			l.keys[m++] = l.keys[i];
	l.n = m;
	/* Only a key whose last entry is a removal is released by the delta. */
	for (i = 0; i < b->n; i++) {
		const struct revkey *kp = &b->v[i].rec.key, **hit;

		hit = bsearch(&kp, l.keys, l.n, sizeof(*l.keys),
		    follow_key_cmp);
		if (hit != NULL)
			l.have[hit - l.keys] = b->v[i].op == DELTA_REMOVE;
	}
	for (i = 0, m = 0; i < l.n; i++)
		if (l.have[i])
			l.keys[m++] = l.keys[i];
	l.n = m;
	memset(l.have, 0, m * sizeof(*l.have));
	if (l.n == 0) {
		rc = 0;
		goto out;
	}
	if (!(b->can & PGSRC_CAN_RECHECK)) {
		b->rebase = true;
		rc = 0;
		goto out;
	}
	l.scope = b->o->scope != NULL ? b->o->scope : REVKEY_DEFAULT_SCOPE;
	if (pgsrc_read_live(p, l.keys, l.n, l.scope, b->cut, follow_live_row,
	    &l, err, errlen) != 0)
		goto out;
	/* l.keys point into b->v, which follow_push may move: not used below. */
	for (i = 0; i < l.n; i++)
		if (l.have[i])
			l.found[nfound++] = l.found[i];
	for (i = 0; i < nfound; i++) {
		if ((e = follow_push(b, err, errlen)) == NULL)
			goto out;
		e->op = DELTA_ADD;
		e->rec = l.found[i];
		follow_count(b);
	}
	if (nfound > 0 && !b->o->quiet)
		log_info("follow: %zu removed key(s) still revoked by another "
		    "row in force: kept", nfound);
	rc = 0;
out:
	free(l.keys);
	free(l.found);
	free(l.have);
	return rc;
}

/* Signs and writes delta seq + 1, then its head. 0 or -1. */
static int
follow_delta(struct follow_state *st, const struct follow_opts *o,
    EVP_PKEY *key, const struct follow_batch *b, uint64_t horizon)
{
	char name[DELTA_NAME_LEN + 1], err[1024], path[4200];
	unsigned char *buf = NULL, sha[32];
	struct delta_info in;
	size_t len;
	int lost;

	memset(&in, 0, sizeof(in));
	in.kind = DELTA_KIND_DELTA;
	in.base_version = st->pos.base_version;
	memcpy(in.base_sha256, st->pos.base_sha256, 32);
	in.seq = st->pos.seq + 1;
	memcpy(in.prev_sha256, st->pos.last_sha256, 32);
	/* The round's time: the sweep went this far (see the top). */
	in.issued_at = b->now;
	in.expires_at = in.issued_at + o->valid_for;
	in.cursor = horizon;
	in.changed_at = b->changed_at;
	delta_file_name(name, in.seq);
	errno = 0;
	/* Linked, never renamed over: one (base, seq), one delta (leader.h). */
	if (util_path_join(path, sizeof(path), st->ddir, name) != 0 ||
	    delta_encode(&in, b->v, b->n, key, &buf, &len, err,
	    sizeof(err)) != 0 || util_sha256(sha, buf, len) != 0 ||
	    publish_path(path, buf, len, 0644, PUBLISH_EXCL, err,
	    sizeof(err)) != 0) {
		lost = errno == EEXIST;
		log_err("follow: delta %" PRIu64 ": %s", in.seq, err);
		if (lost)
			leader_step_down(o->ld, "another follower published "
			    "the same delta");
		free(buf);
		return -1;
	}
	free(buf);
	st->pos.seq = in.seq;
	memcpy(st->pos.last_sha256, sha, 32);
	st->cursor = horizon;
	st->swept_at = in.issued_at;
	st->chain_entries += b->n;
	if (!o->quiet)
		log_info("follow: published delta %" PRIu64 " of base %" PRIu64
		    ": %zu changes, %zu bytes", in.seq, in.base_version, b->n,
		    len);
	/* A missing head only costs freshness: the delta is durable. */
	(void)follow_head(st, o, key, in.issued_at);
	return 0;
}

/*
 * True when the base is near its own expires_at. Heads keep the chain
 * fresh past it, but a node that comes up (or falls behind) fetches the
 * base first and refuses an expired one, and an origin does not serve
 * it: without a valid base a new edge cannot start. So re-base while the
 * base still has a quarter of --valid-for (at least one head interval)
 * left, whatever --rebase-every says: a node that fetched the old base
 * just before still has time to move to the new one.
 */
static bool
follow_base_expiring(const struct follow_state *st,
    const struct follow_opts *o, int64_t now)
{
	int64_t margin = o->valid_for / 4;

	if (margin < o->head_every)
		margin = o->head_every;
	return ffile_info(st->base)->expires_at - now <= margin;
}

/*
 * A standby or subscriber refused round by round: said when it starts,
 * then twice a minute.
 */
static bool	follow_sb_refusing;
static int64_t	follow_sb_said;

/*
 * How far behind the source may be, asked before the round's snapshot is
 * taken (replay only moves forward, and what an apply worker committed
 * stays: the snapshot holds at least what the answer shows). 0 with *lag
 * (seconds; 0 for a primary that subscribes to nothing it reads), or -1
 * (logged): a standby not shown within --standby-max-lag, a subscription
 * feeding its tables not shown within --subscriber-max-lag, or the
 * question failed.
 */
static int
follow_source_lag(const struct follow_opts *o, struct pgsrc *p, int64_t *lag)
{
	char err[1024];
	int64_t now = util_now(), slag;
	int v;

	v = pgsrc_check_standby(p, o->standby_max_lag, lag, NULL, err,
	    sizeof(err));
	if (v == PGSRC_SB_PRIMARY || v == PGSRC_SB_CURRENT) {
		v = pgsrc_check_subscriber(p, o->subscriber_max_lag, false,
		    &slag, err, sizeof(err));
		if (v == PGSRC_SUB_NONE || v == PGSRC_SUB_CURRENT) {
			*lag += slag;
			if (follow_sb_refusing && !o->quiet)
				log_info("follow: the source is shown within "
				    "its bound again (%" PRId64 " s behind): "
				    "publishing", *lag);
			follow_sb_refusing = false;
			return 0;
		}
	}
	if (!follow_sb_refusing || now - follow_sb_said >= 30) {
		log_err("follow: %s: nothing is published (nodes go stale)",
		    err);
		follow_sb_said = now;
	}
	follow_sb_refusing = true;
	return -1;
}

/*
 * pgsrc_check_replication(), logging its warning at the first connection
 * and whenever it changes. 0, or -1 with err (and a re-base due).
 */
static int
follow_check_replication(struct pgsrc *p, char *err, size_t errlen)
{
	char warn[1024];

	if (pgsrc_check_replication(p, warn, sizeof(warn), err, errlen) != 0) {
		follow_repl_rebase = true;
		return -1;
	}
	if (warn[0] != '\0' && strcmp(warn, follow_repl_said) != 0)
		log_warn("follow: %s", warn);
	snprintf(follow_repl_said, sizeof(follow_repl_said), "%s", warn);
	return 0;
}

/*
 * One round: read the changes since the cursor and publish them as a
 * delta (or re-base). Returns 0; 1 when the source is a standby or
 * subscriber not shown to be current (nothing published, the connection
 * kept); -1 when the connection must be dropped.
 */
static int
follow_round(struct follow_state *st, const struct follow_opts *o,
    EVP_PKEY *key, const struct sign_ring *ring, struct pgsrc *p, int can)
{
	struct follow_batch b;
	uint64_t horizon = st->cursor;
	char err[1024];
	bool changed = false, refused = false, advanced = true;
	int64_t lag, wall;
	int rc = 0, r;

	memset(&b, 0, sizeof(b));
	b.st = st;
	b.o = o;
	b.can = can;
	b.now = wall = util_now();
	/*
	 * The round's time is the time its data is complete as of: on a
	 * standby, that far back (its deltas and heads say no more than
	 * the standby shows, and expiries are judged at that time too).
	 */
	/*
	 * The trigger's mode first (again in the snapshot below): a round
	 * the source's lag refuses must still see a subscription that
	 * writes rows no trigger logs, so that a re-base is due once it is
	 * gone; else those rows would be in no change.
	 */
	if (follow_check_replication(p, err, sizeof(err)) != 0) {
		log_err("follow: %s", err);
		return -1;
	}
	if (follow_source_lag(o, p, &lag) != 0)
		return pgsrc_ok(p) ? 1 : -1;
	b.now -= lag;
	b.cut = b.now - o->grace;
	/* Changes, expiries and rechecks all read one snapshot. */
	pgsrc_quarantine_clear(p);
	r = pgsrc_snapshot_begin(p, st->cursor, &horizon, err, sizeof(err));
	if (r == 0) {
		/*
		 * Rows written while the trigger did not log them are in no
		 * change: refuse while it does not, and re-base (a full read)
		 * once it was altered since the cursor.
		 */
		r = pgsrc_check_trigger(p, st->cursor, &changed, err,
		    sizeof(err));
		/*
		 * And in every session that writes them: an apply worker
		 * does not fire a trigger in the default mode.
		 */
		if (r == 0)
			r = follow_check_replication(p, err, sizeof(err));
		refused = r != 0;
		if (r == 0 && follow_repl_rebase) {
			if (!o->quiet)
				log_info("follow: the replication check "
				    "passes again: re-basing (rows written "
				    "while it refused are in no change)");
			b.rebase = true;
		}
		if (changed) {
			if (!o->quiet)
				log_info("follow: the trigger " PGSRC_TRIGGER
				    " or its function changed since cursor %"
				    PRIu64 ": re-basing", st->cursor);
			b.rebase = true;
		}
		if (r == 0 && !b.rebase)
			r = pgsrc_read_changes(p, st->cursor, horizon,
			    follow_change, &b, err, sizeof(err));
		if (r == 0 && !b.rebase && (can & PGSRC_CAN_SWEEP))
			r = pgsrc_read_expired(p, st->swept_at - o->grace, b.cut,
			    follow_expired, &b, err, sizeof(err));
		if (r == 0)
			r = follow_recheck(&b, p, err, sizeof(err));
		r = pgsrc_snapshot_end(p, r, err, sizeof(err));
	}
	if (r != 0 && refused) {
		/* Nothing is published; the connection check takes over. */
		log_err("follow: %s", err);
		rc = -1;
		goto out;
	}
	if (r != 0) {
		log_err("follow: %s", err);
		/*
		 * A value refused while the connection is fine stays in the
		 * change log: only a re-base, which succeeds once the row is
		 * fixed or deleted, moves past it. Until then nothing is
		 * published and nodes go stale: closed, not open.
		 */
		if (pgsrc_ok(p) && follow_rebase(st, o, key, ring) != 0)
			st->have = false;
		rc = pgsrc_ok(p) ? 0 : -1;
		goto out;
	}
	if (b.rebase || (o->rebase_every > 0 && b.now - st->base_at >=
	    o->rebase_every) || follow_base_expiring(st, o, wall)) {
		if (follow_rebase(st, o, key, ring) != 0)
			st->have = false;
		goto out;
	}
	/*
	 * A delta that cannot be written leaves the cursor (and the sweep)
	 * where it was: the next round reads the same changes again.
	 */
	if (b.n > 0)
		advanced = follow_delta(st, o, key, &b, horizon) == 0;
	else
		st->cursor = horizon;	/* nothing of ours committed */
	/* Counted once: a round that published nothing reads them again. */
	if (advanced)
		follow_quarantine_add(st, o, pgsrc_quarantined(p), b.now);
	if (b.n == 0 && b.now - st->head_at >= o->head_every)
		(void)follow_head(st, o, key, b.now);
out:
	free(b.v);
	return rc;
}

/*
 * Says once per connection what the source's table does not allow: then
 * expired rows leave at re-bases only, or every removal re-bases.
 */
static void
follow_caps_log(int can, const char *why)
{
	if (!(can & PGSRC_CAN_RECHECK))
		log_err("follow: every removal re-bases (removals cannot be "
		    "rechecked: %s)", why);
	else if (!(can & PGSRC_CAN_SWEEP))
		log_warn("follow: expired rows leave at re-bases only (%s)",
		    why);
}

/*
 * At every connection: a standby is refused unless --standby-max-lag
 * allows one and this role can read how far behind it is, and so are
 * tables a logical replication subscription feeds unless
 * --subscriber-max-lag allows it (whether they are close enough is asked
 * again every round). A primary is LISTENed on; a standby cannot LISTEN,
 * and is read every --interval. 0, or -1 with err.
 */
static int
follow_connect_source(const struct follow_opts *o, struct pgsrc *p, char *err,
    size_t errlen)
{
	bool standby = false;
	int64_t lag;
	int v;

	v = pgsrc_check_standby(p, o->standby_max_lag, &lag, &standby, err,
	    errlen);
	if (v < 0 || v == PGSRC_SB_NOT_ALLOWED || v == PGSRC_SB_NO_PRIVILEGE)
		return -1;
	v = pgsrc_check_subscriber(p, o->subscriber_max_lag, false, &lag,
	    err, errlen);
	if (v < 0 || v == PGSRC_SUB_NOT_ALLOWED || v == PGSRC_SUB_NO_PRIVILEGE)
		return -1;
	if (v != PGSRC_SUB_NONE && !o->quiet)
		log_info("follow: the source's tables are fed by a logical "
		    "replication subscription: rounds publish only while its "
		    "apply worker is shown within %" PRId64 " s of its "
		    "publisher", o->subscriber_max_lag);
	if (!standby)
		return pgsrc_listen(p, err, errlen);
	if (!o->quiet)
		log_info("follow: the source is a standby, read every "
		    "--interval (no LISTEN there); rounds publish only while "
		    "it is shown within %" PRId64 " s of its sender",
		    o->standby_max_lag);
	return 0;
}

/*
 * Connects to the source and checks it as every connection must (the
 * trigger's mode before the source's lag: a subscription writing rows no
 * trigger logs must be seen, and a re-base made due, even while the lag
 * refuses, or once it is gone its rows would be in no change), then
 * prepares the sweep and the recheck (*can). The connection, or NULL
 * (logged, saying the retry comes in backoff seconds).
 */
static struct pgsrc *
follow_open(const struct follow_opts *o, int *can, int backoff)
{
	struct pgsrc *p;
	char err[1024];

	p = pgsrc_connect(o->source, err, sizeof(err));
	if (p == NULL || follow_check_replication(p, err, sizeof(err)) != 0 ||
	    follow_connect_source(o, p, err, sizeof(err)) != 0 ||
	    pgsrc_check_trigger(p, 0, NULL, err, sizeof(err)) != 0 ||
	    (*can = pgsrc_prepare_rows(p, NULL, err, sizeof(err))) < 0) {
		log_err("follow: %s (retrying in %d s)", err, backoff);
		pgsrc_close(p);
		return NULL;
	}
	follow_caps_log(*can, err);
	return p;
}

/*
 * Reads the chain on disk, as a follower does when it starts and each
 * time it becomes the writer. 0, or -1 on a local error.
 */
static int
follow_resume(struct follow_state *st, const struct follow_opts *o,
    const struct sign_ring *ring)
{
	if (follow_load(st, o, ring) != 0)
		return -1;
	/*
	 * A head lost to a kill after its delta is written by the first
	 * round (head_at is 0), not here: a head says the chain is complete
	 * as of now, which only a read of the source tells. Signed at every
	 * start, a follower restarted while the database is out of reach
	 * kept the nodes fresh.
	 */
	if (st->have && !o->quiet)
		log_info("follow: resuming base %" PRIu64 " at delta %" PRIu64
		    ", cursor %" PRIu64, st->pos.base_version, st->pos.seq,
		    st->cursor);
	return 0;
}

/* What --listen's /metrics and /readyz report: st, and the source's state. */
static void
follow_report(const struct follow_state *st, const struct follow_opts *o,
    bool connected)
{
	struct followhttp_state h;

	memset(&h, 0, sizeof(h));
	h.have = st->have;
	h.connected = connected;
	h.base_version = st->pos.base_version;
	h.seq = st->pos.seq;
	h.chain_entries = st->chain_entries;
	h.cursor = st->cursor;
	h.quarantined = st->q.rows;
	h.base_at = st->base_at;
	h.head_at = st->head_at;
	h.head_every = o->head_every;
	h.leader = leader_held(o->ld);
	h.ld = o->ld;
	h.handovers = leader_handovers(o->ld);
	followhttp_set(&h);
}

/* Sleeps up to secs seconds, or less when told to stop. */
static void
follow_sleep(int secs)
{
	int i;

	for (i = 0; i < secs * 10 && !follow_stop; i++)
		(void)usleep(100000);
}

int
fb_follow(int argc, char **argv)
{
	struct follow_opts o;
	struct follow_state st;
	struct sign_ring ring;
	struct sigaction sa;
	struct pgsrc *p = NULL;
	EVP_PKEY *key = NULL;
	char err[1024];
	int r, rc, backoff = 1, can = 0, ret = FB_EXIT_FAIL;

	rc = follow_parse(&o, argc, argv);
	if (rc != 0)
		return rc < 0 ? FB_EXIT_OK : rc;
	memset(&st, 0, sizeof(st));
	sign_ring_init(&ring);
	if ((key = fb_load_signer(&ring, o.key)) == NULL)
		goto out;

	/* One writer per directory: the others stand by (leader.h). */
	if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
		fb_err("%s: %s", o.out, strerror(errno));
		goto out;
	}
	if ((o.ld = leader_new(o.source, o.out, o.lock_name, o.quiet, err,
	    sizeof(err))) == NULL) {
		fb_err("%s: %s", o.out, err);
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = follow_on_signal;	/* no SA_RESTART: poll returns */
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);

	if (o.listen != NULL &&
	    followhttp_start(o.listen, err, sizeof(err)) != 0) {
		fb_err("follow: %s", err);
		goto out;
	}
	while (!follow_stop) {
		follow_report(&st, &o, p != NULL);
		if (!leader_held(o.ld)) {
			/* The chain on disk is where a new writer starts. */
			pgsrc_close(p);
			p = NULL;
			follow_state_clear(&st);
			if (leader_acquire(o.ld, !o.once, &follow_stop) == 0)
				goto out_stop;
			/* The source is read while the fence runs. */
			p = follow_open(&o, &can, backoff);
			if (leader_fence(o.ld, &follow_stop) == 0)
				continue;
			if (follow_resume(&st, &o, &ring) != 0)
				goto out;
		}
		if (p == NULL) {
			if ((p = follow_open(&o, &can, backoff)) == NULL) {
				if (o.once)
					goto out;
				follow_sleep(backoff);
				if (backoff < FOLLOW_BACKOFF_MAX)
					backoff *= 2;
				continue;
			}
			backoff = 1;
		}
		if (!st.have) {
			if (follow_rebase(&st, &o, key, &ring) != 0) {
				st.have = false;
				if (o.once)
					goto out;
				follow_sleep(backoff);
				continue;
			}
		} else if ((r = follow_round(&st, &o, key, &ring, p,
		    can)) < 0) {
			pgsrc_close(p);
			p = NULL;
			if (o.once)
				goto out;
			continue;
		} else if (r > 0 && o.once) {
			goto out;	/* a source not shown current */
		}
		if (o.once) {
			ret = st.have ? FB_EXIT_OK : FB_EXIT_FAIL;
			goto out;
		}
		/* A notification, the interval, or a signal ends the wait. */
		if (pgsrc_wait(p, (int)o.interval_ms, err, sizeof(err)) < 0) {
			log_err("follow: %s", err);
			pgsrc_close(p);
			p = NULL;
		}
	}
out_stop:
	ret = follow_stop ? FB_EXIT_OK : FB_EXIT_FAIL;
out:
	followhttp_stop();
	pgsrc_close(p);
	follow_state_clear(&st);
	leader_free(o.ld);
	sign_ring_free(&ring);
	EVP_PKEY_free(key);
	return ret;
}
