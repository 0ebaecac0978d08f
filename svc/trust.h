/* trust.h - the trusted token issuers: their keys and secrets, token verification */
#ifndef REVCHECK_SVC_TRUST_H
#define REVCHECK_SVC_TRUST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "jwks.h"
#include "jwt.h"
#include "revkey.h"
#include "sbuf.h"

#define TRUST_SECRET_MAX 4096	/* bytes of a secret file */

/*
 * The cutoff keys of a token (revkey.h): its sub and sid in the cutoff
 * scopes of its issuer, and its iat, which a cutoff compares with its
 * time.
 */
struct trust_cutoffs {
	struct revkey	 sub;
	struct revkey	 sid;
	bool		 has_sub;
	bool		 has_sid;
	bool		 has_iat;
	int64_t		 iat;
};

/*
 * One issuer. keys is the set in service: loaded once from jwks_file, or
 * fetched from jwks_uri by the refresh thread, which swaps it under the
 * trust's lock; a failed fetch keeps the last good set until it is older
 * than jwks_max_age.
 */
struct trust_issuer {
	const struct config_issuer *cfg;	/* borrowed from the config */
	struct jwks	*keys;		/* NULL: no good set yet */
	int64_t		 keys_at;	/* when keys were fetched */
	unsigned char	*hs;		/* wiped on free */
	size_t		 hs_len;
	/* Bumped when keys change, under the trust's lock; read without
	 * it by a cache hit. */
	_Atomic uint64_t gen;
	/* jwks_uri only, under the trust's lock (want_refresh: atomic) */
	int64_t		 next_fetch;	/* scheduled refresh */
	int64_t		 last_attempt;
	_Atomic bool	 want_refresh;	/* a token named an unknown kid */
	uint64_t	 fetches_ok;
	uint64_t	 fetches_failed;
	char		 last_error[200];
};

/*
 * A caller of /v1/introspect: its id and secret (wiped on free), and the
 * audiences it is answered for (the config's "audiences", or its id
 * alone when none are given).
 */
struct trust_client {
	const char	*id;		/* borrowed from the config */
	unsigned char	*secret;
	size_t		 len;
	const char *const *aud;		/* borrowed: the config's, or &id */
	size_t		 naud;
};

#define TRUST_CLIENT_SECRET_MIN	16

/*
 * One verified token, known by its exact bytes (buf holds them, then its
 * jti, sub and sid): valid until "until" while its issuer's keys are
 * still generation gen. A hit forms the token's keys from these values
 * with the functions a verification forms them with (jwt_key_values and
 * trust.c's cutoff_values), so it parses nothing and cannot differ.
 */
struct trust_cached {
	char		*buf;		/* NULL: empty slot */
	uint64_t	 hash;		/* of the token's bytes, seeded */
	size_t		 len;		/* token bytes */
	size_t		 jti_len;
	size_t		 sub_len;
	size_t		 sid_len;
	bool		 has_sub;
	bool		 has_sid;
	bool		 has_iat;
	int64_t		 iat;
	int64_t		 until;
	uint64_t	 gen;
	size_t		 issuer;
};

/* Longer tokens are verified every time (a bound on the cache's memory). */
#define TRUST_CACHE_TOKEN_MAX	8192

#define TRUST_CACHE_LOCKS	64

/*
 * Built at startup from the config. Every HTTP worker verifies against
 * it at the same time; the refresh thread (trust_start) replaces fetched
 * key sets under lock.
 */
struct trust {
	struct trust_issuer *iss;
	size_t		 n;
	bool		 revocation_only;
	struct trust_client *clients;
	size_t		 nclients;
	bool		 has_uri;	/* some issuer has jwks_uri */
	bool		 locks;		/* lock, mu and cv are initialised */
	pthread_rwlock_t lock;		/* keys and the fetch state */
	pthread_mutex_t	 mu;		/* stop and the wake-up */
	pthread_cond_t	 cv;
	bool		 stop;
	bool		 running;
	bool		 curl_init;	/* curl_global_init() by trust_start */
	bool		 reload;	/* built by a SIGHUP (trust_inherit) */
	/* Verified-token cache: direct-mapped, a lock per stripe. */
	struct trust_cached *cache;
	size_t		 cache_size;
	int64_t		 cache_max;
	uint64_t	 cache_seed;	/* random: slots cannot be aimed at */
	pthread_mutex_t	 cache_mu[TRUST_CACHE_LOCKS];
	_Atomic uint64_t cache_hits;
	_Atomic uint64_t cache_misses;
	_Atomic uint64_t cache_entries;	/* slots holding a verified token */
	/* Entries dropped: overwritten by another token of the same slot,
	 * found past their time, found made under keys since replaced. */
	_Atomic uint64_t cache_evict_replaced;
	_Atomic uint64_t cache_evict_expired;
	_Atomic uint64_t cache_evict_keys;
	pthread_t	 thread;
};

/*
 * Loads every issuer's JWKS file and HS secret named in c, and the
 * introspection clients' secrets, each read with loader_read_trusted
 * (regular file, owner and mode checked on the descriptor). c must
 * outlive t. Issuers with jwks_uri start without keys (their tokens get
 * keys_unavailable) until trust_start fetched them. Returns 0, or -1
 * with err naming the issuer and the file; t is then empty (trust_free
 * is still safe).
 */
int trust_init(struct trust *t, const struct config *c, char *err,
    size_t errlen);

/*
 * SIGHUP: gives each jwks_uri issuer of t (built, not started) whose
 * issuer, jwks_uri and jwks_ca_file are those of an issuer of prev a
 * copy of prev's set in service, with its fetch time (so jwks_max_age
 * still counts from the fetch) and counters, and schedules a fetch at
 * once: a reload neither waits on the URL nor loses the last good set
 * while the URL fails. NULL-safe for prev.
 */
void trust_inherit(struct trust *t, struct trust *prev);

/*
 * At start, fetches every jwks_uri once before returning (a failure is
 * logged, not fatal: those issuers' tokens are refused until a fetch
 * succeeds). For a SIGHUP (trust_inherit was given the previous set) the
 * refresh thread makes those first fetches, and trust_start waits for
 * them at most TRUST_RELOAD_WAIT_MS: an issuer whose URL hangs delays
 * the reload by that, not by a fetch timeout per issuer, and its tokens
 * are refused (keys_unavailable) until its fetch succeeds. Then the
 * refresh thread runs: each set is fetched again every jwks_refresh, and
 * sooner when a token named a kid the set does not hold, but never twice
 * within jwks_min_interval. Does nothing without a jwks_uri. Returns 0,
 * or -1 with err when the thread cannot start.
 */
int trust_start(struct trust *t, char *err, size_t errlen);

/*
 * Installs s (taken over; NULL: none) as the key set of issuer i, fetched
 * at now, and frees the old one once no verification uses it. The
 * issuer's generation moves on, so every token cached for it is verified
 * again (counted as an eviction, keys_changed). The refresh thread uses
 * it for jwks_uri issuers. Safe from any thread.
 */
void trust_set_keys(struct trust *t, size_t i, struct jwks *s, int64_t now);

/* Logs each issuer's key source and the introspection clients. */
void trust_log(const struct trust *t);

/* Stops the refresh thread (waits for a fetch in flight). NULL-safe. */
void trust_stop(struct trust *t);

/* Stops, releases the keys, wipes the secrets, zeroes t. Safe when zeroed. */
void trust_free(struct trust *t);

/*
 * Reads a secret file named in c: at most TRUST_SECRET_MAX bytes, with
 * the checks of loader_read_trusted (a regular file, owner and mode on
 * the descriptor read), one trailing newline dropped, at least min bytes
 * left. Returns 0 with *out (the caller wipes and frees it), or -1 with
 * err naming the file.
 */
int trust_read_secret(const struct config *c, const char *path, size_t min,
    unsigned char **out, size_t *len, char *err, size_t errlen);

/*
 * The revocation key of a token, after proving the token valid: in
 * "required" mode (the default) the token must verify against the
 * issuer its "iss" names (jwt_verify; a fetched set older than
 * jwks_max_age refuses with JWT_KEYS_UNAVAILABLE, and an unknown kid asks
 * the refresh thread for a fetch), and with no issuer configured
 * every token is refused (untrusted_issuer); in revocation-only mode it
 * is only decoded. Returns 0 with k, or -1 with *why (JWT_MALFORMED when
 * the token cannot be read at all) and err (safe to show). t NULL
 * refuses every token. This function can be called from many threads.
 */
int trust_token(struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, enum jwt_verdict *why, char *err,
    size_t errlen);

/*
 * trust_token, and on success, when the token was verified (never in
 * revocation-only mode, which answers -1 with JWT_UNTRUSTED_ISSUER here),
 * a copy of its claims in *claims (cJSON_Delete by the caller).
 */
int trust_token_claims(struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, cJSON **claims, enum jwt_verdict *why,
    char *err, size_t errlen);

/*
 * trust_token, also filling cut (when not NULL) with the token's cutoff
 * keys. A sub or sid that cannot form a key (too long) fails the token
 * (JWT_MALFORMED): it could not be checked against its cutoffs.
 */
int trust_token_cut(struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, struct trust_cutoffs *cut,
    cJSON **claims, enum jwt_verdict *why, char *err, size_t errlen);

/*
 * True when secret (slen bytes) is the secret of the introspection
 * client id, or of any client when id is NULL (a bearer secret). The
 * secrets are compared in constant time. False without clients.
 */
bool trust_client_ok(const struct trust *t, const char *id, size_t idlen,
    const unsigned char *secret, size_t slen);

/*
 * The client trust_client_ok() would accept with these credentials, or
 * NULL; with id NULL, the first client whose secret it is. Borrowed
 * from t.
 */
const struct trust_client *trust_client_find(const struct trust *t,
    const char *id, size_t idlen, const unsigned char *secret, size_t slen);

/*
 * Appends the Prometheus series of the verified-token cache
 * (revcheckd_token_cache_{hits,misses}_total, _entries, _size,
 * _evictions_total{reason}), the tokens refused by reason
 * (revcheckd_token_verification_failures_total{reason}, every
 * jwt_verdict_str word but valid, for the whole process) and of every
 * issuer's keys
 * (revcheckd_jwks_keys{issuer}; for a jwks_uri, _refreshes_total,
 * _refresh_failures_total and _age_seconds). t NULL: zeros, no issuer.
 */
void trust_metrics(struct sbuf *b, struct trust *t);

/*
 * Adds "token_verification":{...} to a /v1/status object: the mode
 * and, per issuer, its name, key count, algorithms and, for a jwks_uri,
 * the age of its set and the fetch counters and last error.
 */
void trust_status_json(cJSON *root, struct trust *t);

#endif
