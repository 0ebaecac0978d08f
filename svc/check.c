/* check.c - the check logic: filter, fall-through to the authority, fail closed */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "bloomhash.h"

#include "check.h"
#include "crl.h"
#include "metrics.h"

static check_authority_fn authority_fn;
static void *authority_arg;

/* This thread's settle slot (check_settle_bind), NULL when none. */
static _Thread_local struct check_settle **settle_slot;

#define SETTLE_SLOTS	(2 * CHECK_SETTLE_MAX)	/* a power of two */

void
check_settle_bind(struct check_settle **slot)
{
	settle_slot = slot;
}

bool
check_settle_pending(const struct check_settle *st)
{
	return st != NULL && st->asked < st->n;
}

void
check_settle_fail_pending(struct check_settle *st, enum check_fail f)
{
	if (st == NULL)
		return;
	for (; st->asked < st->n; st->asked++) {
		memset(&st->res[st->asked], 0, sizeof(st->res[0]));
		st->res[st->asked].fail = f;
		st->rc[st->asked] = -1;
	}
}

void
check_settle_free(struct check_settle *st)
{
	if (st == NULL)
		return;
	free(st->keys);
	free(st->version);
	free(st->res);
	free(st->rc);
	free(st->slots);
	free(st);
}

/*
 * The settle table's hash is keyed with a secret of the process: with the
 * filter version alone (which every answer names) a client could choose
 * a batch's positives to collide and make each insert a scan.
 */
static uint64_t settle_secret;
static pthread_once_t settle_secret_once = PTHREAD_ONCE_INIT;

static void
settle_secret_init(void)
{
	if (RAND_bytes((unsigned char *)&settle_secret,
	    (int)sizeof(settle_secret)) != 1)
		settle_secret = (uint64_t)time(NULL) *
		    UINT64_C(0x9e3779b97f4a7c15);
}

static uint32_t
settle_hash(const struct revkey *k, uint64_t version)
{
	unsigned char enc[REVKEY_ENC_MAX];
	size_t len = revkey_encode(k, enc);

	(void)pthread_once(&settle_secret_once, settle_secret_init);
	return (uint32_t)XXH3_64bits_withSeed(enc, len,
	    version ^ settle_secret);
}

/* Room for one more key; -1 when memory runs out. */
static int
settle_grow(struct check_settle *st)
{
	size_t cap = st->cap == 0 ? 4 : 2 * st->cap;
	void *p;

	if (st->n < st->cap)
		return 0;
	if (cap > CHECK_SETTLE_MAX)
		cap = CHECK_SETTLE_MAX;
	if ((p = realloc(st->keys, cap * sizeof(st->keys[0]))) == NULL)
		return -1;
	st->keys = p;
	if ((p = realloc(st->version, cap * sizeof(st->version[0]))) == NULL)
		return -1;
	st->version = p;
	if ((p = realloc(st->res, cap * sizeof(st->res[0]))) == NULL)
		return -1;
	st->res = p;
	if ((p = realloc(st->rc, cap * sizeof(st->rc[0]))) == NULL)
		return -1;
	st->rc = p;
	st->cap = cap;
	return 0;
}

/*
 * The authority step through the bound settle slot: 0 with r filled when
 * k was settled for s's version, -1 with r->fail otherwise (PENDING when
 * it was recorded to be asked), 1 when no slot is bound (ask directly).
 */
static int
settle_lookup(const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	struct check_settle *st;
	uint32_t h, i;

	if (settle_slot == NULL)
		return 1;
	if ((st = *settle_slot) == NULL) {
		if ((st = calloc(1, sizeof(*st))) == NULL ||
		    (st->slots = calloc(SETTLE_SLOTS,
		    sizeof(st->slots[0]))) == NULL) {
			free(st);
			r->fail = CHECK_FAIL_UNAVAILABLE;
			return -1;
		}
		*settle_slot = st;
	}
	h = settle_hash(k, s->version);
	for (i = h & (SETTLE_SLOTS - 1); st->slots[i] != 0;
	    i = (i + 1) & (SETTLE_SLOTS - 1)) {
		size_t j = st->slots[i] - 1;

		if (st->version[j] != s->version ||
		    revkey_cmp(&st->keys[j], k) != 0)
			continue;
		if (j >= st->asked) {
			r->fail = CHECK_FAIL_PENDING;
			return -1;
		}
		if (st->rc[j] == 0) {
			*r = st->res[j];
			return 0;
		}
		r->fail = st->res[j].fail;
		return -1;
	}
	if (st->passes >= CHECK_SETTLE_PASSES || st->n >= CHECK_SETTLE_MAX ||
	    settle_grow(st) == -1) {
		r->fail = CHECK_FAIL_UNAVAILABLE;
		return -1;
	}
	st->keys[st->n] = *k;
	st->version[st->n] = s->version;
	st->slots[i] = (uint32_t)(st->n + 1);
	st->n++;
	r->fail = CHECK_FAIL_PENDING;
	return -1;
}

void
check_set_authority(check_authority_fn fn, void *arg)
{
	authority_fn = fn;
	authority_arg = arg;
}

const char *
check_status_str(enum check_status st)
{
	switch (st) {
	case CHECK_NOT_REVOKED:
		return "not_revoked";
	case CHECK_REVOKED:
		return "revoked";
	case CHECK_NOT_COVERED:
		return "not_covered";
	}
	return "unknown";
}

const char *
check_fail_str(enum check_fail f)
{
	/* PENDING never reaches a client: that answer is made again. */
	return f == CHECK_FAIL_BEHIND ? "authority_behind" :
	    "authority_unavailable";
}

const char *
check_source_str(enum check_source src)
{
	return src == CHECK_SRC_FILTER ? "filter" : src == CHECK_SRC_DELTA ?
	    "delta" : src == CHECK_SRC_EXACT ? "exact" : "authoritative";
}

static enum check_gate
gate_begin(struct snapshot_slot *sl, const struct stale_policy *p,
    int64_t now, const struct snapshot **out, enum stale_reason *why,
    bool count)
{
	struct snapshot *s;
	enum stale_reason r;

	*out = NULL;
	*why = STALE_FRESH;
	if ((s = snapshot_enter(sl)) == NULL) {
		snapshot_leave();
		if (count)
			metrics_inc(MET_REFUSED_NO_FILTER);
		return CHECK_GATE_NO_FILTER;
	}
	r = snapshot_stale(s, p, now, sl);
	if (r != STALE_FRESH) {
		snapshot_leave();
		*why = r;
		if (count)
			metrics_inc(MET_REFUSED_STALE);
		return CHECK_GATE_STALE;
	}
	*out = s;
	return CHECK_GATE_OK;
}

enum check_gate
check_begin(struct snapshot_slot *sl, const struct stale_policy *p,
    int64_t now, const struct snapshot **out, enum stale_reason *why)
{
	return gate_begin(sl, p, now, out, why, true);
}

enum check_gate
check_probe_begin(struct snapshot_slot *sl, const struct stale_policy *p,
    int64_t now, const struct snapshot **out, enum stale_reason *why)
{
	return gate_begin(sl, p, now, out, why, false);
}

void
check_end(const struct snapshot *s)
{
	if (s != NULL)
		snapshot_leave();
}

int
check_key(const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	return check_key_tally(s, k, r, NULL);
}

/*
 * The steps of a check before the filter: coverage (sc is the filter's
 * entry for k's scope, NULL when it has none), then the delta overlay.
 * Returns true when they decided (r filled), false when the
 * filter must be asked.
 */
static bool
decide_before_filter(const struct snapshot *s, const struct revkey *k,
    const struct ffile_scope *sc, struct check_result *r,
    struct metrics_tally *t)
{
	struct table_rec rec;

	memset(r, 0, sizeof(*r));
	metrics_tally_inc(t, MET_CHECKS);
	/*
	 * A partial CRL answers only for the certificates it covers; an
	 * indirect CRL of another issuer for the certificates naming it.
	 * sc is the common case found once; crl_covered looks further.
	 */
	if ((sc == NULL || !crl_key_covered(sc, k)) &&
	    !crl_covered(s->ff, k)) {
		metrics_tally_inc(t, MET_NOT_COVERED);
		r->status = CHECK_NOT_COVERED;
		r->source = CHECK_SRC_FILTER;
		return true;
	}
	/*
	 * The overlay is exact and newer than the base: a key it knows is
	 * decided by its last change, added or removed.
	 */
	if (s->ov != NULL) {
		int op = overlay_find(s->ov, k, &rec);

		if (op == DELTA_ADD) {
			metrics_tally_inc(t, MET_DELTA_HITS);
			r->status = CHECK_REVOKED;
			r->source = CHECK_SRC_DELTA;
			r->revoked_at = rec.revoked_at;
			memcpy(r->reason, rec.reason, sizeof(r->reason));
			r->reason[sizeof(r->reason) - 1] = '\0';
			return true;
		}
		if (op == DELTA_REMOVE) {
			metrics_tally_inc(t, MET_DELTA_HITS);
			r->status = CHECK_NOT_REVOKED;
			r->source = CHECK_SRC_DELTA;
			return true;
		}
	}
	return false;
}

/*
 * The steps after the filter answered maybe_present: not_revoked on a
 * negative; otherwise the table's answer, or the authority's. Returns 0,
 * or -1 with r->fail (the positive could not be settled).
 */
static int
decide_after_filter(const struct snapshot *s, const struct revkey *k,
    bool maybe_present, struct check_result *r, struct metrics_tally *t)
{
	struct table_rec rec;
	int found;

	if (!maybe_present) {
		metrics_tally_inc(t, MET_FILTER_NEGATIVE);
		r->status = CHECK_NOT_REVOKED;
		r->source = CHECK_SRC_FILTER;
		return 0;
	}
	metrics_tally_inc(t, MET_FALLTHROUGH);
	r->source = CHECK_SRC_AUTHORITATIVE;
	if (s->tab != NULL) {
		found = table_lookup(s->tab, k, &rec);

		if (found == -1) {
			/* Cannot happen to a validated private copy; never absent. */
			r->fail = CHECK_FAIL_UNAVAILABLE;
			metrics_tally_inc(t, MET_AUTHORITY_UNAVAILABLE);
			return -1;
		}
		if (found == 1) {
			r->status = CHECK_REVOKED;
			r->revoked_at = rec.revoked_at;
			memcpy(r->reason, rec.reason, sizeof(r->reason));
			r->reason[sizeof(r->reason) - 1] = '\0';
		} else
			r->status = CHECK_NOT_REVOKED;
	} else if ((found = settle_lookup(s, k, r)) != 1) {
		if (found == -1) {
			metrics_tally_inc(t, r->fail == CHECK_FAIL_BEHIND ?
			    MET_AUTHORITY_BEHIND : MET_AUTHORITY_UNAVAILABLE);
			return -1;
		}
	} else if (authority_fn == NULL ||
	    authority_fn(authority_arg, s, k, r) == -1) {
		metrics_tally_inc(t, r->fail == CHECK_FAIL_BEHIND ?
		    MET_AUTHORITY_BEHIND : MET_AUTHORITY_UNAVAILABLE);
		return -1;
	}
	if (r->status == CHECK_REVOKED)
		metrics_tally_inc(t, MET_CONFIRMED_REVOKED);
	else
		metrics_tally_inc(t, MET_FALSE_POSITIVE);
	return 0;
}

/*
 * The filter step for a key of an exact scope sc, which the bit array
 * does not hold. EXACT_NOT_REVOKED is proof for any key. EXACT_REVOKED
 * is proof only for a key of the issued set, and a key is shown to be
 * in it only by being issued no later than the cutoff; any other
 * positive goes on as a filter positive does. Returns as
 * decide_after_filter.
 */
static int
decide_exact(const struct snapshot *s, const struct revkey *k,
    const struct ffile_scope *sc, struct check_result *r,
    struct metrics_tally *t)
{
	struct table_rec rec;

	if (ffile_exact_query(sc, k) == EXACT_NOT_REVOKED) {
		metrics_tally_inc(t, MET_EXACT_NOT_REVOKED);
		r->status = CHECK_NOT_REVOKED;
		r->source = CHECK_SRC_EXACT;
		return 0;
	}
	if (!k->has_issued || k->issued_at > sc->ex.cutoff) {
		metrics_tally_inc(t, MET_EXACT_UNPROVEN);
		return decide_after_filter(s, k, true, r, t);
	}
	metrics_tally_inc(t, MET_EXACT_REVOKED);
	r->status = CHECK_REVOKED;
	r->source = CHECK_SRC_EXACT;
	/* The details when the table is here; the answer never waits on it. */
	if (s->tab != NULL && table_lookup(s->tab, k, &rec) == 1) {
		r->revoked_at = rec.revoked_at;
		memcpy(r->reason, rec.reason, sizeof(r->reason));
		r->reason[sizeof(r->reason) - 1] = '\0';
	}
	return 0;
}

int
check_key_tally(const struct snapshot *s, const struct revkey *k,
    struct check_result *r, struct metrics_tally *t)
{
	const struct ffile_scope *sc = ffile_scope(s->ff, k->scope);
	unsigned char enc[REVKEY_ENC_MAX];

	if (decide_before_filter(s, k, sc, r, t))
		return 0;
	if (sc != NULL && sc->exact)
		return decide_exact(s, k, sc, r, t);
	return decide_after_filter(s, k, bloom_query_inline(ffile_bloom(s->ff),
	    enc, revkey_encode(k, enc)), r, t);
}

/* Keys whose filter lookups are overlapped at once (bloom_query_keys). */
#define MANY_CHUNK	64
/* Their encoded bytes side by side: room for several keys of any length. */
#define MANY_ENC	8192
_Static_assert(MANY_ENC >= 4 * REVKEY_ENC_MAX, "MANY_ENC holds few keys");

/* Asks the filter for the pending keys at once, then ends each check. */
static void
settle_chunk(const struct snapshot *s, const struct revkey *keys,
    const size_t *idx, const unsigned char *const *enc, const size_t *len,
    size_t m, struct check_result *r, int *rc, struct metrics_tally *t)
{
	bool maybe[MANY_CHUNK];
	size_t j;

	bloom_query_keys(ffile_bloom(s->ff), enc, len, m, maybe);
	for (j = 0; j < m; j++)
		rc[idx[j]] = decide_after_filter(s, &keys[idx[j]], maybe[j],
		    &r[idx[j]], t);
}

void
check_keys_tally(const struct snapshot *s, const struct revkey *keys,
    size_t n, struct check_result *r, int *rc, struct metrics_tally *t)
{
	const struct ffile_scope *sc = NULL;
	const struct revkey *prev = NULL;
	unsigned char buf[MANY_ENC];
	const unsigned char *enc[MANY_CHUNK];
	size_t idx[MANY_CHUNK], len[MANY_CHUNK], i, m = 0, used = 0;

	for (i = 0; i < n; i++) {
		rc[i] = 0;
		/* Items of a batch mostly share one scope. */
		if (prev == NULL || prev->scope_len != keys[i].scope_len ||
		    memcmp(prev->scope, keys[i].scope, keys[i].scope_len) != 0)
			sc = ffile_scope(s->ff, keys[i].scope);
		prev = &keys[i];
		/* What coverage and the overlay decide needs no filter. */
		if (decide_before_filter(s, &keys[i], sc, &r[i], t))
			continue;
		/* An exact scope's keys are not in the bit array. */
		if (sc != NULL && sc->exact) {
			rc[i] = decide_exact(s, &keys[i], sc, &r[i], t);
			continue;
		}
		if (m == MANY_CHUNK || used + REVKEY_ENC_MAX > sizeof(buf)) {
			settle_chunk(s, keys, idx, enc, len, m, r, rc, t);
			m = used = 0;
		}
		idx[m] = i;
		enc[m] = buf + used;
		len[m] = revkey_encode(&keys[i], buf + used);
		used += len[m++];
	}
	if (m > 0)
		settle_chunk(s, keys, idx, enc, len, m, r, rc, t);
}


/*
 * Whether a cutoff answer cr revokes a token issued at c->iat: a cutoff
 * found revoked at time T revokes it when it has no iat, iat < T, or T
 * is unknown. A cutoff scope the filter does not cover holds no cutoff.
 */
static bool
cutoff_revokes(const struct check_result *cr, const struct trust_cutoffs *c)
{
	if (cr->status != CHECK_REVOKED)
		return false;
	return cr->revoked_at == 0 || !c->has_iat || c->iat < cr->revoked_at;
}

void
check_token_merge(struct check_result *r, const struct check_result *cr,
    const struct trust_cutoffs *c, bool sub)
{
	if (r->status == CHECK_REVOKED || !cutoff_revokes(cr, c))
		return;
	r->status = CHECK_REVOKED;
	r->source = cr->source;
	r->revoked_at = cr->revoked_at;
	snprintf(r->reason, sizeof(r->reason), "%s cutoff",
	    sub ? "subject" : "session");
}

int
check_token_tally(const struct snapshot *s, const struct revkey *k,
    const struct trust_cutoffs *c, struct check_result *r,
    struct metrics_tally *t)
{
	const struct revkey *keys[2];
	struct check_result cr;
	enum check_fail fail = CHECK_FAIL_UNAVAILABLE;
	bool failed = false;
	size_t n = 0, i;

	/*
	 * Every key of the token is asked, whatever the others answered:
	 * a jti scope the filter does not cover (not_covered) or a jti
	 * positive the authority has not settled must not hide a cutoff
	 * that revokes the token, and an edge gets all of the token's
	 * positives to settle in one go.
	 */
	if (check_key_tally(s, k, r, t) == -1) {
		failed = true;
		fail = r->fail;
		memset(r, 0, sizeof(*r));
		r->status = CHECK_NOT_COVERED;	/* never not_revoked */
	}
	if (c != NULL && c->has_sub)
		keys[n++] = &c->sub;
	if (c != NULL && c->has_sid)
		keys[n++] = &c->sid;
	for (i = 0; i < n; i++) {
		if (check_key_tally(s, keys[i], &cr, t) == -1) {
			if (!failed)
				fail = cr.fail;
			failed = true;
			continue;
		}
		check_token_merge(r, &cr, c, keys[i] == &c->sub);
	}
	if (failed && r->status != CHECK_REVOKED) {
		r->fail = fail;
		return -1;
	}
	return 0;
}

int
check_token(const struct snapshot *s, const struct revkey *k,
    const struct trust_cutoffs *c, struct check_result *r)
{
	return check_token_tally(s, k, c, r, NULL);
}


static int
status_rank(enum check_status st)
{
	switch (st) {
	case CHECK_REVOKED:
		return 2;
	case CHECK_NOT_COVERED:
		return 1;
	case CHECK_NOT_REVOKED:
		return 0;
	}
	return 1;	/* never reached; not proven clean */
}

size_t
check_worst(const struct check_result *r, size_t n)
{
	size_t i, w = 0;

	assert(n > 0);
	for (i = 1; i < n; i++)
		if (status_rank(r[i].status) > status_rank(r[w].status))
			w = i;
	return w;
}
