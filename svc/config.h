/* config.h - revcheckd settings: defaults, the JSON config file, command-line flags */
#ifndef REVCHECK_SVC_CONFIG_H
#define REVCHECK_SVC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "jwt.h"
#include "sign.h"

/*
 * Every setting has a config-file key and a flag of the same name
 * ("filter_dir" and --filter-dir). The file is JSON with `//` line and
 * `/ * ... * /` block comments allowed: they are blanked out (newlines
 * kept, so error positions still name the right line) before cJSON
 * parses it. Unknown keys are errors, so a typo never goes unnoticed.
 * Flags override the file; a repeated --trusted-key replaces the file's
 * whole list.
 *
 * The module's files share one table of keys (config_opt.h): config.c
 * (the table, values as text, the file), config_args.c (flags, --help),
 * config_check.c (config_validate, the listen address), config_reload.c
 * (what SIGHUP compares and copies), config_json.c and config_trust.c.
 */

#define CONFIG_MAX_KEYS		SIGN_RING_MAX
#define CONFIG_DEFAULT_LISTEN	"127.0.0.1:8080"
#define CONFIG_DEFAULT_STATE	"/var/lib/revcheckd"
#define CONFIG_MAX_FILE		(1024 * 1024)
#define CONFIG_MAX_HOST		253	/* a DNS name's longest text form */
#define CONFIG_MAX_ISSUERS	64
#define CONFIG_LEEWAY_MAX	JWT_LEEWAY_MAX	/* an issuer's leeway */
#define CONFIG_MAX_CLIENTS	64

/* One trusted token issuer ("issuers" in the file; no flag). */
struct config_issuer {
	char		*issuer;	/* the "iss" value, exact */
	char		*jwks_file;	/* one of jwks_file and jwks_uri */
	char		*jwks_uri;	/* https:// */
	char		*hs_secret_file; /* needed by HS256/384/512 */
	char		*audiences[JWT_MAX_AUD];
	size_t		 naud;
	uint32_t	 algs;		/* JWA_BIT()s */
	int64_t		 leeway;	/* seconds */
	int64_t		 jwks_refresh;	/* seconds between fetches of the URI */
	int64_t		 jwks_min_interval; /* at least this between fetches */
	int64_t		 jwks_max_age;	/* a set older than this refuses */
	char		*jwks_ca_file;	/* CA for jwks_uri; NULL: the system's */
};

/*
 * One caller of /v1/introspect ("introspection_clients"). It is answered
 * active only for tokens whose "aud" names one of its audiences (RFC 7662
 * section 4); without "audiences" (naud 0) its one audience is its id.
 */
struct config_client {
	char		*id;
	char		*secret_file;
	char		*audiences[JWT_MAX_AUD];
	size_t		 naud;
};

/*
 * The OCSP responder ("ocsp" in the file; no flag): the path it answers
 * at, one responder per CA served, the signed-response cache's bound.
 * Off while there is no responder.
 */
#define CONFIG_MAX_OCSP		16
#define CONFIG_OCSP_PATH	"/ocsp"
#define CONFIG_OCSP_CACHE_DEF	(UINT64_C(64) * 1024 * 1024)
#define CONFIG_OCSP_PATH_MAX	128

struct config_ocsp_responder {
	char		*issuer;	/* the CA certificate, PEM */
	char		*cert;		/* the signer: delegated or the CA */
	char		*key;		/* its private key, PEM */
};

struct config_ocsp {
	char		*path;		/* NULL: CONFIG_OCSP_PATH */
	struct config_ocsp_responder responders[CONFIG_MAX_OCSP];
	size_t		 nresponders;
	uint64_t	 cache_max;	/* bytes; default CONFIG_OCSP_CACHE_DEF */
	bool		 cache_set;	/* cache_max given */
};

enum config_action {
	CONFIG_RUN = 0,
	CONFIG_CHECK,		/* --check-config */
	CONFIG_VERSION,		/* --version */
	CONFIG_HELP,		/* --help */
};

struct config {
	char		*config_file;	/* -c, NULL when none */
	char		*listen;	/* ADDR:PORT or [V6]:PORT */
	char		*filter_dir;	/* origin: the published pair */
	char		*filter_owner;	/* user name or uid; NULL: root/self */
	char		*trusted_keys[CONFIG_MAX_KEYS];
	size_t		 ntrusted;
	char		*state_dir;	/* rollback state, default audit log */
	char		*audit_log;	/* NULL: STATE_DIR/audit.log */
	int64_t		 max_age;	/* seconds; 0: no local limit (2h) */
	int64_t		 clock_skew;	/* seconds allowed for issued_at */
	uint64_t	 max_batch;	/* items per batch */
	uint64_t	 max_body;	/* bytes per request body */
	uint64_t	 max_body_total; /* bytes of bodies buffered at once */
	uint64_t	 delta_memory_max; /* bytes of chains held for /v1/delta */
	uint64_t	 max_header_size; /* libmicrohttpd's memory per connection */
	unsigned	 longpoll_max;	/* /v1/delta?wait= requests held at once */
	int64_t		 longpoll_wait_max; /* seconds one is held, at most */
	unsigned	 conn_timeout;	/* seconds of idle before a drop */
	unsigned	 max_conns;
	unsigned	 max_conns_per_ip;
	bool		 fast_path;	/* fastpath.c answers plain GET checks */
	unsigned	 threads;	/* 0: one per CPU */
	unsigned	 loader_nice;	/* added to the loading thread's nice */
	int64_t		 reload_spare;	/* s a released table copy is kept; 0: none */
	unsigned	 poll_interval;	/* seconds between readlink polls */
	char		*authz_cert_header;
	bool		 authz_cert_xfcc;	/* "authz_cert_header_format" */
	bool		 authz_not_covered_allow;
	int		 log_level;	/* enum log_level */
	bool		 log_json;	/* log_format "json" */
	/* Token verification: file-only lists, see config.c. */
	struct config_issuer issuers[CONFIG_MAX_ISSUERS];
	size_t		 nissuers;
	bool		 revocation_only;	/* "token_verification" */
	uint64_t	 token_cache_size;	/* verified tokens kept; 0: none */
	int64_t		 token_cache_max;	/* seconds one is kept, at most */
	struct config_client clients[CONFIG_MAX_CLIENTS];
	size_t		 nclients;
	struct config_ocsp ocsp;	/* config_ocsp.c */
	/* Edge mode. Parsed and validated here; the sync code
	 * lives in svc/sync.c and svc/upstream.c. */
	char		*upstream_filter;
	char		*upstream_check;
	int64_t		 sync_interval;
	int64_t		 upstream_wait;		/* long-poll seconds; 0: poll */
	uint64_t	 max_download;
	int64_t		 max_lag;		/* seconds; 0: off (5m) */
	int64_t		 sync_timeout;		/* seconds for one download */
	int64_t		 sync_connect_timeout;	/* seconds, <= sync_timeout */
	int64_t		 upstream_timeout;	/* seconds per attempt */
	int64_t		 upstream_connect_timeout; /* <= upstream_timeout */
	unsigned	 upstream_retries;	/* extra attempts */
	unsigned	 upstream_concurrency;	/* requests to the origin at once */
	unsigned	 upstream_max_waiting;	/* requests waiting on it at once */
	char		*upstream_ca_file;	/* NULL: the system's CAs */
	bool		 upstream_insecure_http; /* allow http:// upstreams */
	/*
	 * Which keys the file or a flag set (bit i: the i-th key of
	 * config.c's table), so that config_validate() can refuse edge-only
	 * keys on an origin and config_from_args() can fit a connect timeout
	 * left at its default inside a shorter total.
	 */
	uint64_t	 keys_set;
	enum config_action action;
	bool		 usage_error;	/* the last failure was a bad flag */
};

/* Fills c with the safe defaults. This function can't fail. */
void config_init(struct config *c);

/* Releases every string c owns and zeroes it. Safe on a zeroed struct. */
void config_free(struct config *c);

/*
 * Reads and applies a config file. Returns 0, or -1 with err naming the
 * file and the bad key, or the line and column of a syntax error. On
 * failure c may hold some of the file's settings.
 */
int config_load_file(struct config *c, const char *path, char *err,
    size_t errlen);

/*
 * Applies a config document held in memory (comments allowed). origin
 * names it in errors. Returns 0, or -1 with err.
 */
int config_load_buf(struct config *c, const char *buf, size_t len,
    const char *origin, char *err, size_t errlen);

/*
 * The whole startup path: scans argv for -c and the action flags, loads
 * the file when one is given, then applies every other flag on top. A
 * sync_connect_timeout or upstream_connect_timeout left at its default
 * is lowered to its total timeout when that is shorter.
 * Returns 0, or -1 with err naming the flag or key; a failure caused by
 * the command line itself (an unknown flag, a stray argument, a bad flag
 * value) also sets c->usage_error, so that the caller can exit 2. argv is
 * not modified beyond getopt's permutation.
 */
int config_from_args(struct config *c, int argc, char **argv, char *err,
    size_t errlen);

/*
 * Checks that the settings hang together: listen parses, a filter
 * directory or an upstream is set, at least one trusted key, the numbers
 * are in range, no connect timeout exceeds its total, no edge-only key
 * on an origin. Does not touch the filesystem. Returns 0, or -1 with err
 * naming the key.
 */
int config_validate(const struct config *c, char *err, size_t errlen);

/*
 * Resolves filter_owner (a user name or a numeric uid) into *uid and sets
 * *set; with filter_owner unset, *set is false. Returns 0, or -1 with err
 * (an unknown user name).
 */
int config_filter_owner(const struct config *c, uid_t *uid, bool *set,
    char *err, size_t errlen);

/*
 * Parses ADDR:PORT, [V6ADDR]:PORT, HOST:PORT or :PORT / PORT (loopback
 * IPv4) into a sockaddr. A host name is resolved with getaddrinfo() and
 * its first IPv4 address is used (else its first IPv6 one), so
 * "localhost:8080" listens on 127.0.0.1. Returns 0, or -1 when the text
 * does not parse or the name does not resolve.
 */
int config_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen);

/*
 * SIGHUP: which settings differ between the running configuration a and a
 * freshly read b, among the ones SIGHUP applies (live: the keys listed in
 * config_reload.c's live_keys, "issuers" and "introspection_clients") or among
 * the ones that need a restart (!live). Writes their keys, comma-separated,
 * to out (truncated to fit) and returns how many there are. This function
 * can't fail.
 */
size_t config_changed_keys(const struct config *a, const struct config *b,
    bool live, char *out, size_t outlen);

/* config_changed_keys(a, b, false, ...): the restart-only keys changed. */
size_t config_restart_keys(const struct config *a, const struct config *b,
    char *out, size_t outlen);

/* True when SIGHUP applies key (a config-file key name). */
bool config_key_is_live(const char *key);

/*
 * Makes dst a deep copy of src (every string duplicated; dst is
 * overwritten, not freed first). Returns 0, or -1 with err when memory
 * runs out (dst is then zeroed).
 */
int config_copy(struct config *dst, const struct config *src, char *err,
    size_t errlen);

/*
 * SIGHUP: gives every restart-only key of b the value it has in a (the
 * running configuration), so that b is what will be in force. Returns 0,
 * or -1 with err when memory runs out (b then holds a mix: free it).
 */
int config_keep_restart(struct config *b, const struct config *a, char *err,
    size_t errlen);

/* Prints the usage text (matches revcheckd(8)). */
void config_usage(FILE *fp);

#endif
