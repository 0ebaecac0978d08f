/* config.c - revcheckd settings: defaults, the JSON config file, command-line flags */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "config_json.h"
#include "config_trust.h"
#include "ffile.h"
#include "log.h"
#include "revkey.h"
#include "sync.h"
#include "upstream.h"
#include "util.h"

enum opt_type {
	OPT_STR,	/* a non-empty string */
	OPT_DUR,	/* a duration: seconds or "15m"; "0" when zero_ok */
	OPT_U64,	/* an unsigned integer up to max */
	OPT_UINT,	/* an unsigned int up to max */
	OPT_KEYS,	/* one path or (in the file) an array of paths */
	OPT_NOTCOV,	/* "deny" or "allow" */
	OPT_LEVEL,	/* "err", "warn", "info", "debug" */
	OPT_BOOL,	/* true/false (a bare flag is true) */
	OPT_LOGFMT,	/* "text" or "json" */
	OPT_TOKMODE,	/* "required" or "revocation-only" */
};

/* Which mode a key makes sense in (config_validate() refuses the rest). */
enum opt_need {
	NEED_ANY = 0,
	NEED_EDGE,	/* needs upstream_filter */
	NEED_AUTHORITY,	/* bounds upstream_check, so needs it */
};

/*
 * One row per setting, the only place its default, range and help live:
 * config_init() applies def, config_from_args() reads key as a flag and
 * config_usage() prints arg, help and def. min and max bound OPT_U64 and
 * OPT_UINT; for OPT_DUR, min 0 allows "0" and a max other than 0 bounds
 * the duration to min..max seconds. A NULL def leaves the zero of
 * config_init(); an OPT_STR def is filled in only after the file and the
 * flags, when neither set it.
 */
struct opt {
	const char	*key;		/* config key; the flag is the same with '-' */
	enum opt_type	 type;
	size_t		 off;
	uint64_t	 min;
	uint64_t	 max;
	enum opt_need	 need;
	const char	*def;		/* default, parsed like a value */
	const char	*arg;		/* the flag's value in --help */
	const char	*help;		/* --help text; '\n' continues it */
};

enum {
	F_CONFIG = 'c', F_HELP = 'h', F_VERSION = 'V',
	F_CHECK = 1000, F_BASE = 1100,
};

#define OFF(f) offsetof(struct config, f)

static const struct opt opts[] = {
	{ "listen", OPT_STR, OFF(listen), 0, 0, NEED_ANY,
	    CONFIG_DEFAULT_LISTEN, "HOST:PORT",
	    "address or host name, [V6]:PORT for IPv6" },
	{ "filter_dir", OPT_STR, OFF(filter_dir), 0, 0, NEED_ANY,
	    NULL, "DIR", "directory published by filterbuild" },
	{ "filter_owner", OPT_STR, OFF(filter_owner), 0, 0, NEED_ANY,
	    NULL, "USER", "besides root and the daemon's own user, the\n"
	    "user (name or uid) that may own the files" },
	{ "trusted_key", OPT_KEYS, 0, 0, 0, NEED_ANY,
	    NULL, "PUB.pem", "trusted signer public key (repeatable)" },
	{ "state_dir", OPT_STR, OFF(state_dir), 0, 0, NEED_ANY,
	    CONFIG_DEFAULT_STATE, "DIR", "rollback state and audit log" },
	{ "audit_log", OPT_STR, OFF(audit_log), 0, 0, NEED_ANY,
	    NULL, "FILE", "audit log path (STATE_DIR/audit.log)" },
	{ "max_age", OPT_DUR, OFF(max_age), 0, 0, NEED_ANY,
	    "2h", "D", "refuse filters older than D, whatever their\n"
	    "expiry; 0: none (logged as a warning)" },
	{ "clock_skew", OPT_DUR, OFF(clock_skew), 0, 0, NEED_ANY,
	    "300", "D", "allowed issued_at in the future" },
	{ "max_batch", OPT_U64, OFF(max_batch), 1, 1000000, NEED_ANY,
	    "10000", "N", "items per batch request" },
	{ "max_body", OPT_U64, OFF(max_body), 64, UINT64_C(1) << 30, NEED_ANY,
	    "4194304", "BYTES", "request body cap" },
	{ "max_body_total", OPT_U64, OFF(max_body_total), 64,
	    UINT64_C(1) << 36, NEED_ANY,
	    "67108864", "BYTES", "bodies buffered at once, all requests" },
	{ "delta_memory_max", OPT_U64, OFF(delta_memory_max), 1 << 20,
	    UINT64_C(1) << 40, NEED_ANY, "268435456", "BYTES", "verified "
	    "delta chain files held for /v1/delta, all\nreaders together "
	    "(past it: 503, Retry-After)" },
	{ "max_header_size", OPT_U64, OFF(max_header_size), 8192,
	    UINT64_C(1) << 20, NEED_ANY, "32768", "BYTES",
	    "memory per connection for the request line and\n"
	    "headers (past it: 414 or 431)" },
	{ "conn_timeout", OPT_UINT, OFF(conn_timeout), 1, 3600, NEED_ANY,
	    "30", "S", "deadline for a request's headers and body, and\n"
	    "idle keep-alive timeout" },
	{ "max_conns", OPT_UINT, OFF(max_conns), 1, 1000000, NEED_ANY,
	    "4096", "N", "connection limit" },
	{ "max_conns_per_ip", OPT_UINT, OFF(max_conns_per_ip), 1, 1000000,
	    NEED_ANY, "256", "N", "per-IP connection limit" },
	{ "threads", OPT_UINT, OFF(threads), 0, 1024, NEED_ANY,
	    "0", "N", "HTTP worker threads; 0: one per CPU" },
	{ "fast_path", OPT_BOOL, OFF(fast_path), 0, 0, NEED_ANY, "true",
	    "true|false", "answer plain single GET /v1/check requests\n"
	    "before libmicrohttpd (as many threads again);\n"
	    "false: libmicrohttpd answers every request" },
	{ "loader_nice", OPT_UINT, OFF(loader_nice), 0, 19, NEED_ANY,
	    "10", "N", "nice added to the thread that reads and verifies\n"
	    "new filters (the main thread; an edge's sync\n"
	    "thread), which also yields its CPU every 256 KiB\n"
	    "it hashes, so that it gives way to the HTTP\nworkers; 0: neither" },
	{ "reload_spare", OPT_DUR, OFF(reload_spare), 0, 86400, NEED_ANY,
	    "60", "S", "keep the table copy a reload released this long\n"
	    "for the next reload to read into (no fresh pages\n"
	    "to fault and zero; meanwhile memory stays at the\n"
	    "reload peak); 0: unmap it at once" },
	{ "poll_interval", OPT_UINT, OFF(poll_interval), 1, 3600, NEED_ANY,
	    "2", "S", "filter directory poll fallback" },
	{ "authz_cert_header", OPT_STR, OFF(authz_cert_header), 0, 0,
	    NEED_ANY, "X-SSL-Client-Cert", "H", "client certificate header" },
	{ "authz_not_covered", OPT_NOTCOV, 0, 0, 0, NEED_ANY,
	    "deny", "deny|allow", "/v1/authz verdict for not_covered" },
	{ "log_level", OPT_LEVEL, 0, 0, 0, NEED_ANY,
	    "info", "L", "err, warn, info or debug" },
	{ "log_format", OPT_LOGFMT, 0, 0, 0, NEED_ANY,
	    "text", "F", "text or json: one JSON object per line" },
	{ "token_verification", OPT_TOKMODE, 0, 0, 0, NEED_ANY,
	    "required", "M", "required (tokens need a trusted issuer, set in\n"
	    "the file's \"issuers\") or revocation-only" },
	{ "token_cache_size", OPT_U64, OFF(token_cache_size), 0, 10000000,
	    NEED_ANY, "10000", "N", "verified tokens cached; 0: no cache" },
	{ "token_cache_max", OPT_DUR, OFF(token_cache_max), 1, 86400,
	    NEED_ANY, "300", "D", "how long one is cached, at most" },
	{ "upstream_filter", OPT_STR, OFF(upstream_filter), 0, 0, NEED_ANY,
	    NULL, "URL", "edge mode: where to fetch the signed filter" },
	{ "upstream_check", OPT_STR, OFF(upstream_check), 0, 0, NEED_ANY,
	    NULL, "URL", "edge mode: authority for filter positives" },
	{ "sync_interval", OPT_DUR, OFF(sync_interval), 1, 0, NEED_EDGE,
	    "30", "D", "edge mode: sync period" },
	{ "max_download", OPT_U64, OFF(max_download), 1024, FFILE_MAX_SIZE,
	    NEED_EDGE, "268435456", "BYTES", "edge mode: filter download cap" },
	{ "max_lag", OPT_DUR, OFF(max_lag), 0, 0, NEED_EDGE,
	    "5m", "D", "edge mode: stale when a newer version, or a delta\n"
	    "a verified head names, is not loaded within D;\n"
	    "0: off (logged as a warning)" },
	{ "sync_timeout", OPT_DUR, OFF(sync_timeout), 1, 3600, NEED_EDGE,
	    "600", "D", "edge mode: one filter download, all included" },
	{ "sync_connect_timeout", OPT_DUR, OFF(sync_connect_timeout), 1, 3600,
	    NEED_EDGE, "10", "D", "edge mode: connecting for a download" },
	{ "upstream_timeout", OPT_DUR, OFF(upstream_timeout), 1, 60,
	    NEED_AUTHORITY, "4", "D", "edge mode: one attempt at upstream-check" },
	{ "upstream_connect_timeout", OPT_DUR, OFF(upstream_connect_timeout),
	    1, 60, NEED_AUTHORITY, "2", "D",
	    "edge mode: connecting for an attempt" },
	{ "upstream_retries", OPT_UINT, OFF(upstream_retries), 0, 10,
	    NEED_AUTHORITY, "2", "N", "edge mode: attempts after a failed one" },
	{ "upstream_ca_file", OPT_STR, OFF(upstream_ca_file), 0, 0, NEED_EDGE,
	    NULL, "PEM", "edge mode: CAs for the upstreams' TLS (system)" },
	{ "upstream_concurrency", OPT_UINT, OFF(upstream_concurrency), 1, 64,
	    NEED_AUTHORITY, "4", "N",
	    "edge mode: requests to upstream-check at once" },
	{ "upstream_max_waiting", OPT_UINT, OFF(upstream_max_waiting), 1,
	    100000, NEED_AUTHORITY, "256", "N",
	    "edge mode: requests waiting on it; past it 503\nat once" },
	{ "upstream_insecure_http", OPT_BOOL, OFF(upstream_insecure_http), 0,
	    0, NEED_EDGE, NULL, "[true|false]",
	    "edge mode: allow plain http:// upstreams\n"
	    "(anyone on the path can forge answers)" },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))
_Static_assert(NOPTS <= 64, "config keys_set has one bit per key");

#define KEY_BIT(o)	(UINT64_C(1) << ((o) - opts))

static int set_opt(struct config *c, const struct opt *o, const char *v,
    char *err, size_t errlen);

/* Applies every default but the strings, which fill_defaults() adds. */
void
config_init(struct config *c)
{
	char err[128];
	size_t i;
	int rc;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NOPTS; i++) {
		if (opts[i].def == NULL || opts[i].type == OPT_STR)
			continue;
		rc = set_opt(c, &opts[i], opts[i].def, err, sizeof(err));
		assert(rc == 0);	/* a bad default is a programmer error */
		(void)rc;
	}
	c->keys_set = 0;
}

void
config_free(struct config *c)
{
	size_t i;

	free(c->config_file);
	free(c->listen);
	free(c->filter_dir);
	free(c->filter_owner);
	for (i = 0; i < c->ntrusted; i++)
		free(c->trusted_keys[i]);
	free(c->state_dir);
	free(c->audit_log);
	free(c->authz_cert_header);
	free(c->upstream_filter);
	free(c->upstream_check);
	free(c->upstream_ca_file);
	config_trust_free(c);
	memset(c, 0, sizeof(*c));
}

static void
clear_keys(struct config *c)
{
	size_t i;

	for (i = 0; i < c->ntrusted; i++)
		free(c->trusted_keys[i]);
	c->ntrusted = 0;
}

static int
add_key(struct config *c, const char *path, char *err, size_t errlen)
{
	if (*path == '\0') {
		snprintf(err, errlen, "trusted_key: empty path");
		return -1;
	}
	if (c->ntrusted >= CONFIG_MAX_KEYS) {
		snprintf(err, errlen, "trusted_key: more than %d keys",
		    CONFIG_MAX_KEYS);
		return -1;
	}
	if ((c->trusted_keys[c->ntrusted] = strdup(path)) == NULL) {
		snprintf(err, errlen, "trusted_key: out of memory");
		return -1;
	}
	c->ntrusted++;
	return 0;
}

/*
 * Applies one setting given as text, as from a flag or a scalar in the
 * config file. err names the key.
 */
static int
set_opt(struct config *c, const struct opt *o, const char *v, char *err,
    size_t errlen)
{
	char **sp;
	int64_t d;
	uint64_t u;

	c->keys_set |= KEY_BIT(o);
	if (v == NULL && o->type != OPT_BOOL) {
		snprintf(err, errlen, "%s: a value is required", o->key);
		return -1;
	}
	switch (o->type) {
	case OPT_STR:
		if (*v == '\0') {
			snprintf(err, errlen, "%s: empty value", o->key);
			return -1;
		}
		sp = (char **)((char *)c + o->off);
		free(*sp);
		if ((*sp = strdup(v)) == NULL) {
			snprintf(err, errlen, "%s: out of memory", o->key);
			return -1;
		}
		return 0;
	case OPT_DUR:
		if (strcmp(v, "0") == 0 && o->min == 0)
			d = 0;
		else if (util_parse_duration(v, &d) == -1) {
			snprintf(err, errlen, "%s: bad duration \"%.64s\" "
			    "(seconds or N[smhd]%s)", o->key, v,
			    o->min == 0 ? ", 0 for none" : "");
			return -1;
		}
		if (o->max != 0 && ((uint64_t)d < o->min ||
		    (uint64_t)d > o->max)) {
			snprintf(err, errlen, "%s: \"%.64s\" is out of range "
			    "(%llus..%llus)", o->key, v,
			    (unsigned long long)o->min,
			    (unsigned long long)o->max);
			return -1;
		}
		*(int64_t *)((char *)c + o->off) = d;
		return 0;
	case OPT_U64:
	case OPT_UINT:
		if (util_parse_u64(v, o->max, &u) == -1 || u < o->min) {
			snprintf(err, errlen, "%s: \"%.64s\" is not an integer "
			    "in %llu..%llu", o->key, v,
			    (unsigned long long)o->min,
			    (unsigned long long)o->max);
			return -1;
		}
		if (o->type == OPT_U64)
			*(uint64_t *)((char *)c + o->off) = u;
		else
			*(unsigned *)((char *)c + o->off) = (unsigned)u;
		return 0;
	case OPT_KEYS:
		return add_key(c, v, err, errlen);
	case OPT_NOTCOV:
		if (strcmp(v, "deny") == 0)
			c->authz_not_covered_allow = false;
		else if (strcmp(v, "allow") == 0)
			c->authz_not_covered_allow = true;
		else {
			snprintf(err, errlen, "%s: must be \"deny\" or "
			    "\"allow\"", o->key);
			return -1;
		}
		return 0;
	case OPT_LEVEL:
		if (strcmp(v, "err") == 0 || strcmp(v, "error") == 0)
			c->log_level = LOG_LVL_ERR;
		else if (strcmp(v, "warn") == 0 || strcmp(v, "warning") == 0)
			c->log_level = LOG_LVL_WARN;
		else if (strcmp(v, "info") == 0)
			c->log_level = LOG_LVL_INFO;
		else if (strcmp(v, "debug") == 0)
			c->log_level = LOG_LVL_DEBUG;
		else {
			snprintf(err, errlen, "%s: must be err, warn, info or "
			    "debug", o->key);
			return -1;
		}
		return 0;
	case OPT_BOOL:
		if (v == NULL || strcmp(v, "true") == 0)
			*(bool *)((char *)c + o->off) = true;
		else if (strcmp(v, "false") == 0)
			*(bool *)((char *)c + o->off) = false;
		else {
			snprintf(err, errlen, "%s: must be true or false",
			    o->key);
			return -1;
		}
		return 0;
	case OPT_LOGFMT:
		if (strcmp(v, "text") == 0)
			c->log_json = false;
		else if (strcmp(v, "json") == 0)
			c->log_json = true;
		else {
			snprintf(err, errlen, "%s: must be \"text\" or "
			    "\"json\"", o->key);
			return -1;
		}
		return 0;
	case OPT_TOKMODE:
		if (strcmp(v, "required") == 0)
			c->revocation_only = false;
		else if (strcmp(v, "revocation-only") == 0)
			c->revocation_only = true;
		else {
			snprintf(err, errlen, "%s: must be \"required\" or "
			    "\"revocation-only\"", o->key);
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "%s: unhandled type", o->key);
	return -1;
}

static const struct opt *
find_opt(const char *key)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (strcmp(opts[i].key, key) == 0)
			return &opts[i];
	return NULL;
}

static int
apply_json(struct config *c, const struct opt *o, const cJSON *v,
    const char *origin, char *err, size_t errlen)
{
	char num[32], e[256];
	const cJSON *it;
	int n;

	if (o->type == OPT_KEYS && cJSON_IsArray(v)) {
		clear_keys(c);
		cJSON_ArrayForEach(it, v) {
			if (!cJSON_IsString(it)) {
				snprintf(err, errlen, "%s: key \"%s\": every "
				    "element must be a string", origin, o->key);
				return -1;
			}
			if (add_key(c, it->valuestring, e, sizeof(e)) == -1)
				goto fail;
		}
		return 0;
	}
	if (o->type == OPT_KEYS)
		clear_keys(c);
	if (cJSON_IsString(v)) {
		if (set_opt(c, o, v->valuestring, e, sizeof(e)) == -1)
			goto fail;
		return 0;
	}
	if (cJSON_IsNumber(v) && (o->type == OPT_DUR || o->type == OPT_U64 ||
	    o->type == OPT_UINT)) {
		if (v->valuedouble < 0 || v->valuedouble > 9.0e15 ||
		    v->valuedouble != (double)(int64_t)v->valuedouble) {
			snprintf(err, errlen, "%s: key \"%s\": not a "
			    "non-negative integer", origin, o->key);
			return -1;
		}
		n = snprintf(num, sizeof(num), "%lld",
		    (long long)v->valuedouble);
		if (n < 0 || (size_t)n >= sizeof(num))
			return -1;
		if (set_opt(c, o, num, e, sizeof(e)) == -1)
			goto fail;
		return 0;
	}
	if (cJSON_IsBool(v) && o->type == OPT_BOOL)
		return set_opt(c, o, cJSON_IsTrue(v) ? "true" : "false", err,
		    errlen);
	snprintf(err, errlen, "%s: key \"%s\": wrong type (expected %s)",
	    origin, o->key,
	    o->type == OPT_STR ? "a string" :
	    o->type == OPT_KEYS ? "a string or an array of strings" :
	    o->type == OPT_NOTCOV || o->type == OPT_LEVEL ||
	    o->type == OPT_LOGFMT || o->type == OPT_TOKMODE ? "a string" :
	    o->type == OPT_BOOL ? "true or false" :
	    "a number or a string");
	return -1;
fail:
	snprintf(err, errlen, "%s: key %s", origin, e);
	return -1;
}

int
config_load_buf(struct config *c, const char *buf, size_t len,
    const char *origin, char *err, size_t errlen)
{
	char *copy;
	const char *end = NULL, *want, *why, *dup, *where = NULL;
	cJSON *root = NULL;
	const cJSON *it;
	const struct opt *o;
	unsigned line, col;
	size_t off;
	int rc = -1;

	if (len > CONFIG_MAX_FILE) {
		snprintf(err, errlen, "%s: larger than %d bytes", origin,
		    CONFIG_MAX_FILE);
		return -1;
	}
	if ((copy = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", origin);
		return -1;
	}
	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (memchr(copy, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: NUL byte in file", origin);
		goto out;
	}
	if (config_json_strip_comments(copy, len) == -1) {
		snprintf(err, errlen, "%s: unterminated /* comment", origin);
		goto out;
	}
	root = cJSON_ParseWithLengthOpts(copy, len, &end, false);
	if (root == NULL) {
		if (!config_json_syntax_error(copy, len, &off, &want)) {
			end = cJSON_GetErrorPtr();
			off = (end != NULL && end >= copy &&
			    end <= copy + len) ? (size_t)(end - copy) : 0;
			want = "valid JSON";
		}
		config_json_line_col(copy, off, &line, &col);
		snprintf(err, errlen, "%s: line %u, column %u: JSON syntax "
		    "error: expected %s", origin, line, col, want);
		goto out;
	}
	for (off = (size_t)(end - copy); off < len; off++) {
		if (copy[off] != ' ' && copy[off] != '\t' &&
		    copy[off] != '\r' && copy[off] != '\n') {
			config_json_line_col(copy, off, &line, &col);
			snprintf(err, errlen, "%s: line %u, column %u: "
			    "trailing data after the JSON object", origin,
			    line, col);
			goto out;
		}
	}
	if (!cJSON_IsObject(root)) {
		snprintf(err, errlen, "%s: top level must be a JSON object",
		    origin);
		goto out;
	}
	/*
	 * What a reviewer reads must be what the daemon applies: cJSON cuts
	 * a key or value at an escaped NUL ("authz_not_covered\u0000_OFF"
	 * would be authz_not_covered), and a key given twice would let the
	 * later copy win unseen.
	 */
	if ((why = util_json_refused(copy, len)) != NULL) {
		snprintf(err, errlen, "%s: %s in the file (a key or value cut "
		    "there would read as another)", origin, why);
		goto out;
	}
	if ((dup = config_json_repeated_key(root, &where)) != NULL) {
		snprintf(err, errlen, "%s: key \"%.64s\" is given twice%s%s",
		    origin, dup, where != NULL ? " in " : "",
		    where != NULL ? where : "");
		goto out;
	}
	cJSON_ArrayForEach(it, root) {
		if (it->string == NULL)
			continue;
		if (it->string[0] == '_')	/* "_comment" and friends */
			continue;
		if (strcmp(it->string, "issuers") == 0) {
			if (config_trust_load_issuers(c, it, origin, err, errlen) == -1)
				goto out;
			continue;
		}
		if (strcmp(it->string, "introspection_clients") == 0) {
			if (config_trust_load_clients(c, it, origin, err, errlen) == -1)
				goto out;
			continue;
		}
		if ((o = find_opt(it->string)) == NULL) {
			snprintf(err, errlen, "%s: unknown key \"%.64s\"",
			    origin, it->string);
			goto out;
		}
		if (apply_json(c, o, it, origin, err, errlen) == -1)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	free(copy);
	return rc;
}

int
config_load_file(struct config *c, const char *path, char *err,
    size_t errlen)
{
	unsigned char *buf = NULL;
	struct stat st;
	size_t len = 0;
	char e[512];
	int rc;

	/* A regular file only: a FIFO must not hang a start or a SIGHUP. */
	if (util_read_file_st(path, CONFIG_MAX_FILE, &buf, &len, &st, e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "%s", e);
		return -1;
	}
	rc = config_load_buf(c, (const char *)buf, len, path, err, errlen);
	free(buf);
	return rc;
}

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

	for (i = 0; i < NOPTS; i++) {
		flag_name(opts[i].key, names[i], sizeof(names[i]));
		lo[n].name = names[i];
		lo[n].has_arg = opts[i].type == OPT_BOOL ? optional_argument :
		    required_argument;
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
flag_value(const struct opt *o, int argc, char **argv)
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
	const struct opt *o = find_opt(key);

	assert(o != NULL);
	if ((c->keys_set & KEY_BIT(o)) == 0 && *conn > total)
		*conn = total;
}

static int
fill_defaults(struct config *c, char *err, size_t errlen)
{
	size_t i;
	char **sp;

	fit_connect(c, "upstream_connect_timeout",
	    &c->upstream_connect_timeout, c->upstream_timeout);
	fit_connect(c, "sync_connect_timeout", &c->sync_connect_timeout,
	    c->sync_timeout);
	for (i = 0; i < NOPTS; i++) {
		if (opts[i].def == NULL || opts[i].type != OPT_STR)
			continue;
		sp = (char **)((char *)c + opts[i].off);
		if (*sp == NULL && (*sp = strdup(opts[i].def)) == NULL) {
			snprintf(err, errlen, "%s: out of memory", opts[i].key);
			return -1;
		}
	}
	return 0;
}

int
config_from_args(struct config *c, int argc, char **argv, char *err,
    size_t errlen)
{
	struct option lo[NOPTS + 5];
	char names[NOPTS][32];
	char e[512];
	const char *cfile = NULL;
	bool cli_keys = false;
	int ch, idx;

	build_longopts(lo, names);

	/* Pass 1: the file and the actions; the rest waits for pass 2. */
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:hV", lo, &idx)) != -1) {
		switch (ch) {
		case F_CONFIG:
			cfile = optarg;
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
			if (ch >= F_BASE && ch < F_BASE + (int)NOPTS)
				(void)flag_value(&opts[ch - F_BASE], argc,
				    argv);
			break;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument \"%.64s\"",
		    argv[optind]);
		c->usage_error = true;
		return -1;
	}
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
		if (ch < F_BASE || ch >= F_BASE + (int)NOPTS)
			continue;
		const struct opt *o = &opts[ch - F_BASE];
		if (o->type == OPT_KEYS && !cli_keys) {
			clear_keys(c);
			cli_keys = true;
		}
		if (set_opt(c, o, flag_value(o, argc, argv), e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "--%s: %s", names[ch - F_BASE],
			    e);
			c->usage_error = true;
			return -1;
		}
	}
	return fill_defaults(c, err, errlen);
}

/*
 * A host name resolves through getaddrinfo(); the first IPv4 address wins
 * (so "localhost" is 127.0.0.1 whatever the resolver's order), else the
 * first IPv6 one.
 */
static int
resolve_host(const char *host, struct sockaddr_storage *ss, unsigned *socklen)
{
	struct addrinfo hints, *res = NULL, *ai, *pick = NULL;

	/* "300.1.1.1" is a bad address, not a name to look up. */
	if (strspn(host, "0123456789.") == strlen(host))
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			pick = ai;
			break;
		}
		if (ai->ai_family == AF_INET6 && pick == NULL)
			pick = ai;
	}
	if (pick == NULL || pick->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -1;
	}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	*socklen = (unsigned)pick->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int
config_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[CONFIG_MAX_HOST + 1];
	const char *colon, *port;
	uint64_t p;
	size_t hl;
	bool v6 = false;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':')
			return -1;
		hl = (size_t)(rb - s - 1);
		if (hl == 0 || hl > INET6_ADDRSTRLEN)
			return -1;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		port = rb + 2;
		v6 = true;
	} else if ((colon = strrchr(s, ':')) != NULL) {
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, s, hl);
		host[hl] = '\0';
		port = colon + 1;
		if (strchr(host, ':') != NULL)
			return -1;	/* a bare v6 address needs brackets */
	} else {
		host[0] = '\0';
		port = s;
	}
	if (util_parse_u64(port, 65535, &p) == -1)
		return -1;
	if (v6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -1;
		*socklen = sizeof(*sin6);
		return 0;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)p);
	*socklen = sizeof(*sin);
	if (host[0] == '\0')
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		if (resolve_host(host, ss, socklen) == -1)
			return -1;
		/* Both families keep the port at the same offset. */
		if (ss->ss_family == AF_INET6)
			sin6->sin6_port = htons((uint16_t)p);
		else
			sin->sin_port = htons((uint16_t)p);
	}
	return 0;
}

/*
 * An upstream URL is https:// (TLS verified) unless plain http:// was
 * allowed by name: over http anyone on the path can answer not_revoked
 * for the authority, or hold an edge on an old filter with 304s.
 */
static int
upstream_url_check(const char *key, const char *url, bool allow_http,
    char *err, size_t errlen)
{
	if (url == NULL || strncmp(url, "https://", 8) == 0)
		return 0;
	if (strncmp(url, "http://", 7) != 0) {
		snprintf(err, errlen, "%s: must be an https:// URL", key);
		return -1;
	}
	if (!allow_http) {
		snprintf(err, errlen, "%s: \"%.100s\" is plain http, which "
		    "anyone on the path can answer for; use https:// or set "
		    "upstream_insecure_http", key, url);
		return -1;
	}
	return 0;
}

int
config_filter_owner(const struct config *c, uid_t *uid, bool *set,
    char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long long v;
	int rc;

	*set = false;
	if (c->filter_owner == NULL)
		return 0;
	if (c->filter_owner[0] >= '0' && c->filter_owner[0] <= '9') {
		errno = 0;
		v = strtoull(c->filter_owner, &end, 10);
		if (errno != 0 || *end != '\0' || v >= (uid_t)-1) {
			snprintf(err, errlen, "filter_owner: \"%.64s\" is not "
			    "a uid", c->filter_owner);
			return -1;
		}
		*uid = (uid_t)v;
		*set = true;
		return 0;
	}
	rc = getpwnam_r(c->filter_owner, &pw, buf, sizeof(buf), &res);
	if (rc != 0 || res == NULL) {
		snprintf(err, errlen, "filter_owner: no user \"%.64s\"%s%s",
		    c->filter_owner, rc != 0 ? ": " : "",
		    rc != 0 ? strerror(rc) : "");
		return -1;
	}
	*uid = pw.pw_uid;
	*set = true;
	return 0;
}

int
config_validate(const struct config *c, char *err, size_t errlen)
{
	uid_t owner;
	bool owner_set;
	struct sockaddr_storage ss;
	unsigned sl;
	const char *l = c->listen != NULL ? c->listen : CONFIG_DEFAULT_LISTEN;
	const char *h;
	size_t i;

	if (config_parse_listen(l, &ss, &sl) == -1) {
		snprintf(err, errlen, "listen: \"%.64s\" is not HOST:PORT, "
		    "ADDR:PORT or [V6ADDR]:PORT, or its host name does not "
		    "resolve", l);
		return -1;
	}
	if (c->filter_dir == NULL && c->upstream_filter == NULL) {
		snprintf(err, errlen, "filter_dir: required (or "
		    "upstream_filter for an edge node)");
		return -1;
	}
	if (c->filter_dir != NULL && c->upstream_filter != NULL) {
		snprintf(err, errlen, "upstream_filter: an edge node has no "
		    "filter_dir; set one or the other");
		return -1;
	}
	if (config_filter_owner(c, &owner, &owner_set, err, errlen) == -1)
		return -1;
	if (c->ntrusted == 0) {
		snprintf(err, errlen, "trusted_key: at least one public key "
		    "is required");
		return -1;
	}
	if (c->upstream_check != NULL && c->upstream_filter == NULL) {
		snprintf(err, errlen, "upstream_check: only for edge nodes "
		    "(needs upstream_filter)");
		return -1;
	}
	if (upstream_url_check("upstream_filter", c->upstream_filter,
	    c->upstream_insecure_http, err, errlen) == -1 ||
	    upstream_url_check("upstream_check", c->upstream_check,
	    c->upstream_insecure_http, err, errlen) == -1)
		return -1;
	for (i = 0; i < NOPTS; i++) {
		if ((c->keys_set & KEY_BIT(&opts[i])) == 0)
			continue;
		if (opts[i].need == NEED_EDGE && c->upstream_filter == NULL) {
			snprintf(err, errlen, "%s: only for edge nodes (needs "
			    "upstream_filter)", opts[i].key);
			return -1;
		}
		if (opts[i].need == NEED_AUTHORITY &&
		    c->upstream_check == NULL) {
			snprintf(err, errlen, "%s: only for edge nodes (needs "
			    "%s)", opts[i].key, c->upstream_filter == NULL ?
			    "upstream_filter and upstream_check" :
			    "upstream_check, whose requests it bounds");
			return -1;
		}
	}
	if (c->upstream_connect_timeout > c->upstream_timeout) {
		snprintf(err, errlen, "upstream_connect_timeout: %llds is "
		    "longer than upstream_timeout (%llds), which includes it",
		    (long long)c->upstream_connect_timeout,
		    (long long)c->upstream_timeout);
		return -1;
	}
	if (c->sync_connect_timeout > c->sync_timeout) {
		snprintf(err, errlen, "sync_connect_timeout: %llds is longer "
		    "than sync_timeout (%llds), which includes it",
		    (long long)c->sync_connect_timeout,
		    (long long)c->sync_timeout);
		return -1;
	}
	if (c->max_body_total < c->max_body) {
		snprintf(err, errlen, "max_body_total: smaller than max_body "
		    "(%llu), so no body of the largest size could be read",
		    (unsigned long long)c->max_body);
		return -1;
	}
	if (c->max_conns_per_ip > c->max_conns) {
		snprintf(err, errlen, "max_conns_per_ip: larger than "
		    "max_conns (%u)", c->max_conns);
		return -1;
	}
	if (c->authz_cert_header != NULL) {
		for (h = c->authz_cert_header; *h != '\0'; h++) {
			if (!((*h >= 'A' && *h <= 'Z') ||
			    (*h >= 'a' && *h <= 'z') ||
			    (*h >= '0' && *h <= '9') || *h == '-' ||
			    *h == '_')) {
				snprintf(err, errlen, "authz_cert_header: not "
				    "a valid header name");
				return -1;
			}
		}
	}
	return config_trust_validate(c, err, errlen);
}

/*
 * What SIGHUP applies without a restart (revcheckd.c reload_config): each
 * is read per request, per check or per attempt from the generation in
 * force (svc/live.h), or, for trusted_key and the log settings, applied
 * by the main thread. Every other key is read once at start (sockets,
 * threads, the sync thread, the loader's directories) and keeps its
 * running value until a restart. The issuers and introspection_clients
 * lists (no flag) are live too.
 */
static const char *const live_keys[] = {
	"trusted_key", "max_age", "clock_skew", "max_batch", "max_body",
	"poll_interval", "authz_cert_header", "authz_not_covered",
	"log_level", "log_format", "token_verification", "token_cache_size",
	"token_cache_max", "upstream_timeout", "upstream_connect_timeout",
	"upstream_retries", "upstream_max_waiting",
};

static bool
opt_is_live(const struct opt *o)
{
	size_t i;

	for (i = 0; i < sizeof(live_keys) / sizeof(live_keys[0]); i++)
		if (strcmp(live_keys[i], o->key) == 0)
			return true;
	return false;
}

bool
config_key_is_live(const char *key)
{
	const struct opt *o = find_opt(key);

	if (strcmp(key, "issuers") == 0 ||
	    strcmp(key, "introspection_clients") == 0)
		return true;
	return o != NULL && opt_is_live(o);
}

static bool
str_differs(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* The bytes of a key kept at o->off (the types that have one). */
static size_t
opt_size(const struct opt *o)
{
	switch (o->type) {
	case OPT_DUR:
		return sizeof(int64_t);
	case OPT_U64:
		return sizeof(uint64_t);
	case OPT_UINT:
		return sizeof(unsigned);
	case OPT_BOOL:
		return sizeof(bool);
	default:
		return 0;
	}
}

/* True when key o has another value in a than in b. */
static bool
opt_differs(const struct opt *o, const struct config *a,
    const struct config *b)
{
	const char *pa = (const char *)a + o->off;
	const char *pb = (const char *)b + o->off;
	size_t i;

	switch (o->type) {
	case OPT_STR:
		return str_differs(*(char *const *)(const void *)pa,
		    *(char *const *)(const void *)pb);
	case OPT_NOTCOV:
		return a->authz_not_covered_allow != b->authz_not_covered_allow;
	case OPT_TOKMODE:
		return a->revocation_only != b->revocation_only;
	case OPT_LEVEL:
		return a->log_level != b->log_level;
	case OPT_LOGFMT:
		return a->log_json != b->log_json;
	case OPT_KEYS:
		if (a->ntrusted != b->ntrusted)
			return true;
		for (i = 0; i < a->ntrusted; i++)
			if (strcmp(a->trusted_keys[i], b->trusted_keys[i]) != 0)
				return true;
		return false;
	default:
		return memcmp(pa, pb, opt_size(o)) != 0;
	}
}

/* Appends ", name" (or "name" first) to out, truncating to fit. */
static void
list_add(char *out, size_t outlen, size_t *len, size_t *n, const char *name)
{
	int w;

	w = snprintf(out + *len, outlen - *len, "%s%s", *n > 0 ? ", " : "",
	    name);
	if (w > 0 && (size_t)w < outlen - *len)
		*len += (size_t)w;
	(*n)++;
}

size_t
config_changed_keys(const struct config *a, const struct config *b,
    bool live, char *out, size_t outlen)
{
	const struct opt *o;
	size_t n = 0, len = 0;

	assert(outlen > 0);
	out[0] = '\0';
	for (o = opts; o < opts + NOPTS; o++)
		if (opt_is_live(o) == live && opt_differs(o, a, b))
			list_add(out, outlen, &len, &n, o->key);
	if (live && config_trust_issuers_differ(a, b))
		list_add(out, outlen, &len, &n, "issuers");
	if (live && config_trust_clients_differ(a, b))
		list_add(out, outlen, &len, &n, "introspection_clients");
	return n;
}

size_t
config_restart_keys(const struct config *a, const struct config *b,
    char *out, size_t outlen)
{
	return config_changed_keys(a, b, false, out, outlen);
}

/* *dst becomes a copy of src (NULL stays NULL); false when out of memory. */
static bool
dup_into(char **dst, const char *src)
{
	*dst = NULL;
	return src == NULL || (*dst = strdup(src)) != NULL;
}

int
config_copy(struct config *dst, const struct config *src, char *err,
    size_t errlen)
{
	const struct config_issuer *si;
	struct config_issuer *di;
	const struct opt *o;
	size_t i, j;
	bool ok;

	/* Every pointer is replaced before anything can fail. */
	memcpy(dst, src, sizeof(*dst));
	for (o = opts; o < opts + NOPTS; o++)
		if (o->type == OPT_STR)
			*(char **)(void *)((char *)dst + o->off) = NULL;
	memset(dst->trusted_keys, 0, sizeof(dst->trusted_keys));
	memset(dst->issuers, 0, sizeof(dst->issuers));
	memset(dst->clients, 0, sizeof(dst->clients));
	ok = dup_into(&dst->config_file, src->config_file);
	for (o = opts; ok && o < opts + NOPTS; o++)
		if (o->type == OPT_STR)
			ok = dup_into((char **)(void *)((char *)dst + o->off),
			    *(char *const *)(const void *)((const char *)src +
			    o->off));
	for (i = 0; ok && i < src->ntrusted; i++)
		ok = dup_into(&dst->trusted_keys[i], src->trusted_keys[i]);
	for (i = 0; ok && i < src->nissuers; i++) {
		si = &src->issuers[i];
		di = &dst->issuers[i];
		*di = *si;
		di->issuer = di->jwks_file = di->jwks_uri = NULL;
		di->hs_secret_file = di->jwks_ca_file = NULL;
		memset(di->audiences, 0, sizeof(di->audiences));
		ok = dup_into(&di->issuer, si->issuer) &&
		    dup_into(&di->jwks_file, si->jwks_file) &&
		    dup_into(&di->jwks_uri, si->jwks_uri) &&
		    dup_into(&di->hs_secret_file, si->hs_secret_file) &&
		    dup_into(&di->jwks_ca_file, si->jwks_ca_file);
		for (j = 0; ok && j < si->naud; j++)
			ok = dup_into(&di->audiences[j], si->audiences[j]);
	}
	for (i = 0; ok && i < src->nclients; i++) {
		ok = dup_into(&dst->clients[i].id, src->clients[i].id) &&
		    dup_into(&dst->clients[i].secret_file,
		    src->clients[i].secret_file);
		for (j = 0; ok && j < src->clients[i].naud; j++) {
			ok = dup_into(&dst->clients[i].audiences[j],
			    src->clients[i].audiences[j]);
			dst->clients[i].naud = j + 1;
		}
	}
	if (!ok) {
		config_free(dst);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int
config_keep_restart(struct config *b, const struct config *a, char *err,
    size_t errlen)
{
	const struct opt *o;
	char *dup, **p;

	for (o = opts; o < opts + NOPTS; o++) {
		if (opt_is_live(o))
			continue;
		/* Every restart-only key has an offset (no special type). */
		assert(o->type == OPT_STR || opt_size(o) > 0);
		if (o->type == OPT_STR) {
			if (!dup_into(&dup, *(char *const *)(const void *)(
			    (const char *)a + o->off))) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			p = (char **)(void *)((char *)b + o->off);
			free(*p);
			*p = dup;
		} else
			memcpy((char *)b + o->off, (const char *)a + o->off,
			    opt_size(o));
		b->keys_set = (b->keys_set & ~KEY_BIT(o)) |
		    (a->keys_set & KEY_BIT(o));
	}
	return 0;
}

/* Prints "  --flag ARG", then help from column 28, then (default). */
static void
usage_opt(FILE *fp, const struct opt *o)
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
	for (i = 0; i < NOPTS; i++)
		usage_opt(fp, &opts[i]);
	fputs(
"  --check-config           validate the configuration and exit\n"
"  --version                print the version and exit\n"
"  --help                   print this help and exit\n"
"\n"
"Durations are seconds or N followed by s, m, h or d.\n", fp);
}
