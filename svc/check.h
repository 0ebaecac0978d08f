/* check.h - the check logic: filter, fall-through to the authority, fail closed */
#ifndef REVCHECK_SVC_CHECK_H
#define REVCHECK_SVC_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "revkey.h"
#include "snapshot.h"
#include "stale.h"
#include "table.h"
#include "trust.h"

enum check_status {
	CHECK_NOT_REVOKED = 0,
	CHECK_REVOKED,
	CHECK_NOT_COVERED,
};

enum check_source {
	CHECK_SRC_FILTER = 0,
	CHECK_SRC_AUTHORITATIVE,
	CHECK_SRC_DELTA,	/* the delta overlay decided (lib/overlay.h) */
	CHECK_SRC_EXACT,	/* an exact scope's structure decided alone */
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

/*
 * check_begin for a probe (/readyz): the same gate, but a refusal is not
 * counted. revcheckd_refused_*_total count checks a client did not get
 * answered; a load balancer polling an unready node would otherwise make
 * them grow with the probe rate, and hide how many real requests failed.
 */
enum check_gate check_probe_begin(struct snapshot_slot *sl,
    const struct stale_policy *p, int64_t now, const struct snapshot **out,
    enum stale_reason *why);

/* Ends the section check_begin started for s. Can't fail. */
void check_end(const struct snapshot *s);

/*
 * Answers one key from a fresh snapshot: not_covered when the scope is
 * not in the filter or a partial CRL does not cover the key (crl.h);
 * the delta overlay's answer for a key it holds; in an exact scope,
 * not_revoked when its structure says EXACT_NOT_REVOKED, and revoked
 * when it says EXACT_REVOKED and k is shown issued no later than the
 * scope's cutoff (k->has_issued: a certificate's notBefore, a verified
 * token's iat); else not_revoked from the filter on a zero bit;
 * otherwise (a positive, an exact positive not shown issued by the
 * cutoff included) the table's answer, or the authority's. Returns 0 with r filled, or -1
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
 * for them together, a chunk at a time (bloom_query_keys: each key is
 * hashed and its cache lines requested while earlier keys are read).
 * rc[i] is what check_key would return for keys[i]: 0 with r[i] filled,
 * or -1 with r[i].fail set (the caller answers that item as unsettled,
 * never not_revoked). This function can't fail.
 */
void check_keys_tally(const struct snapshot *s, const struct revkey *keys,
    size_t n, struct check_result *r, int *rc, struct metrics_tally *t);

/*
 * Answers a token from every one of its keys: its jti key k, and its
 * subject and session cutoff keys in c (NULL: none). Each key is asked
 * whatever the others answered, and the worst verdict wins (revoked, then
 * not_covered, then not_revoked; check_token_merge), so a cutoff revokes
 * a token whose jti scope the filter does not cover, or whose jti
 * positive is unsettled. Returns 0 with r filled, or -1 (r->fail set)
 * when some key could not be settled and no key proved the token
 * revoked: the caller refuses, never answers not_revoked nor not_covered.
 * Counts as check_key_tally does, in t (NULL: the global counters).
 */
int check_token_tally(const struct snapshot *s, const struct revkey *k,
    const struct trust_cutoffs *c, struct check_result *r,
    struct metrics_tally *t);

/* check_token_tally with the global counters. */
int check_token(const struct snapshot *s, const struct revkey *k,
    const struct trust_cutoffs *c, struct check_result *r);

/*
 * Merges cr, the answer for one of a token's cutoff keys (its subject's
 * when sub, else its session's), into r, the token's answer so far: a
 * cutoff found revoked at time T revokes the token when it has no iat,
 * iat < T, or T is unknown (0), and revoked wins over not_covered and
 * not_revoked. A cutoff not revoked, issued after, or in a scope the
 * filter does not cover (that issuer has no such cutoff) leaves r as it
 * is: the jti's answer says the rest. This function can't fail.
 */
void check_token_merge(struct check_result *r, const struct check_result *cr,
    const struct trust_cutoffs *c, bool sub);

/*
 * The verdict order over a chain: revoked, then not_covered, then
 * not_revoked. Returns the index of the first of the n results (n > 0)
 * with the worst status. This function can't fail.
 */
size_t check_worst(const struct check_result *r, size_t n);

const char *check_status_str(enum check_status st);
/* "authority_unavailable" or "authority_behind". */
const char *check_fail_str(enum check_fail f);
const char *check_source_str(enum check_source src);

#endif
