/* config.c - revcheckd settings: the table of keys and defaults, values as text, the JSON file */
#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "config_json.h"
#include "config_opt.h"
#include "config_ocsp.h"
#include "config_trust.h"
#include "ffile.h"
#include "log.h"
#include "sync.h"
#include "upstream.h"
#include "util.h"

#define OFF(f) offsetof(struct config, f)

const struct config_opt config_opts[] = {
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
	{ "longpoll_max", OPT_UINT, OFF(longpoll_max), 0, 1000000, NEED_ANY,
	    "10000", "N", "GET /v1/delta?wait= requests held at once;\n"
	    "past it they are answered at once; 0: none held" },
	{ "longpoll_wait_max", OPT_DUR, OFF(longpoll_wait_max), 1, 30,
	    NEED_ANY, "30", "D", "longest wait granted to a held request" },
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
	{ "authz_cert_header_format", OPT_CERTFMT, 0, 0, 0, NEED_ANY,
	    "pem", "pem|xfcc", "what that header carries: URL-encoded PEM\n"
	    "or base64 DER (nginx, Traefik), or Envoy's\n"
	    "x-forwarded-client-cert elements" },
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
	{ "upstream_wait", OPT_DUR, OFF(upstream_wait), 0, 30, NEED_EDGE,
	    "25", "D", "edge mode: how long the one request open to a\n"
	    "revcheckd upstream waits for a change (long-poll);\n"
	    "0: poll every sync_interval only" },
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
#define NOPTS (sizeof(config_opts) / sizeof(config_opts[0]))
_Static_assert(NOPTS <= CONFIG_OPTS_MAX, "config keys_set has one bit per key");
const size_t config_nopts = NOPTS;

/* Applies every default but the strings, which fill_defaults() adds. */
void
config_init(struct config *c)
{
	char err[128];
	size_t i;
	int rc;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NOPTS; i++) {
		if (config_opts[i].def == NULL ||
		    config_opts[i].type == OPT_STR)
			continue;
		rc = config_set_opt(c, &config_opts[i], config_opts[i].def,
		    err, sizeof(err));
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
	config_ocsp_free(c);
	memset(c, 0, sizeof(*c));
}

void
config_clear_keys(struct config *c)
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

/* An OPT_STR value: a copy of the non-empty v replaces the old one. */
static int
set_str(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
	char **sp;

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
}

/* An OPT_DUR value: a duration, "0" when o->min is 0, within the range. */
static int
set_dur(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
	int64_t d;

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
}

/* An OPT_U64 or OPT_UINT value: an integer in o->min..o->max. */
static int
set_num(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
	uint64_t u;

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
}

/* One of two words: no makes *dst false, yes makes it true. */
static int
set_word(bool *dst, const struct config_opt *o, const char *v,
    const char *no, const char *yes, char *err, size_t errlen)
{
	if (strcmp(v, no) == 0)
		*dst = false;
	else if (strcmp(v, yes) == 0)
		*dst = true;
	else {
		snprintf(err, errlen, "%s: must be \"%s\" or \"%s\"", o->key,
		    no, yes);
		return -1;
	}
	return 0;
}

/* An OPT_LEVEL value: err, warn, info or debug ("error", "warning"). */
static int
set_level(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
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
}

/* An OPT_BOOL value: true or false; a bare flag (NULL) is true. */
static int
set_bool(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
	if (v == NULL || strcmp(v, "true") == 0)
		*(bool *)((char *)c + o->off) = true;
	else if (strcmp(v, "false") == 0)
		*(bool *)((char *)c + o->off) = false;
	else {
		snprintf(err, errlen, "%s: must be true or false", o->key);
		return -1;
	}
	return 0;
}

/* The flag's and the file's values, as text (config_opt.h). */
int
config_set_opt(struct config *c, const struct config_opt *o, const char *v,
    char *err, size_t errlen)
{
	c->keys_set |= CONFIG_KEY_BIT(o);
	if (v == NULL && o->type != OPT_BOOL) {
		snprintf(err, errlen, "%s: a value is required", o->key);
		return -1;
	}
	switch (o->type) {
	case OPT_STR:
		return set_str(c, o, v, err, errlen);
	case OPT_DUR:
		return set_dur(c, o, v, err, errlen);
	case OPT_U64:
	case OPT_UINT:
		return set_num(c, o, v, err, errlen);
	case OPT_KEYS:
		return add_key(c, v, err, errlen);
	case OPT_NOTCOV:
		return set_word(&c->authz_not_covered_allow, o, v, "deny",
		    "allow", err, errlen);
	case OPT_LEVEL:
		return set_level(c, o, v, err, errlen);
	case OPT_BOOL:
		return set_bool(c, o, v, err, errlen);
	case OPT_LOGFMT:
		return set_word(&c->log_json, o, v, "text", "json", err,
		    errlen);
	case OPT_TOKMODE:
		return set_word(&c->revocation_only, o, v, "required",
		    "revocation-only", err, errlen);
	case OPT_CERTFMT:
		return set_word(&c->authz_cert_xfcc, o, v, "pem", "xfcc", err,
		    errlen);
	}
	snprintf(err, errlen, "%s: unhandled type", o->key);
	return -1;
}

const struct config_opt *
config_find_opt(const char *key)
{
	size_t i;

	for (i = 0; i < NOPTS; i++)
		if (strcmp(config_opts[i].key, key) == 0)
			return &config_opts[i];
	return NULL;
}

static int
apply_json(struct config *c, const struct config_opt *o, const cJSON *v,
    const char *origin, char *err, size_t errlen)
{
	char num[32], e[256];
	const cJSON *it;
	int n;

	if (o->type == OPT_KEYS && cJSON_IsArray(v)) {
		config_clear_keys(c);
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
		config_clear_keys(c);
	if (cJSON_IsString(v)) {
		if (config_set_opt(c, o, v->valuestring, e, sizeof(e)) == -1)
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
		if (config_set_opt(c, o, num, e, sizeof(e)) == -1)
			goto fail;
		return 0;
	}
	if (cJSON_IsBool(v) && o->type == OPT_BOOL)
		return config_set_opt(c, o, cJSON_IsTrue(v) ? "true" : "false",
		    err, errlen);
	snprintf(err, errlen, "%s: key \"%s\": wrong type (expected %s)",
	    origin, o->key,
	    o->type == OPT_STR ? "a string" :
	    o->type == OPT_KEYS ? "a string or an array of strings" :
	    o->type == OPT_NOTCOV || o->type == OPT_LEVEL ||
	    o->type == OPT_LOGFMT || o->type == OPT_TOKMODE ||
	    o->type == OPT_CERTFMT ? "a string" :
	    o->type == OPT_BOOL ? "true or false" :
	    "a number or a string");
	return -1;
fail:
	snprintf(err, errlen, "%s: key %s", origin, e);
	return -1;
}

/*
 * Parses copy[0..len) into a cJSON tree, its comments blanked first (in
 * place). Returns the tree, or NULL with err naming the line and column
 * of a syntax error, or of data after the JSON value.
 */
static cJSON *
parse_text(char *copy, size_t len, const char *origin, char *err,
    size_t errlen)
{
	const char *end = NULL, *want;
	cJSON *root;
	unsigned line, col;
	size_t off;

	if (config_json_strip_comments(copy, len) == -1) {
		snprintf(err, errlen, "%s: unterminated /* comment", origin);
		return NULL;
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
		return NULL;
	}
	for (off = (size_t)(end - copy); off < len; off++) {
		if (copy[off] != ' ' && copy[off] != '\t' &&
		    copy[off] != '\r' && copy[off] != '\n') {
			config_json_line_col(copy, off, &line, &col);
			snprintf(err, errlen, "%s: line %u, column %u: "
			    "trailing data after the JSON object", origin,
			    line, col);
			cJSON_Delete(root);
			return NULL;
		}
	}
	return root;
}

/*
 * Applies every member of the top-level object root: the settings of the
 * table, "issuers", "introspection_clients", "ocsp"; "_..." keys are
 * comments.
 * Returns 0, or -1 with err at the first bad or unknown key.
 */
static int
apply_members(struct config *c, const cJSON *root, const char *origin,
    char *err, size_t errlen)
{
	const cJSON *it;
	const struct config_opt *o;

	cJSON_ArrayForEach(it, root) {
		if (it->string == NULL)
			continue;
		if (it->string[0] == '_')	/* "_comment" and friends */
			continue;
		if (strcmp(it->string, "issuers") == 0) {
			if (config_trust_load_issuers(c, it, origin, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if (strcmp(it->string, "introspection_clients") == 0) {
			if (config_trust_load_clients(c, it, origin, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if (strcmp(it->string, "ocsp") == 0) {
			if (config_ocsp_load(c, it, origin, err, errlen) == -1)
				return -1;
			continue;
		}
		if ((o = config_find_opt(it->string)) == NULL) {
			snprintf(err, errlen, "%s: unknown key \"%.64s\"",
			    origin, it->string);
			return -1;
		}
		if (apply_json(c, o, it, origin, err, errlen) == -1)
			return -1;
	}
	return 0;
}

int
config_load_buf(struct config *c, const char *buf, size_t len,
    const char *origin, char *err, size_t errlen)
{
	char *copy;
	const char *why, *dup, *where = NULL;
	cJSON *root = NULL;
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
	if ((root = parse_text(copy, len, origin, err, errlen)) == NULL)
		goto out;
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
	if (apply_members(c, root, origin, err, errlen) == -1)
		goto out;
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
