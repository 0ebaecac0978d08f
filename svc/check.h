/* check.h - the check logic: filter, fall-through to the authority, fail closed */
#ifndef REVCHECK_SVC_CHECK_H
#define REVCHECK_SVC_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "metrics.h"
#include "revkey.h"
#include "sbuf.h"
#include "snapshot.h"
#include "stale.h"
#include "table.h"
#include "trust.h"

enum check_status {
	CHECK_NOT_REVOKED = 0,
	CHECK_REVOKED,
	CHECK_NOT_COVERED,
};

/*
 * Caps on a certificate chain (POST /v1/check {"cert", "chain"} and the
 * authz client-certificate header): certificates in all, the leaf
 * included, and bytes of their text added up.
 */
#define CHECK_CHAIN_MAX_CERTS	8
#define CHECK_CHAIN_MAX_BYTES	(64 * 1024)

enum check_source {
	CHECK_SRC_FILTER = 0,
	CHECK_SRC_AUTHORITATIVE,
	CHECK_SRC_DELTA,	/* the delta overlay decided (lib/overlay.h) */
};

/* Why a positive was left unsettled (check_key returned -1). */
enum check_fail {
	CHECK_FAIL_UNAVAILABLE = 0,	/* 503 authority_unavailable */
	CHECK_FAIL_BEHIND,		/* 503 authority_behind */
	CHECK_FAIL_PENDING,		/* not asked yet (check_settle): this
					 * answer is thrown away and made again */
};

struct check_result {
	enum check_status status;
	enum check_fail	 fail;		/* set when check_key returns -1 */
	enum check_source source;
	int64_t		 revoked_at;	/* 0 when unknown */
	char		 reason[TABLE_REASON_MAX];
};

/* Why a request gets no answer at all. */
enum check_gate {
	CHECK_GATE_OK = 0,
	CHECK_GATE_NO_FILTER,	/* 503 no_filter */
	CHECK_GATE_STALE,	/* 503 filter_stale */
};

/*
 * The authority settles filter positives when the snapshot has no table
 * (an edge node). It fills r (status and source; revoked_at and reason
 * when known) and returns 0, or returns -1 with r->fail set when it
 * cannot answer. The
 * default is none, so positives without a table are unavailable: the
 * edge engineer plugs the upstream call in here (svc/upstream.c).
 * Called from many threads at once.
 */
typedef int (*check_authority_fn)(void *arg, const struct snapshot *s,
    const struct revkey *k, struct check_result *r);

void check_set_authority(check_authority_fn fn, void *arg);

/*
 * Settling a request's positives off the thread that answers it (edge).
 * While a thread has a settle slot bound (check_settle_bind), check_key
 * does not call the authority: it answers a positive from the slot's
 * check_settle when that key was settled for this snapshot version, and
 * otherwise records the key there (once, however often it is asked) and
 * fails with CHECK_FAIL_PENDING. The server then throws the answer away,
 * has the keys settled in one go (upstream_settle) without holding a
 * worker thread, and runs the handler again. A request is deferred at
 * most CHECK_SETTLE_PASSES times (a reload may change what is positive)
 * and settles at most CHECK_SETTLE_MAX distinct keys; past either, a
 * positive fails with CHECK_FAIL_UNAVAILABLE.
 */
#define CHECK_SETTLE_MAX	4096
#define CHECK_SETTLE_PASSES	3

struct check_settle {
	size_t		 n;		/* keys recorded */
	size_t		 asked;		/* keys[0..asked) have an outcome */
	size_t		 cap;		/* room in the arrays below */
	struct revkey	*keys;
	uint64_t	*version;	/* the snapshot version each was asked for */
	struct check_result *res;	/* the outcome of keys[i < asked] */
	int		*rc;		/* 0: answered into res[i]; -1: res[i].fail */
	uint32_t	*slots;		/* hash of (key, version): index + 1 */
	unsigned	 passes;	/* times the request was deferred */
	double		 deadline;	/* monotonic, for all of the request's
					 * upstream work; 0 until first asked */
};

/*
 * Binds slot (*slot may be NULL: a check_settle is allocated there on the
 * first positive) to the calling thread; NULL unbinds. This function
 * can't fail.
 */
void check_settle_bind(struct check_settle **slot);

/* True when keys were recorded that have no outcome yet. */
bool check_settle_pending(const struct check_settle *st);

/* Gives every key without an outcome the failure f. Can't fail. */
void check_settle_fail_pending(struct check_settle *st, enum check_fail f);

/* Frees st and what it holds. NULL-safe. */
void check_settle_free(struct check_settle *st);

/*
 * Finds the current snapshot in a read section (snapshot_enter: nothing
 * written that another thread writes) and checks it is fresh at now.
 * Returns CHECK_GATE_OK with *out set, valid until check_end(*out) on
 * this thread, or the refusal with *out NULL (nothing to end) and *why
 * set for CHECK_GATE_STALE. Counts refusals. Between the two, nothing
 * may block for long: a reload waits for the section to end.
 */
enum check_gate check_begin(struct snapshot_slot *sl,
    const struct stale_policy *p, int64_t now, const struct snapshot **out,
    enum stale_reason *why);

/* Ends the section check_begin started for s. Can't fail. */
void check_end(const struct snapshot *s);

/*
 * Answers one key from a fresh snapshot: not_covered when the scope is
 * not in the filter or a partial CRL does not cover the key (crl.h);
 * not_revoked from the filter on a zero bit; otherwise
 * the table's answer, or the authority's. Returns 0 with r filled, or -1
 * when the positive could not be settled, r->fail saying why: the caller
 * must answer 503 (authority_unavailable or authority_behind), never
 * not_revoked.
 * Updates the counters.
 */
int check_key(const struct snapshot *s, const struct revkey *k,
    struct check_result *r);

/* The same, counting in t (flushed by the caller), NULL as check_key(). */
int check_key_tally(const struct snapshot *s, const struct revkey *k,
    struct check_result *r, struct metrics_tally *t);

/*
 * Answers keys[0..n) from one snapshot exactly as check_key_tally answers
 * each of them (the same results and counts, in t), but asks the filter
 * for them together, a chunk at a time (bloom_query_many: each key's
 * cache lines are requested while earlier keys are read). rc[i] is what
 * check_key would return for keys[i]: 0 with r[i] filled, or -1 with
 * r[i].fail set (the caller answers that item as unsettled, never
 * not_revoked). This function can't fail.
 */
void check_keys_tally(const struct snapshot *s, const struct revkey *keys,
    size_t n, struct check_result *r, int *rc, struct metrics_tally *t);

/*
 * Parses a POST /v1/check body: valid UTF-8, exactly one JSON value with
 * nothing but whitespace after it, and that value an object. Returns the
 * root, which the caller deletes, or NULL with *why set to a static
 * message (safe to show: it never contains the input).
 */
cJSON *check_parse_body(const char *body, size_t len, const char **why);

/*
 * Derives the key of one check object: {"id", "scope"?}, {"cert"} or
 * {"token"}; exactly one of id, cert and token. A token is proven valid
 * first (trust_token with tr; NULL refuses it). Returns 0, or -1 with err
 * (safe to show: it never contains the input) and *why: JWT_VALID for a
 * bad request, JWT_MALFORMED for an unreadable token, any other verdict
 * for a token that failed verification (401 invalid_token).
 */
int check_key_from_json(const cJSON *obj, struct trust *tr,
    struct revkey *k, enum jwt_verdict *why, char *err, size_t errlen);

/*
 * The key of {"id": id, "scope": scope} (scope NULL: no "scope", the
 * default), from bytes that need not be NUL-terminated (a batch item
 * read in place): the rule and the message check_key_from_json gives for
 * that object. Returns 0, or -1 with err (safe to show).
 */
int check_key_from_id(struct revkey *k, const char *scope, size_t scope_len,
    const char *id, size_t id_len, char *err, size_t errlen);

/*
 * The same, also filling cut for a {"token"} object (cut->has_sub and
 * has_sid stay false for the other kinds). cut may be NULL.
 */
int check_key_from_json_cut(const cJSON *obj, struct trust *tr,
    struct revkey *k, struct trust_cutoffs *cut, enum jwt_verdict *why,
    char *err, size_t errlen);

/*
 * Applies a token's subject and session cutoffs after its jti was
 * answered not_revoked in r: a cutoff key found revoked at time T
 * revokes the token when it has no iat or iat < T (and always when T is
 * unknown). Leaves r alone when no cutoff applies (a cutoff scope the
 * filter does not cover holds no cutoff: the jti's issuer scope is
 * covered). Returns 0, or -1 when a cutoff positive could not be settled
 * (r->fail set): the caller refuses, never answers not_revoked.
 */
int check_cutoffs(const struct snapshot *s, const struct trust_cutoffs *c,
    struct check_result *r);

/* True when why (from check_key_from_json) means 401 invalid_token. */
bool check_invalid_token(enum jwt_verdict why);

/*
 * Derives the key of every certificate in text and appends them to
 * keys[*n..max). text is one or more PEM "CERTIFICATE" blocks with only
 * whitespace around and between them, or (without PEM armour) exactly one
 * DER certificate. Every block must be a certificate: a block that does
 * not parse, any other text, no certificate at all or more than max keys
 * in all returns -1 with err saying which (1-based position in text) and
 * why (safe to show: it never contains the input); *n is then undefined.
 * Returns 0 with *n advanced.
 */
int check_keys_from_pem(const char *text, size_t len, struct revkey *keys,
    size_t max, size_t *n, char *err, size_t errlen);

/*
 * Derives the keys of {"cert": PEM, "chain": [PEM, ...]} ("chain"
 * optional): the certificates of "cert" first, then those of each chain
 * element in order, at most CHECK_CHAIN_MAX_CERTS and CHECK_CHAIN_MAX_BYTES
 * of text. "id", "token" and "scope" may not be present. Returns 0 with
 * keys[0..*n) set, or -1 with err (safe to show).
 */
int check_chain_from_json(const cJSON *obj, struct revkey *keys, size_t *n,
    char *err, size_t errlen);

/*
 * The verdict order over a chain: revoked, then not_covered, then
 * not_revoked. Returns the index of the first of the n results (n > 0)
 * with the worst status. This function can't fail.
 */
size_t check_worst(const struct check_result *r, size_t n);

/*
 * Appends the answer of a chain: the fields of the worst result (as
 * check_render), "decided_by" (its index) and "chain", one answer object
 * per certificate in order; ok[i] false renders certificate i as an
 * error object named by r[i].fail (check_fail_str). worst must be an index with ok[worst].
 */
void check_render_chain(struct sbuf *b, const struct snapshot *s,
    const struct revkey *keys, const struct check_result *r, const bool *ok,
    size_t n, size_t worst);

/* Appends the answer object for one key (see docs/API.md). */
void check_render(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r);

/* Appends {"error": code, "message": msg} with both strings escaped. */
void check_render_error(struct sbuf *b, const char *code, const char *msg);

const char *check_status_str(enum check_status st);
/* "authority_unavailable" or "authority_behind". */
const char *check_fail_str(enum check_fail f);
const char *check_source_str(enum check_source src);

#endif
