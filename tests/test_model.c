/* test_model.c - a seeded random model of the check path, deltas and all */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../svc/check.h"
#include "../svc/snapshot.h"
#include "delta.h"
#include "overlay.h"
#include "svc_fixture.h"

/*
 * Each scenario draws a universe of keys, a base revoked set built in a
 * random filter layout (classic and blocked small enough that false
 * positives are common), a random set of covered scopes, a chain of
 * deltas applied through the real walk and overlay, and an authority
 * (the table, none, or one that is down). Every key of the universe is
 * then asked of the real check path, in a batch and one at a time, and
 * the answer compared with a plain model: revoked by the last change, or
 * by the base when no delta touched the key. The seed is fixed so that a
 * failure replays; its message names the scenario (run_scenario(no)
 * alone replays it: each draws from its own seed, derived from SEED).
 */
#define NOW		1700000000
#define SEED		UINT64_C(0x7265766d6f64656c)
#define SCENARIOS	300
#define MAX_SCOPES	4
#define MAX_DELTAS	5
/* A spelling of an id: raw ids up to REVKEY_ID_MAX, serials far less. */
#define SPELL_MAX	(REVKEY_ID_MAX + 1)
#define X509_MAG_MAX	127	/* its spelling fits SPELL_MAX */

static const char *const scope_pool[] = {
	"default",
	"t",				/* a one-byte scope */
	"tenant-7.example.org/api/v2",
	"x509:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	"x509:ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100",
};
#define NPOOL	(sizeof(scope_pool) / sizeof(scope_pool[0]))

static const char *const reasons[] = {
	"", "keyCompromise", "superseded", "cessationOfOperation",
	"affiliationChanged", "r",
};
#define NREASONS (sizeof(reasons) / sizeof(reasons[0]))

enum auth_mode {
	AUTH_TABLE = 0,		/* an origin: the table settles */
	AUTH_NONE,		/* an edge with no authority plugged in */
	AUTH_DOWN,		/* an edge whose authority cannot answer */
};
static const char *const auth_names[] = { "table", "none", "down" };

/* A key of the universe and what the model says of it. */
struct mkey {
	struct revkey	 k;		/* canonical */
	unsigned	 scope;		/* index into scen.scopes */
	bool		 in_base;
	int64_t		 base_at;
	const char	*base_reason;	/* "" for none */
	int		 op;		/* the last delta change, or 0 */
	int64_t		 at;
	char		 reason[TABLE_REASON_MAX];
	bool		 readded;	/* added after a removal */
};

struct scen {
	uint64_t	 seed;		/* this scenario's own seed */
	int		 no;
	uint64_t	 rs;		/* PRNG state */
	size_t		 nscopes;
	const char	*scopes[MAX_SCOPES];
	bool		 covered[MAX_SCOPES];
	size_t		 n;
	struct mkey	*keys;
	enum bloom_layout layout;
	uint64_t	 m;
	uint32_t	 k;
	enum auth_mode	 auth;
	size_t		 ndeltas;
	size_t		 applied;	/* deltas in the snapshot */
	struct delta_entry *ent[MAX_DELTAS];	/* each delta's changes */
	size_t		*eidx[MAX_DELTAS];	/* each change's key */
	size_t		 nent[MAX_DELTAS];
	unsigned char	*dbuf[MAX_DELTAS];	/* the signed files */
	size_t		 dlen[MAX_DELTAS];
	/* check_all's room, n of each, made once per scenario. */
	size_t		*perm;
	struct revkey	*q;
	struct check_result *res;
	int		*rcs;
};

/*
 * What the scenarios reached, summed over the run: the test checks at
 * the end that every kind of case was met, so a change to the generator
 * cannot quietly stop exercising one.
 */
static struct {
	size_t	 uncovered, uncovered_added;
	size_t	 delta_added, delta_removed_base, readded, repeated;
	size_t	 base_from_table, base_failed_closed;
	size_t	 fp_settled, fp_failed_closed, negative;
	size_t	 x509_revoked, authority_calls;
	size_t	 layouts[BLOOM_FUSE + 1];
} st;

static EVP_PKEY *skey;
static struct sign_ring ring;

/* ---- a small PRNG (splitmix64): the same scenarios on every run ------ */

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* In [0, n), n > 0; the bias of % does not matter here. */
static size_t
below(uint64_t *s, size_t n)
{
	return (size_t)(rnd(s) % n);
}

static bool
one_in(uint64_t *s, size_t n)
{
	return below(s, n) == 0;
}

/* ---- failure messages ------------------------------------------------ */

static void model_fail(const struct scen *sc, const struct mkey *mk,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fails the test naming the seed, the scenario, its shape and the key. */
static void
model_fail(const struct scen *sc, const struct mkey *mk, const char *fmt, ...)
{
	char what[512], id[2 * 24 + 1] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (mk != NULL)
		util_hex(id, mk->k.id, mk->k.id_len < 24 ? mk->k.id_len : 24);
	cr_assert_fail("seed %#llx scenario %d (layout %s m %llu k %u, "
	    "authority %s, %zu keys, delta %zu of %zu): key %s/%s%s "
	    "(id_len %zu, base %d, delta op %d): %s",
	    (unsigned long long)sc->seed, sc->no,
	    bloom_layout_name(sc->layout), (unsigned long long)sc->m, sc->k,
	    auth_names[sc->auth], sc->n, sc->applied, sc->ndeltas,
	    mk != NULL ? mk->k.scope : "-", id,
	    mk != NULL && mk->k.id_len > 24 ? "..." : "",
	    mk != NULL ? mk->k.id_len : 0, mk != NULL && mk->in_base,
	    mk != NULL ? mk->op : 0, what);
}

#define MUST(sc, mk, cond, ...) do {					\
	if (!(cond))							\
		model_fail(sc, mk, __VA_ARGS__);			\
} while (0)

/* ---- the universe ---------------------------------------------------- */

/* A canonical X.509 serial: zero, a magnitude, or 0x00 and a magnitude. */
static size_t
gen_serial(uint64_t *rs, unsigned char *id)
{
	size_t r = below(rs, 16), len, i, o = 0;

	if (r == 0) {
		id[0] = 0;
		return 1;
	}
	if (r <= 2)
		id[o++] = 0;		/* negative */
	len = one_in(rs, 4) ? 1 : one_in(rs, 24) ?
	    21 + below(rs, X509_MAG_MAX - 20) : 1 + below(rs, 20);
	for (i = 0; i < len; i++)
		id[o + i] = (unsigned char)below(rs, 256);
	if (id[o] == 0)
		id[o] = (unsigned char)(1 + below(rs, 255));
	return o + len;
}

/* A token id: one byte, a few dozen, or up to REVKEY_ID_MAX; never NUL. */
static size_t
gen_token(uint64_t *rs, unsigned char *id)
{
	size_t len, i;
	bool binary = one_in(rs, 4);

	len = one_in(rs, 6) ? 1 : one_in(rs, 16) ?
	    300 + below(rs, REVKEY_ID_MAX - 299) : 2 + below(rs, 40);
	for (i = 0; i < len; i++)
		id[i] = (unsigned char)(binary ? 1 + below(rs, 255) :
		    0x21 + below(rs, 94));
	return len;
}

/* True when key i repeats one of the keys before it. */
static bool
seen_before(const struct scen *sc, size_t i)
{
	const struct mkey *a = &sc->keys[i], *b;
	size_t j;

	for (j = 0; j < i; j++) {
		b = &sc->keys[j];
		if (a->scope == b->scope && a->k.id_len == b->k.id_len &&
		    memcmp(a->k.id, b->k.id, a->k.id_len) == 0)
			return true;
	}
	return false;
}

static void
gen_keys(struct scen *sc)
{
	unsigned char id[REVKEY_ID_MAX];
	struct mkey *mk;
	size_t i, len;
	double density = (double)below(&sc->rs, 101) / 100.0;

	sc->n = 50 + below(&sc->rs, 251);
	cr_assert_not_null(sc->keys = calloc(sc->n, sizeof(*sc->keys)));
	for (i = 0; i < sc->n; i++) {
		mk = &sc->keys[i];
		do {
			mk->scope = (unsigned)below(&sc->rs, sc->nscopes);
			if (revkey_scope_is_x509(sc->scopes[mk->scope]))
				len = gen_serial(&sc->rs, id);
			else
				len = gen_token(&sc->rs, id);
			cr_assert_eq(revkey_set(&mk->k, sc->scopes[mk->scope],
			    id, len), 0);
		} while (seen_before(sc, i));
		/* The base revokes only in covered scopes: it defines them. */
		mk->in_base = sc->covered[mk->scope] &&
		    (double)below(&sc->rs, 1000) < density * 1000.0;
		mk->base_at = (int64_t)below(&sc->rs, 2000000000);
		mk->base_reason = reasons[below(&sc->rs, NREASONS)];
	}
}

/*
 * A text spelling of mk's id that revkey_from_text must read back as mk:
 * the bytes themselves in a token scope; in an X.509 scope the serial in
 * hex with a "0x" or not, leading zeros, colons between bytes (every
 * group after the first of an even count: util_unhex refuses "12:3"), and
 * either case. Returns its length; out holds SPELL_MAX bytes.
 */
static size_t
spell(uint64_t *rs, const struct mkey *mk, char *out)
{
	static const char lo[] = "0123456789abcdef", up[] = "0123456789ABCDEF";
	const unsigned char *b = mk->k.id;
	char dg[SPELL_MAX];
	size_t n = mk->k.id_len, o = 0, i, z, d;
	unsigned nib;

	if (!revkey_scope_is_x509(mk->k.scope)) {
		memcpy(out, b, n);
		out[n] = '\0';
		return n;
	}
	if (n > 1 && b[0] == 0) {
		out[o++] = '-';
		b++;
		n--;
	}
	if (one_in(rs, 3)) {
		out[o++] = '0';
		out[o++] = one_in(rs, 2) ? 'x' : 'X';
	}
	for (z = below(rs, 4), d = 0; z > 0; z--)
		dg[d++] = '0';
	for (i = 0; i < n; i++) {
		for (nib = 0; nib < 2; nib++) {
			unsigned v = nib == 0 ? b[i] >> 4 : b[i] & 0x0f;

			/* The first byte's zero high nibble may be left out. */
			if (i == 0 && nib == 0 && v == 0 && one_in(rs, 2))
				continue;
			dg[d++] = one_in(rs, 2) ? lo[v] : up[v];
		}
	}
	/* Colons only where they fall between bytes (an even count after). */
	for (i = 0; i < d; i++) {
		if (i > 0 && (d - i) % 2 == 0 && one_in(rs, 4))
			out[o++] = ':';
		out[o++] = dg[i];
	}
	out[o] = '\0';
	return o;
}

/* k from a fresh spelling of mk, which must read back as mk's key. */
static void
spelled_key(struct scen *sc, const struct mkey *mk, struct revkey *k)
{
	char txt[SPELL_MAX], err[256];
	size_t len = spell(&sc->rs, mk, txt);

	MUST(sc, mk, revkey_from_text(k, mk->k.scope, txt, len, err,
	    sizeof(err)) == 0, "spelling \"%.80s\" refused: %s", txt, err);
	MUST(sc, mk, revkey_cmp(k, &mk->k) == 0,
	    "spelling \"%.80s\" read as another key", txt);
}

/* ---- the base -------------------------------------------------------- */

static void
gen_shape(struct scen *sc)
{
	const char *pool[NPOOL];
	size_t i, j, r;
	bool any = false;

	memcpy(pool, scope_pool, sizeof(pool));
	sc->nscopes = 1 + below(&sc->rs, MAX_SCOPES);
	for (i = 0; i < sc->nscopes; i++) {
		j = i + below(&sc->rs, NPOOL - i);
		sc->scopes[i] = pool[j];
		pool[j] = pool[i];
		sc->covered[i] = !one_in(&sc->rs, 4);
		any = any || sc->covered[i];
	}
	if (!any)
		sc->covered[below(&sc->rs, sc->nscopes)] = true;
	r = below(&sc->rs, 10);
	if (r < 3) {
		/* 8 to 512 bits: many keys of the universe are positive. */
		sc->layout = BLOOM_CLASSIC;
		sc->m = 8 + below(&sc->rs, 505);
		sc->k = 1 + (uint32_t)below(&sc->rs, 4);
	} else if (r < 5) {
		sc->layout = BLOOM_BLOCKED;
		sc->m = BLOOM_BLOCK_BITS * (1 + below(&sc->rs, 2));
		sc->k = 1 + (uint32_t)below(&sc->rs, 8);
	} else if (r < 8) {
		sc->layout = BLOOM_FUSE;
		sc->k = BLOOM_FUSE_MIN_WIDTH + (uint32_t)below(&sc->rs,
		    BLOOM_FUSE_MAX_WIDTH - BLOOM_FUSE_MIN_WIDTH + 1);
	} else {
		sc->layout = r == 8 ? BLOOM_FUSE8 : BLOOM_FUSE128;
	}
	sc->auth = (enum auth_mode)(one_in(&sc->rs, 2) ? AUTH_TABLE :
	    one_in(&sc->rs, 3) ? AUTH_DOWN : AUTH_NONE);
}

/* Signs the base of sc (its in_base keys) and wraps it in a snapshot. */
static struct snapshot *
build_base(struct scen *sc)
{
	struct fx_rec *recs = calloc(sc->n, sizeof(*recs));
	char (*txt)[SPELL_MAX] = calloc(sc->n, sizeof(*txt));
	const char *extra[MAX_SCOPES];
	bool has[MAX_SCOPES] = { false };
	size_t i, nr = 0, nextra = 0;
	struct fx_pair p;
	struct ffile *ff;
	struct table *tab = NULL;
	struct snapshot *s;
	char err[256];

	cr_assert(recs != NULL && txt != NULL);
	for (i = 0; i < sc->n; i++) {
		struct mkey *mk = &sc->keys[i];

		if (!mk->in_base)
			continue;
		spell(&sc->rs, mk, txt[nr]);
		recs[nr].scope = sc->scopes[mk->scope];
		recs[nr].id = txt[nr];
		recs[nr].reason = mk->base_reason[0] != '\0' ?
		    mk->base_reason : NULL;
		recs[nr].revoked_at = mk->base_at;
		has[mk->scope] = true;
		nr++;
	}
	/* A covered scope with nothing revoked is named on its own. */
	for (i = 0; i < sc->nscopes; i++)
		if (sc->covered[i] && !has[i])
			extra[nextra++] = sc->scopes[i];
	MUST(sc, NULL, fx_build_layout(sc->layout, skey, (uint64_t)sc->no + 1,
	    NOW - 10, NOW + 3600, recs, nr, extra, nextra, sc->m, sc->k,
	    &p) == 0, "the base (%zu keys) did not build", nr);
	ff = ffile_parse(p.filter, p.flen, true, err, sizeof(err));
	MUST(sc, NULL, ff != NULL, "base: %s", err);
	MUST(sc, NULL, ffile_info(ff)->layout == sc->layout, "another layout");
	MUST(sc, NULL, sc->layout != BLOOM_FUSE ||
	    ffile_info(ff)->width == sc->k, "another fuse width");
	if (sc->auth == AUTH_TABLE) {
		tab = table_parse(p.table, p.tlen, true, err, sizeof(err));
		MUST(sc, NULL, tab != NULL, "table: %s", err);
	} else {
		free(p.table);
	}
	cr_assert_not_null(s = snapshot_new(ff, tab, NOW));
	st.layouts[sc->layout]++;
	free(txt);
	free(recs);
	return s;
}

/* ---- the deltas ------------------------------------------------------ */

/*
 * A key for the next change, biased towards the cases that matter: one
 * the base revokes, one removed earlier (to add again), one in a scope
 * the base does not cover. pend is each key's last change so far.
 */
static size_t
pick_key(struct scen *sc, const int *pend)
{
	size_t want = below(&sc->rs, 8), i, tries;

	for (tries = 0; want < 3 && tries < 32; tries++) {
		i = below(&sc->rs, sc->n);
		if ((want == 0 && sc->keys[i].in_base) ||
		    (want == 1 && pend[i] == DELTA_REMOVE) ||
		    (want == 2 && !sc->covered[sc->keys[i].scope]))
			return i;
	}
	return below(&sc->rs, sc->n);
}

/* Draws the chain's changes and signs each delta, linked to the base. */
static void
gen_deltas(struct scen *sc, const struct snapshot *base)
{
	unsigned char prev[32];
	struct delta_info in;
	int *pend = calloc(sc->n, sizeof(*pend));
	size_t j, i, n, ki;
	char err[256];

	cr_assert_not_null(pend);
	sc->ndeltas = one_in(&sc->rs, 4) ? 0 : below(&sc->rs, MAX_DELTAS + 1);
	memcpy(prev, base->pos.base_sha256, 32);
	for (j = 0; j < sc->ndeltas; j++) {
		n = one_in(&sc->rs, 8) ? 0 : below(&sc->rs, 41);
		sc->nent[j] = n;
		sc->ent[j] = calloc(n + 1, sizeof(*sc->ent[j]));
		sc->eidx[j] = calloc(n + 1, sizeof(*sc->eidx[j]));
		cr_assert(sc->ent[j] != NULL && sc->eidx[j] != NULL);
		for (i = 0; i < n; i++) {
			struct delta_entry *e = &sc->ent[j][i];

			/* The same key changed again within one delta. */
			if (i > 0 && one_in(&sc->rs, 6)) {
				ki = sc->eidx[j][below(&sc->rs, i)];
				st.repeated++;
			} else
				ki = pick_key(sc, pend);
			sc->eidx[j][i] = ki;
			spelled_key(sc, &sc->keys[ki], &e->rec.key);
			e->op = one_in(&sc->rs, 2) ? DELTA_ADD : DELTA_REMOVE;
			if (e->op == DELTA_ADD) {
				e->rec.revoked_at = (int64_t)below(&sc->rs,
				    2000000000);
				snprintf(e->rec.reason, sizeof(e->rec.reason),
				    "%s", reasons[below(&sc->rs, NREASONS)]);
			}
			pend[ki] = e->op;
		}
		memset(&in, 0, sizeof(in));
		in.kind = DELTA_KIND_DELTA;
		in.base_version = base->pos.base_version;
		memcpy(in.base_sha256, base->pos.base_sha256, 32);
		in.seq = j + 1;
		memcpy(in.prev_sha256, prev, 32);
		in.issued_at = NOW + (int64_t)j;
		in.expires_at = NOW + 3600;
		in.changed_at = NOW + (int64_t)j;
		MUST(sc, NULL, delta_encode(&in, sc->ent[j], n, skey,
		    &sc->dbuf[j], &sc->dlen[j], err, sizeof(err)) == 0,
		    "delta %zu: %s", j + 1, err);
		cr_assert_eq(util_sha256(prev, sc->dbuf[j], sc->dlen[j]), 0);
	}
	free(pend);
}

/* The model's side of delta j: each change in order, the last one wins. */
static void
model_apply(struct scen *sc, size_t j)
{
	size_t i;

	for (i = 0; i < sc->nent[j]; i++) {
		const struct delta_entry *e = &sc->ent[j][i];
		struct mkey *mk = &sc->keys[sc->eidx[j][i]];

		if (e->op == DELTA_ADD && mk->op == DELTA_REMOVE)
			mk->readded = true;
		mk->op = e->op;
		mk->at = e->op == DELTA_ADD ? e->rec.revoked_at : 0;
		snprintf(mk->reason, sizeof(mk->reason), "%s",
		    e->op == DELTA_ADD ? e->rec.reason : "");
	}
}

/* The chain as an in-memory source: the deltas up to upto, no head. */
struct memsrc {
	const struct scen *sc;
	uint64_t	 upto;
};

static int
mem_src(void *arg, uint64_t seq, unsigned char **buf, size_t *len,
    char *err, size_t errlen)
{
	const struct memsrc *m = arg;

	(void)err;
	(void)errlen;
	if (seq == DELTA_SEQ_HEAD || seq == 0 || seq > m->upto)
		return 0;
	*len = m->sc->dlen[seq - 1];
	if ((*buf = malloc(*len)) == NULL)
		return -1;
	memcpy(*buf, m->sc->dbuf[seq - 1], *len);
	return 1;
}

/* What the loader's chain_apply does with a delta that links. */
static int
apply_to_overlay(void *arg, const struct delta *d)
{
	return overlay_apply(arg, d);
}

/*
 * Walks the chain from cur's position through delta upto, as
 * loader_apply_chain does: a clone of cur's overlay, every delta
 * verified and linked, then a snapshot sharing cur's base. Releases cur.
 */
static struct snapshot *
walk_to(struct scen *sc, struct snapshot *cur, size_t upto)
{
	struct memsrc ms = { sc, upto };
	struct snapshot_chain ch;
	struct delta *head = NULL;
	struct snapshot *ns;
	uint64_t head_seq;
	char err[600];

	memset(&ch, 0, sizeof(ch));
	ch.pos = cur->pos;
	ch.ov = cur->ov != NULL ? overlay_clone(cur->ov) : overlay_new();
	cr_assert_not_null(ch.ov);
	MUST(sc, NULL, delta_chain_walk_src(mem_src, &ms, "model", &ring,
	    &ch.pos, apply_to_overlay, ch.ov, &head, &head_seq, err,
	    sizeof(err)) == 0, "walk: %s", err);
	MUST(sc, NULL, ch.pos.seq == upto && head == NULL,
	    "walk stopped at %llu", (unsigned long long)ch.pos.seq);
	ch.issued_at = NOW + (int64_t)upto - 1;
	ch.expires_at = NOW + 3600;
	ch.last_delta_at = ch.issued_at;
	cr_assert_not_null(ns = snapshot_with_chain(cur, &ch, NOW));
	snapshot_release(cur);
	return ns;
}

/* ---- the checks ------------------------------------------------------ */

static int
down_authority(void *arg, const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	(void)arg;
	(void)s;
	(void)k;
	st.authority_calls++;
	r->fail = CHECK_FAIL_BEHIND;
	return -1;
}

/* The failure an unsettled positive must report in this scenario. */
static enum check_fail
expected_fail(const struct scen *sc)
{
	return sc->auth == AUTH_DOWN ? CHECK_FAIL_BEHIND :
	    CHECK_FAIL_UNAVAILABLE;
}

/* A positive the table cannot settle here: fails closed, as it must. */
static void
must_fail_closed(const struct scen *sc, const struct mkey *mk, int rc,
    const struct check_result *r, const char *what)
{
	MUST(sc, mk, rc == -1, "%s without a table answered %s", what,
	    check_status_str(r->status));
	MUST(sc, mk, r->fail == expected_fail(sc), "%s failed as %s", what,
	    check_fail_str(r->fail));
}

/* Judges one answer against the model. */
static void
judge(const struct scen *sc, const struct snapshot *s, const struct mkey *mk,
    int rc, const struct check_result *r)
{
	bool model_revoked = mk->op == DELTA_ADD ||
	    (mk->op == 0 && mk->in_base);

	/* The property this test exists for, said first and plainly. */
	MUST(sc, mk, !(rc == 0 && r->status == CHECK_NOT_REVOKED &&
	    (model_revoked || !sc->covered[mk->scope])),
	    "FAIL OPEN: not_revoked (source %s) for a key that is %s",
	    check_source_str(r->source), model_revoked ? "revoked" :
	    "in an uncovered scope");
	if (!sc->covered[mk->scope]) {
		MUST(sc, mk, rc == 0 && r->status == CHECK_NOT_COVERED,
		    "uncovered scope answered rc %d %s", rc,
		    check_status_str(r->status));
		st.uncovered++;
		st.uncovered_added += mk->op == DELTA_ADD;
		return;
	}
	if (mk->op == DELTA_ADD) {
		MUST(sc, mk, rc == 0 && r->status == CHECK_REVOKED &&
		    r->source == CHECK_SRC_DELTA, "a delta's add answered "
		    "rc %d %s from %s", rc, check_status_str(r->status),
		    check_source_str(r->source));
		MUST(sc, mk, r->revoked_at == mk->at &&
		    strcmp(r->reason, mk->reason) == 0, "revoked at %lld "
		    "\"%s\", the last add says %lld \"%s\"",
		    (long long)r->revoked_at, r->reason, (long long)mk->at,
		    mk->reason);
		st.delta_added++;
		st.readded += mk->readded;
	} else if (mk->op == DELTA_REMOVE) {
		MUST(sc, mk, rc == 0 && r->status == CHECK_NOT_REVOKED &&
		    r->source == CHECK_SRC_DELTA, "a delta's removal answered "
		    "rc %d %s from %s", rc, check_status_str(r->status),
		    check_source_str(r->source));
		st.delta_removed_base += mk->in_base;
	} else if (mk->in_base && sc->auth != AUTH_TABLE) {
		must_fail_closed(sc, mk, rc, r, "a base revocation");
		st.base_failed_closed++;
	} else if (mk->in_base) {
		MUST(sc, mk, rc == 0 && r->status == CHECK_REVOKED &&
		    r->source == CHECK_SRC_AUTHORITATIVE, "a base revocation "
		    "answered rc %d %s", rc, check_status_str(r->status));
		MUST(sc, mk, r->revoked_at == mk->base_at &&
		    strcmp(r->reason, mk->base_reason) == 0, "revoked at %lld "
		    "\"%s\", the base says %lld \"%s\"",
		    (long long)r->revoked_at, r->reason,
		    (long long)mk->base_at, mk->base_reason);
		st.base_from_table++;
	} else if (!ffile_query(s->ff, &mk->k)) {
		MUST(sc, mk, rc == 0 && r->status == CHECK_NOT_REVOKED &&
		    r->source == CHECK_SRC_FILTER, "a filter negative "
		    "answered rc %d %s", rc, check_status_str(r->status));
		st.negative++;
	} else if (sc->auth != AUTH_TABLE) {
		must_fail_closed(sc, mk, rc, r, "a false positive");
		st.fp_failed_closed++;
	} else {
		MUST(sc, mk, rc == 0 && r->status == CHECK_NOT_REVOKED &&
		    r->source == CHECK_SRC_AUTHORITATIVE, "a false positive "
		    "answered rc %d %s", rc, check_status_str(r->status));
		st.fp_settled++;
	}
	if (rc == 0 && r->status == CHECK_REVOKED &&
	    revkey_scope_is_x509(mk->k.scope))
		st.x509_revoked++;
}

/*
 * Asks every key of the universe, in a random order: check_keys_tally
 * over batches of random sizes (across its 64-key chunks), then
 * check_key_tally one at a time with another spelling of each id. Both
 * must give the same answers and counts, and each answer the model's.
 */
static void
check_all(struct scen *sc, const struct snapshot *s)
{
	size_t n = sc->n, *perm = sc->perm, i, j, len, tmp;
	struct revkey *q = sc->q, k1;
	struct check_result *res = sc->res, one;
	struct metrics_tally tm, t1;
	int *rcs = sc->rcs, rc;

	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = below(&sc->rs, i + 1);
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (i = 0; i < n; i++)
		spelled_key(sc, &sc->keys[perm[i]], &q[i]);
	memset(&tm, 0, sizeof(tm));
	memset(&t1, 0, sizeof(t1));
	for (i = 0; i < n; i += len) {
		len = 1 + below(&sc->rs, one_in(&sc->rs, 4) ? 200 : 70);
		if (len > n - i)
			len = n - i;
		check_keys_tally(s, q + i, len, res + i, rcs + i, &tm);
	}
	for (i = 0; i < n; i++) {
		const struct mkey *mk = &sc->keys[perm[i]];

		spelled_key(sc, mk, &k1);
		rc = check_key_tally(s, &k1, &one, &t1);
		MUST(sc, mk, rc == rcs[i] && memcmp(&one, &res[i],
		    sizeof(one)) == 0, "one at a time rc %d %s, in a batch "
		    "rc %d %s", rc, check_status_str(one.status), rcs[i],
		    check_status_str(res[i].status));
		judge(sc, s, mk, rc, &one);
	}
	MUST(sc, NULL, memcmp(&tm, &t1, sizeof(tm)) == 0,
	    "a batch counted otherwise than one at a time");
}

/* ---- the scenarios --------------------------------------------------- */

static void
run_scenario(int no)
{
	struct scen sc;
	struct snapshot *s;
	size_t j, upto;

	memset(&sc, 0, sizeof(sc));
	sc.no = no;
	sc.rs = SEED + (uint64_t)no;
	sc.seed = sc.rs = rnd(&sc.rs);
	gen_shape(&sc);
	gen_keys(&sc);
	sc.perm = calloc(sc.n, sizeof(*sc.perm));
	sc.q = calloc(sc.n, sizeof(*sc.q));
	sc.res = calloc(sc.n, sizeof(*sc.res));
	sc.rcs = calloc(sc.n, sizeof(*sc.rcs));
	cr_assert(sc.perm != NULL && sc.q != NULL && sc.res != NULL &&
	    sc.rcs != NULL);
	if (sc.auth == AUTH_DOWN)
		check_set_authority(down_authority, NULL);
	else
		check_set_authority(NULL, NULL);
	s = build_base(&sc);
	gen_deltas(&sc, s);
	check_all(&sc, s);
	/* The chain in walks of random length, checked after each. */
	for (j = 0; j < sc.ndeltas; j = upto) {
		upto = j + 1 + below(&sc.rs, sc.ndeltas - j);
		s = walk_to(&sc, s, upto);
		for (; sc.applied < upto; sc.applied++)
			model_apply(&sc, sc.applied);
		check_all(&sc, s);
	}
	snapshot_release(s);
	for (j = 0; j < sc.ndeltas; j++) {
		free(sc.ent[j]);
		free(sc.eidx[j]);
		free(sc.dbuf[j]);
	}
	free(sc.rcs);
	free(sc.res);
	free(sc.q);
	free(sc.perm);
	free(sc.keys);
}

static void
setup(void)
{
	cr_assert_not_null(skey = sign_keygen());
	sign_ring_init(&ring);
	cr_assert_eq(sign_ring_add_key(&ring, skey), 0);
}

static void
teardown(void)
{
	sign_ring_free(&ring);
	EVP_PKEY_free(skey);
	skey = NULL;
	check_set_authority(NULL, NULL);
}

TestSuite(model, .init = setup, .fini = teardown);

/*
 * Never not_revoked for a key the base or the last delta change revokes,
 * nor in a scope the base does not cover; not_revoked for every other
 * covered key (the table settles false positives), or fail closed where
 * nothing can settle them; batch and single checks alike.
 */
Test(model, check_path_answers_as_the_model_never_open)
{
	int no;

	for (no = 0; no < SCENARIOS; no++)
		run_scenario(no);
	/* Every kind of case was reached (the seed is fixed: exact). */
	cr_assert(st.uncovered > 0 && st.uncovered_added > 0);
	cr_assert(st.delta_added > 0 && st.delta_removed_base > 0);
	cr_assert(st.readded > 0 && st.repeated > 0);
	cr_assert(st.base_from_table > 0 && st.base_failed_closed > 0);
	cr_assert(st.fp_settled > 0 && st.fp_failed_closed > 0);
	cr_assert(st.negative > 0 && st.x509_revoked > 0);
	cr_assert(st.authority_calls > 0);
	cr_assert(st.layouts[BLOOM_CLASSIC] > 0 &&
	    st.layouts[BLOOM_BLOCKED] > 0);
	cr_assert(st.layouts[BLOOM_FUSE] > 0 && st.layouts[BLOOM_FUSE8] > 0 &&
	    st.layouts[BLOOM_FUSE128] > 0);
}
