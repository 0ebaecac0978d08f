/* table.c - the authoritative table: sorted records searchable in place */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <xxhash.h>

#include "table.h"
#include "util.h"

/* Offsets inside the builder's arena use the low 48 bits of an entry. */
#define TB_OFF_BITS	48
#define TB_OFF_MASK	((UINT64_C(1) << TB_OFF_BITS) - 1)
#define TB_MAX_RANKS	65536u
/*
 * Sorted records lie scattered through the arena: loops over them hint
 * the record this many places ahead (see table_builder_prefetch).
 */
#define TB_AHEAD	16

struct table {
	const unsigned char *buf;
	size_t		 len;
	bool		 mapped;	/* util_copy_free() on close */
	bool		 owned;		/* free() on close */
	uint64_t	 count;
	const unsigned char *idx;
	const unsigned char *recs;
	uint64_t	 recs_len;
	unsigned char	 sha[32];
};

/* Byte-wise order of two encoded keys, a shorter prefix first. */
static int
tb_keycmp(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

static bool
tb_reason_ok(const char *r, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)r[i];

		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------------- */
/* The merge rule of the builder (and of the tests' reference). */

int64_t
table_merge_revoked(const char *scope, int64_t have, int64_t t)
{
	if (revkey_scope_is_cutoff(scope))
		return t > have ? t : have;
	return t != 0 && (have == 0 || t < have) ? t : have;
}

/* ---------------------------------------------------------------------- */
/* Record encoding. */

static size_t
tb_rec_size(size_t scope_len, size_t id_len, size_t reason_len)
{
	return TABLE_REC_HDR_LEN + scope_len + 1 + id_len + reason_len;
}

static void
tb_rec_put(unsigned char *p, const struct revkey *k, int64_t revoked_at,
    const char *reason, size_t reason_len)
{
	p[0] = (unsigned char)k->scope_len;
	p[1] = (unsigned char)reason_len;
	util_put_le16(p + 2, (uint16_t)k->id_len);
	util_put_le64(p + 4, (uint64_t)revoked_at);
	p += TABLE_REC_HDR_LEN;
	memcpy(p, k->scope, k->scope_len);
	p += k->scope_len;
	*p++ = 0;
	memcpy(p, k->id, k->id_len);
	p += k->id_len;
	if (reason_len > 0)
		memcpy(p, reason, reason_len);
}

static bool
tb_key_ok(const struct revkey *k)
{
	return k->scope_len >= 1 && k->scope_len <= REVKEY_SCOPE_MAX &&
	    k->id_len >= 1 && k->id_len <= REVKEY_ID_MAX &&
	    memchr(k->scope, 0, k->scope_len) == NULL;
}

/* Views of a record in the table encoding. */
static size_t rec_scope_len(const unsigned char *r) { return r[0]; }
static size_t rec_reason_len(const unsigned char *r) { return r[1]; }
static size_t rec_id_len(const unsigned char *r)
{
	return util_get_le16(r + 2);
}
static int64_t rec_revoked(const unsigned char *r)
{
	return (int64_t)util_get_le64(r + 4);
}
static const unsigned char *rec_key(const unsigned char *r)
{
	return r + TABLE_REC_HDR_LEN;
}
static size_t rec_key_len(const unsigned char *r)
{
	return rec_scope_len(r) + 1 + rec_id_len(r);
}
static size_t rec_size(const unsigned char *r)
{
	return tb_rec_size(rec_scope_len(r), rec_id_len(r), rec_reason_len(r));
}

/*
 * Copies a record out. Every length is checked against what out can hold
 * and against avail, the bytes from r to the end of its area, before any
 * copy: 0, or -1 (out zeroed) for a record that does not fit.
 */
static int
rec_to_table_rec(const unsigned char *r, size_t avail, struct table_rec *out)
{
	size_t sl, il, rl;
	const unsigned char *p = r + TABLE_REC_HDR_LEN;

	memset(out, 0, sizeof(*out));
	if (avail < TABLE_REC_HDR_LEN)
		return -1;
	sl = rec_scope_len(r);
	il = rec_id_len(r);
	rl = rec_reason_len(r);
	if (sl == 0 || sl > REVKEY_SCOPE_MAX || il == 0 ||
	    il > REVKEY_ID_MAX || rl >= TABLE_REASON_MAX ||
	    tb_rec_size(sl, il, rl) > avail)
		return -1;
	memcpy(out->key.scope, p, sl);
	out->key.scope[sl] = '\0';
	out->key.scope_len = sl;
	memcpy(out->key.id, p + sl + 1, il);
	out->key.id_len = il;
	out->revoked_at = rec_revoked(r);
	memcpy(out->reason, p + sl + 1 + il, rl);
	out->reason[rl] = '\0';
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The builder. */

void
table_builder_init(struct table_builder *b)
{
	assert(b != NULL);
	memset(b, 0, sizeof(*b));
	b->sorted = true;
}

/* Stops the prefault threads (their memory stays as it is). */
static void
tb_prefault_stop(struct table_builder *b)
{
	util_prefault_stop(b->apf);
	util_prefault_stop(b->epf);
	b->apf = b->epf = NULL;
}

void
table_builder_free(struct table_builder *b)
{
	if (b == NULL)
		return;
	tb_prefault_stop(b);
	free(b->arena);
	free(b->ents);
	free(b->offs);
	table_builder_init(b);
}

/* The i-th entry's arena offset and scope rank (packed or not). */
static uint64_t
tb_ent_off(const struct table_builder *b, size_t i)
{
	return b->offs != NULL ? b->offs[i] : b->ents[i].off;
}

static const unsigned char *
tb_rec(const struct table_builder *b, size_t i)
{
	return b->arena + (tb_ent_off(b, i) & TB_OFF_MASK);
}

/* The sorted record i's offset in the record area; rlen for i == n. */
static uint64_t
tb_out_off(const struct table_builder *b, size_t i)
{
	uint64_t o;

	if (i >= b->n)
		return b->rlen;
	if (b->offs == NULL)
		return b->ents[i].pfx;
	o = b->offs[i] & TB_OFF_MASK;
	return o < b->gap_at ? o : o - b->gap_len;
}

/*
 * Back from the packed form to one entry per record (the arena stays
 * the record area, records are appended after it). 0, or -1 when memory
 * runs out (b unchanged).
 */
static int
tb_unpack(struct table_builder *b)
{
	struct table_ent *e;
	size_t i, cap = b->n > 0 ? b->n : 1;

	if (b->offs == NULL)
		return 0;
	tb_prefault_stop(b);
	if (cap > SIZE_MAX / sizeof(*e))
		return -1;
	e = realloc(b->offs, cap * sizeof(*e));
	if (e == NULL)
		return -1;
	/* Backwards: entry i (16 bytes) covers offsets 2i and 2i + 1. */
	for (i = b->n; i-- > 0;) {
		uint64_t o = ((uint64_t *)(void *)e)[i];

		e[i].off = o;
		e[i].pfx = 0;
	}
	b->offs = NULL;
	b->ents = e;
	b->ncap = cap;
	b->epop = 0;
	b->gap_at = b->gap_len = 0;
	return 0;
}

/*
 * Populates buf from byte have, which covers at least need bytes, up to
 * UTIL_POPULATE_STEP past need or to cap; returns the new populated end.
 * Below that step the faults are too few to batch.
 */
static size_t
tb_populate(void *buf, size_t have, size_t need, size_t cap)
{
	size_t to;

	if (cap < UTIL_POPULATE_STEP)
		return cap;
	to = need > cap - UTIL_POPULATE_STEP ? cap : need + UTIL_POPULATE_STEP;
	util_populate((unsigned char *)buf + have, to - have);
	return to;
}

/*
 * Makes buf ready up to need (have: ready so far, cap: its size): from the
 * prefault thread pf, which works from byte base on, or by populating.
 * Returns how far it is ready.
 */
static size_t
tb_ready(struct util_prefault *pf, size_t base, void *buf, size_t have,
    size_t need, size_t cap)
{
	if (pf != NULL && need > base)
		return base + util_prefault_need(pf, need - base);
	return tb_populate(buf, have, need, cap);
}

int
table_builder_reserve(struct table_builder *b, size_t nrecs, size_t bytes)
{
	struct table_ent *e;
	unsigned char *p;

	assert(b != NULL);
	if (b->offs != NULL || nrecs > TABLE_MAX_RECORDS - b->n ||
	    bytes > (size_t)TB_OFF_MASK - b->len)
		return -1;
	tb_prefault_stop(b);
	if (b->len + bytes > b->cap) {
		if ((p = realloc(b->arena, b->len + bytes)) == NULL)
			return -1;
		b->arena = p;
		b->cap = b->len + bytes;
	}
	if (b->n + nrecs > b->ncap) {
		if ((e = realloc(b->ents, (b->n + nrecs) * sizeof(*e))) ==
		    NULL)
			return -1;
		b->ents = e;
		b->ncap = b->n + nrecs;
	}
	b->abase = b->len;
	b->apop = b->len;
	b->apf = util_prefault_start(b->arena + b->len, b->cap - b->len);
	b->ebase = b->n * sizeof(*b->ents);
	b->epop = b->ebase;
	b->epf = util_prefault_start(b->ents + b->n, (b->ncap - b->n) *
	    sizeof(*b->ents));
	return 0;
}

int
table_builder_add(struct table_builder *b, const struct revkey *k,
    int64_t revoked_at, const char *reason)
{
	size_t rlen = reason != NULL ? strlen(reason) : 0;
	size_t sz;

	assert(b != NULL && k != NULL);
	if (!tb_key_ok(k) || rlen >= TABLE_REASON_MAX ||
	    !tb_reason_ok(reason, rlen)) {
		errno = EINVAL;
		return -1;
	}
	if ((uint64_t)b->n >= TABLE_MAX_RECORDS) {
		errno = EINVAL;
		return -1;
	}
	if (tb_unpack(b) != 0) {
		errno = ENOMEM;
		return -1;
	}
	sz = tb_rec_size(k->scope_len, k->id_len, rlen);
	if (b->len + sz > b->cap) {
		size_t ncap = b->cap ? b->cap : 1 << 16;
		unsigned char *p;

		while (ncap < b->len + sz) {
			if (ncap > (size_t)TB_OFF_MASK / 2) {
				errno = ENOMEM;
				return -1;
			}
			ncap *= 2;
		}
		tb_prefault_stop(b);
		p = realloc(b->arena, ncap);
		if (p == NULL) {
			errno = ENOMEM;
			return -1;
		}
		b->arena = p;
		b->cap = ncap;
	}
	if (b->n == b->ncap) {
		size_t ncap = b->ncap ? b->ncap * 2 : 1024;
		struct table_ent *e;

		if (ncap > SIZE_MAX / sizeof(*e)) {
			errno = ENOMEM;
			return -1;
		}
		tb_prefault_stop(b);
		e = realloc(b->ents, ncap * sizeof(*e));
		if (e == NULL) {
			errno = ENOMEM;
			return -1;
		}
		b->ents = e;
		b->ncap = ncap;
	}
	if (b->len + sz > b->apop)
		b->apop = tb_ready(b->apf, b->abase, b->arena, b->apop,
		    b->len + sz, b->cap);
	if ((b->n + 1) * sizeof(*b->ents) > b->epop)
		b->epop = tb_ready(b->epf, b->ebase, b->ents, b->epop,
		    (b->n + 1) * sizeof(*b->ents), b->ncap * sizeof(*b->ents));
	tb_rec_put(b->arena + b->len, k, revoked_at, reason, rlen);
	b->ents[b->n].pfx = 0;
	b->ents[b->n].off = b->len;
	b->n++;
	b->len += sz;
	b->sorted = false;
	return 0;
}

int
table_builder_add_rec(struct table_builder *b, const struct table_rec *r)
{
	assert(r != NULL);
	if (memchr(r->reason, 0, sizeof(r->reason)) == NULL) {
		errno = EINVAL;
		return -1;
	}
	return table_builder_add(b, &r->key, r->revoked_at, r->reason);
}

size_t
table_builder_count(const struct table_builder *b)
{
	assert(b != NULL);
	return b->n;
}

void
table_builder_truncate(struct table_builder *b, size_t n)
{
	assert(b != NULL && n <= b->n && b->offs == NULL);
	if (n == b->n)
		return;
	b->len = n == 0 ? 0 : (size_t)(b->ents[n].off & TB_OFF_MASK);
	b->n = n;
}

void
table_builder_drop(struct table_builder *b, const bool *keep)
{
	size_t i, w = 0;

	assert(b != NULL && (keep != NULL || b->n == 0) && b->offs == NULL);
	for (i = 0; i < b->n; i++)
		if (keep[i])
			b->ents[w++] = b->ents[i];
	b->n = w;
	b->sorted = false;
}

/*
 * Sort context: scopes get ranks (their order) kept in the entry's top 16
 * bits and pfx holds 8 id bytes, big-endian and zero-padded, so most
 * comparisons never touch the arena. The 8 bytes start after the prefix
 * every id of the scope shares ("tok-" in "tok-1f2e..."): bytes all ids
 * share cannot order them, and skipping them leaves 8 bytes that mostly
 * do. With more distinct scopes than ranks, pfx holds the first 8 key
 * bytes instead and every rank is 0.
 */
struct tb_sort_ctx {
	const unsigned char *arena;
	/*
	 * Per rank: the bytes of the scope's keys before the first pfx
	 * byte (scope, 0x00, the shared id prefix); NULL when unranked
	 * (pfx starts at the key's first byte).
	 */
	const size_t	*skip;
};

static int
tb_ent_cmp(const void *a, const void *b, void *arg)
{
	const struct tb_sort_ctx *c = arg;
	const struct table_ent *ea = a, *eb = b;
	uint64_t ra = ea->off >> TB_OFF_BITS, rb = eb->off >> TB_OFF_BITS;
	const unsigned char *pa, *pb;
	int r;

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ea->pfx != eb->pfx)
		return ea->pfx < eb->pfx ? -1 : 1;
	pa = c->arena + (ea->off & TB_OFF_MASK);
	pb = c->arena + (eb->off & TB_OFF_MASK);
	r = tb_keycmp(rec_key(pa), rec_key_len(pa), rec_key(pb),
	    rec_key_len(pb));
	if (r != 0)
		return r;
	/* Equal keys keep insertion order, which the merge relies on. */
	ra = ea->off & TB_OFF_MASK;
	rb = eb->off & TB_OFF_MASK;
	return (ra > rb) - (ra < rb);
}

static uint64_t
tb_prefix8(const unsigned char *p, size_t len)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | (i < len ? p[i] : 0);
	return v;
}

struct tb_scope {
	const char	*s;
	size_t		 len;
};

static int
tb_scope_cmp(const void *a, const void *b)
{
	const struct tb_scope *x = a, *y = b;

	/* Scopes hold no NUL, so this is the order of "scope\0..." keys. */
	return tb_keycmp((const unsigned char *)x->s, x->len,
	    (const unsigned char *)y->s, y->len);
}

/*
 * Distinct scopes are found through a small open-addressing hash table, so
 * that many interleaved scopes cost O(1) per record, not a list scan. Its
 * hash is seeded per call: the scope names come from the lists read, and
 * names picked against a hash known in advance would fill one cluster and
 * make every lookup a scan (quadratic).
 */
#define TB_HASH_SLOTS	(2 * TB_MAX_RANKS)	/* a power of two */

struct tb_slot {
	const char	*s;	/* NULL: empty */
	size_t		 len;
	uint32_t	 rank;
};

static size_t
tb_slot_find(const struct tb_slot *h, uint64_t seed, const char *s,
    size_t len)
{
	size_t i = (size_t)XXH3_64bits_withSeed(s, len, seed) &
	    (TB_HASH_SLOTS - 1);

	while (h[i].s != NULL &&
	    (h[i].len != len || memcmp(h[i].s, s, len) != 0))
		i = (i + 1) & (TB_HASH_SLOTS - 1);
	return i;
}

/*
 * Ranks every entry's scope and sets its pfx. Returns false (ranks
 * unusable) when memory runs out or there are more distinct scopes than
 * ranks; true with *skipp set to each rank's key bytes before pfx (the
 * caller frees it).
 */
static bool
tb_rank_scopes(struct table_builder *b, size_t **skipp)
{
	struct tb_slot *h;
	struct tb_scope *sc = NULL;
	size_t nsc = 0, i, slot, last = SIZE_MAX, *lcp = NULL;
	const unsigned char **ref = NULL;
	const char *last_s = NULL;
	size_t last_len = 0;
	uint64_t seed;
	bool ok = false;

	/* Without a random seed the table still works, just not hardened. */
	if (RAND_bytes((unsigned char *)&seed, sizeof(seed)) != 1)
		seed = (uint64_t)(uintptr_t)b ^ (uint64_t)time(NULL);
	h = calloc(TB_HASH_SLOTS, sizeof(*h));
	sc = malloc(TB_MAX_RANKS * sizeof(*sc));
	if (h == NULL || sc == NULL)
		goto out;
	for (i = 0; i < b->n; i++) {
		const unsigned char *r = tb_rec(b, i);
		const char *s = (const char *)rec_key(r);
		size_t len = rec_scope_len(r);

		if (last_s != NULL && last_len == len &&
		    memcmp(last_s, s, len) == 0)
			continue;
		slot = tb_slot_find(h, seed, s, len);
		if (h[slot].s == NULL) {
			if (nsc == TB_MAX_RANKS)
				goto out;
			h[slot].s = s;
			h[slot].len = len;
			sc[nsc].s = s;
			sc[nsc].len = len;
			nsc++;
		}
		last_s = s;
		last_len = len;
	}
	qsort(sc, nsc, sizeof(*sc), tb_scope_cmp);
	for (i = 0; i < nsc; i++)
		h[tb_slot_find(h, seed, sc[i].s, sc[i].len)].rank = (uint32_t)i;
	if ((lcp = calloc(nsc > 0 ? nsc : 1, sizeof(*lcp))) == NULL ||
	    (ref = calloc(nsc > 0 ? nsc : 1, sizeof(*ref))) == NULL)
		goto out;
	last_s = NULL;
	for (i = 0; i < b->n; i++) {
		const unsigned char *r = tb_rec(b, i), *id;
		const char *s = (const char *)rec_key(r);
		size_t len = rec_scope_len(r), idlen, l;

		if (last_s == NULL || last_len != len ||
		    memcmp(last_s, s, len) != 0) {
			slot = tb_slot_find(h, seed, s, len);
			assert(h[slot].s != NULL);
			last = h[slot].rank;
			last_s = s;
			last_len = len;
		}
		b->ents[i].off = (b->ents[i].off & TB_OFF_MASK) |
		    ((uint64_t)last << TB_OFF_BITS);
		/* The prefix all ids of this scope share so far. */
		id = rec_key(r) + len + 1;
		idlen = rec_id_len(r);
		if (ref[last] == NULL) {
			ref[last] = id;
			lcp[last] = idlen;
			continue;
		}
		l = lcp[last] < idlen ? lcp[last] : idlen;
		lcp[last] = 0;
		while (lcp[last] < l && id[lcp[last]] == ref[last][lcp[last]])
			lcp[last]++;
	}
	for (i = 0; i < b->n; i++) {
		const unsigned char *r = tb_rec(b, i);
		size_t rk = (size_t)(b->ents[i].off >> TB_OFF_BITS);
		size_t skip = lcp[rk];

		b->ents[i].pfx = tb_prefix8(rec_key(r) + rec_scope_len(r) + 1 +
		    skip, rec_id_len(r) - skip);
	}
	/* From here on lcp holds each rank's key bytes before pfx. */
	for (i = 0; i < nsc; i++)
		lcp[i] += sc[i].len + 1;
	*skipp = lcp;
	lcp = NULL;
	ok = true;
out:
	free(h);
	free(sc);
	free(lcp);
	free(ref);
	return ok;
}

/*
 * The radix sort: an entry's sort key is its scope rank (2 bytes) then pfx
 * (8 bytes), most significant byte first. The comparison order of
 * tb_ent_cmp is that order, refined by the keys themselves and then the
 * insertion order; the radix passes sort by the 10 bytes, and every group
 * they leave equal or small is finished by tb_ent_cmp. tb_ent_cmp is a
 * strict total order (offsets differ), so the result is the one any
 * correct comparison sort gives.
 */
#define TB_DIGITS	10
#define TB_SMALL	32	/* groups this small: insertion sort */

static unsigned
tb_digit(const struct table_ent *e, unsigned d)
{
	if (d < 2)
		return (unsigned)(e->off >> (TB_OFF_BITS + 8 * (1 - d))) & 0xff;
	return (unsigned)(e->pfx >> (8 * (TB_DIGITS - 1 - d))) & 0xff;
}

static void
tb_isort(struct table_ent *e, size_t n, struct tb_sort_ctx *c)
{
	struct table_ent t;
	size_t i, j;

	for (i = 1; i < n; i++) {
		t = e[i];
		for (j = i; j > 0 && tb_ent_cmp(&t, &e[j - 1], c) < 0; j--)
			e[j] = e[j - 1];
		e[j] = t;
	}
}

/*
 * Loads the next 8 key bytes of a group into pfx: the group shares rank
 * and every earlier 8 bytes, taken at the key's offset skip + 8 * level
 * (zero-padded, as the first ones: the order stays that of the keys).
 * Returns true when some key has bytes at or past that offset, false
 * when the group has no more bytes to order it by.
 */
static bool
tb_reload(struct table_ent *e, size_t n, size_t level, struct tb_sort_ctx *c)
{
	const unsigned char *r;
	size_t i, at, kl;
	bool more = false;

	for (i = 0; i < n; i++) {
		if (i + TB_AHEAD < n)
			__builtin_prefetch(c->arena + (e[i + TB_AHEAD].off &
			    TB_OFF_MASK));
		r = c->arena + (e[i].off & TB_OFF_MASK);
		at = (c->skip != NULL ? c->skip[e[i].off >> TB_OFF_BITS] : 0) +
		    8 * level;
		kl = rec_key_len(r);
		e[i].pfx = kl > at ? tb_prefix8(rec_key(r) + at, kl - at) : 0;
		more |= kl > at;
	}
	return more;
}

/*
 * One pass of the American flag sort: moves each entry into the bucket of
 * its digit d, given the count of every bucket, by following cycles.
 */
static void
tb_distribute(struct table_ent *e, const size_t cnt[256], unsigned d)
{
	size_t head[256], end[256], s;
	struct table_ent t, u;
	unsigned v, dv;

	for (s = 0, v = 0; v < 256; v++) {
		head[v] = s;
		s += cnt[v];
		end[v] = s;
	}
	for (v = 0; v < 256; v++) {
		while (head[v] < end[v]) {
			t = e[head[v]];
			for (dv = tb_digit(&t, d); dv != v;
			    dv = tb_digit(&t, d)) {
				u = e[head[dv]];
				e[head[dv]++] = t;
				t = u;
			}
			e[head[v]++] = t;
		}
	}
}

/*
 * MSD radix sort in place (American flag sort) of n entries that share
 * the digits before d of their level-th 8 key bytes (level 0: the sort
 * prefix). A digit every entry shares costs one counting pass and no
 * moves. A group still equal after 8 bytes loads the next 8 from the
 * records (a group of copies of one key, or of keys whose ids share more
 * than 8 bytes past the scope's common prefix) rather than compare
 * records pairwise. The largest bucket is sorted in the loop, the others
 * by recursion, so the recursion is at most log2(n) deep.
 */
static void
tb_radix(struct table_ent *e, size_t n, unsigned d, size_t level,
    struct tb_sort_ctx *c)
{
	size_t cnt[256], i, s, ps, big;
	unsigned v, bv, pv;

	for (;;) {
		if (n <= TB_SMALL) {
			tb_isort(e, n, c);
			return;
		}
		if (d == TB_DIGITS) {
			if (!tb_reload(e, n, level + 1, c)) {
				/* Equal bytes to the end: only lengths and
				 * insertion order are left. */
				qsort_r(e, n, sizeof(*e), tb_ent_cmp, c);
				return;
			}
			level++;
			d = 2;	/* the rank is shared: pfx's bytes only */
			continue;
		}
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[tb_digit(&e[i], d)]++;
		if (cnt[tb_digit(&e[0], d)] == n) {
			d++;
			continue;
		}
		tb_distribute(e, cnt, d);
		for (big = 0, bv = 0, v = 0; v < 256; v++)
			if (cnt[v] > big) {
				big = cnt[v];
				bv = v;
			}
		/*
		 * Buckets of the last digit that hold more than one entry
		 * are equal in all 8 bytes: sorting them reads records, so
		 * their records are hinted a few buckets ahead.
		 */
		for (s = 0, v = 0, pv = 0, ps = 0; v < 256; s += cnt[v], v++) {
			for (; d + 1 == TB_DIGITS && pv < 256 &&
			    ps < s + cnt[v] + 2 * TB_AHEAD; ps += cnt[pv++])
				for (i = 0; cnt[pv] > 1 && i < cnt[pv]; i++)
					__builtin_prefetch(c->arena +
					    (e[ps + i].off & TB_OFF_MASK));
			if (v != bv && cnt[v] > 1)
				tb_radix(e + s, cnt[v], d + 1, level, c);
		}
		for (s = 0, v = 0; v < bv; v++)
			s += cnt[v];
		e += s;
		n = big;
		d++;
	}
}

/*
 * The radix sort on two cores: the first digit that splits the entries is
 * distributed in place here (one pass, as tb_radix does), then its buckets
 * are sorted by two threads at once, each taking whole buckets until it
 * holds about half the entries. Buckets are disjoint ranges of e and the
 * context is only read, so the result is tb_radix's. Without a second
 * thread (or for a small n) it is tb_radix.
 */
#define TB_PAR_MIN	(1u << 16)

struct tb_par {
	struct table_ent	*e;
	const size_t		*cnt;
	unsigned		 from, to;	/* buckets [from, to) */
	size_t			 at;		/* the first one's offset */
	unsigned		 d;
	struct tb_sort_ctx	*c;
};

static void *
tb_par_main(void *arg)
{
	struct tb_par *p = arg;
	size_t s = p->at;
	unsigned v;

	for (v = p->from; v < p->to; s += p->cnt[v], v++)
		if (p->cnt[v] > 1)
			tb_radix(p->e + s, p->cnt[v], p->d + 1, 0, p->c);
	return NULL;
}

static void
tb_radix2(struct table_ent *e, size_t n, struct tb_sort_ctx *c)
{
	size_t cnt[256], s, half;
	struct tb_par a, b;
	unsigned d, v;
	pthread_t tid;

	for (d = 0; n >= TB_PAR_MIN && d < TB_DIGITS; d++) {
		memset(cnt, 0, sizeof(cnt));
		for (s = 0; s < n; s++)
			cnt[tb_digit(&e[s], d)]++;
		if (cnt[tb_digit(&e[0], d)] != n)
			break;
	}
	if (n < TB_PAR_MIN || d == TB_DIGITS) {
		tb_radix(e, n, 0, 0, c);
		return;
	}
	tb_distribute(e, cnt, d);
	/* The first thread takes buckets [0, v), about half the entries. */
	for (s = 0, half = n / 2, v = 0; v < 256 && s + cnt[v] / 2 < half; v++)
		s += cnt[v];
	a = (struct tb_par){ e, cnt, 0, v, 0, d, c };
	b = (struct tb_par){ e, cnt, v, 256, s, d, c };
	if (pthread_create(&tid, NULL, tb_par_main, &a) != 0) {
		tb_par_main(&a);
		tb_par_main(&b);
		return;
	}
	tb_par_main(&b);
	(void)pthread_join(tid, NULL);
}

/*
 * True when sorted entries i and j hold the same key. The rank and the
 * prefix are functions of the key, so entries that differ in either hold
 * different keys and their records need not be read.
 */
static bool
tb_same_key(const struct table_builder *b, size_t i, size_t j)
{
	const struct table_ent *x = &b->ents[i], *y = &b->ents[j];
	const unsigned char *ri, *rj;

	if ((x->off >> TB_OFF_BITS) != (y->off >> TB_OFF_BITS) ||
	    x->pfx != y->pfx)
		return false;
	ri = tb_rec(b, i);
	rj = tb_rec(b, j);
	return tb_keycmp(rec_key(ri), rec_key_len(ri), rec_key(rj),
	    rec_key_len(rj)) == 0;
}

/*
 * Moves the sorted records into a new arena in key order (see struct
 * table_builder): one pass that reads the old arena scattered, so that
 * every later pass reads in order. Two threads share it: the first moves
 * the first half of the records forward from the new arena's start, the
 * second the rest backward from its end (the old arena's length, which
 * bounds both halves together), so neither needs the other's size; the
 * untouched gap between them is never faulted in, and tb_out_off and
 * tb_emit step over it. The entries are first packed in place to one
 * offset each, which frees half their memory before the new arena fills.
 * Without memory for the new arena the builder stays as it is.
 */
struct tb_packer {
	struct table_builder	*b;
	unsigned char		*na;
	size_t			 from, to;	/* entries [from, to) */
	uint64_t		 at;	/* forward: the end; backward: start */
	bool			 backward;
	uint64_t		 pop;	/* populated to (from, backward) */
};

/*
 * Populates the new arena a step ahead of a packer about to write sz
 * bytes at p->at (see tb_populate): toward the other half, never past the
 * arena, so that at most a step per side of the gap is populated unused.
 */
static void
tb_pack_populate(struct tb_packer *p, size_t sz)
{
	uint64_t to;

	if (!p->backward && p->at + sz > p->pop) {
		to = p->at + sz + UTIL_POPULATE_STEP;
		if (to > p->b->len)
			to = p->b->len;
		util_populate(p->na + p->pop, (size_t)(to - p->pop));
		p->pop = to;
	} else if (p->backward && p->at < p->pop) {
		to = p->at > UTIL_POPULATE_STEP ? p->at - UTIL_POPULATE_STEP :
		    0;
		util_populate(p->na + to, (size_t)(p->pop - to));
		p->pop = to;
	}
}

static void *
tb_pack_main(void *arg)
{
	struct tb_packer *p = arg;
	const unsigned char *arena = p->b->arena, *r, *q;
	uint64_t *offs = p->b->offs;
	size_t i, k, sz, n = p->to - p->from;

	for (k = 0; k < n; k++) {
		i = p->backward ? p->to - 1 - k : p->from + k;
		if (k + TB_AHEAD < n) {
			q = arena + (offs[p->backward ? i - TB_AHEAD :
			    i + TB_AHEAD] & TB_OFF_MASK);
			__builtin_prefetch(q);
			__builtin_prefetch(q + 63);
		}
		r = arena + (offs[i] & TB_OFF_MASK);
		sz = rec_size(r);
		if (p->backward)
			p->at -= sz;
		tb_pack_populate(p, sz);
		memcpy(p->na + p->at, r, sz);
		offs[i] = (offs[i] & ~TB_OFF_MASK) | p->at;
		if (!p->backward)
			p->at += sz;
	}
	return NULL;
}

static bool
tb_pack(struct table_builder *b)
{
	struct tb_packer fw, bw;
	unsigned char *na;
	uint64_t *offs, o;
	pthread_t tid;
	size_t i, h;

	/* The old arena's length bounds the new one's; pages untouched
	 * in the gap are never faulted in. */
	if (b->n == 0 || (na = malloc(b->len)) == NULL)
		return false;
	/* Offset i overlaps entry i / 2, already read. */
	offs = (uint64_t *)(void *)b->ents;
	for (i = 0; i < b->n; i++) {
		o = b->ents[i].off;
		offs[i] = o;
	}
	b->ents = NULL;
	b->offs = offs;
	if ((offs = realloc(b->offs, b->n * sizeof(*offs))) != NULL)
		b->offs = offs;
	b->ncap = 0;
	h = b->n >= TB_PAR_MIN ? b->n / 2 : b->n;
	fw = (struct tb_packer){ b, na, 0, h, 0, false, 0 };
	bw = (struct tb_packer){ b, na, h, b->n, b->len, true, b->len };
	if (h < b->n && pthread_create(&tid, NULL, tb_pack_main, &bw) == 0) {
		tb_pack_main(&fw);
		(void)pthread_join(tid, NULL);
	} else {
		tb_pack_main(&fw);
		tb_pack_main(&bw);
	}
	free(b->arena);
	b->arena = na;
	b->cap = b->apop = b->len;
	b->epop = 0;
	b->gap_at = fw.at;
	b->gap_len = bw.at - fw.at;
	b->rlen = b->len - b->gap_len;
	/* Later adds go past the second half. */
	return true;
}

/*
 * Without the packed form: each sorted entry's pfx becomes its record's
 * offset in the record area (one pass over the scattered records).
 */
static void
tb_number(struct table_builder *b)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (i + TB_AHEAD < b->n)
			__builtin_prefetch(tb_rec(b, i + TB_AHEAD));
		b->ents[i].pfx = total;
		total += rec_size(tb_rec(b, i));
	}
	b->rlen = total;
}

/*
 * Hints the records tb_same_key will read for sorted entry j: those of
 * j and j - 1 when their ranks and prefixes are equal.
 */
static void
tb_same_hint(const struct table_builder *b, size_t j)
{
	const struct table_ent *x, *y;

	if (j >= b->n)
		return;
	x = &b->ents[j - 1];
	y = &b->ents[j];
	if (x->pfx == y->pfx && (x->off >> TB_OFF_BITS) ==
	    (y->off >> TB_OFF_BITS)) {
		__builtin_prefetch(b->arena + (x->off & TB_OFF_MASK));
		__builtin_prefetch(b->arena + (y->off & TB_OFF_MASK));
	}
}

void
table_builder_sort_unique(struct table_builder *b)
{
	struct tb_sort_ctx ctx;
	size_t i, j, k, w, rep, *skip = NULL;
	int64_t when;

	assert(b != NULL);
	tb_prefault_stop(b);
	if (b->sorted)
		return;
	b->ranked = tb_rank_scopes(b, &skip);
	if (!b->ranked) {
		for (i = 0; i < b->n; i++) {
			const unsigned char *r = tb_rec(b, i);

			b->ents[i].off &= TB_OFF_MASK;
			b->ents[i].pfx = tb_prefix8(rec_key(r), rec_key_len(r));
		}
	}
	ctx.arena = b->arena;
	ctx.skip = b->ranked ? skip : NULL;
	tb_radix2(b->ents, b->n, &ctx);
	free(skip);

	/*
	 * Collapse runs of one key: the representative is the first record
	 * with a reason (else the first), and it takes the run's revocation
	 * time as table_merge_revoked() merges them. Unique keys' records
	 * are not read here.
	 */
	w = 0;
	for (i = 0; i < b->n; i = j) {
		for (j = i + 1; j < b->n; j++) {
			tb_same_hint(b, j + TB_AHEAD);
			if (!tb_same_key(b, i, j))
				break;
		}
		rep = i;
		if (j - i > 1) {
			when = rec_revoked(tb_rec(b, i));
			for (k = i + 1; k < j; k++) {
				const unsigned char *rk = tb_rec(b, k);

				if (rec_reason_len(tb_rec(b, rep)) == 0 &&
				    rec_reason_len(rk) != 0)
					rep = k;
				when = table_merge_revoked(
				    (const char *)rec_key(tb_rec(b, i)), when,
				    rec_revoked(rk));
			}
			util_put_le64(b->arena + (b->ents[rep].off &
			    TB_OFF_MASK) + 4, (uint64_t)when);
		}
		b->ents[w++] = b->ents[rep];
	}
	b->n = w;
	b->sorted = true;
	if (!tb_pack(b))
		tb_number(b);
}

void
table_builder_prefetch(const struct table_builder *b, size_t i)
{
	const unsigned char *r;
	uint64_t sz;

	/* Packed, the records are read in order: nothing to hint. */
	if (i >= b->n || b->offs != NULL)
		return;
	r = tb_rec(b, i);
	__builtin_prefetch(r);
	/* Sorted, its size is known: hint its last line too. */
	if (b->sorted) {
		sz = tb_out_off(b, i + 1) - tb_out_off(b, i);
		__builtin_prefetch(r + sz - 1);
	}
}

const unsigned char *
table_builder_key(const struct table_builder *b, size_t i, size_t *len)
{
	const unsigned char *r;

	assert(b != NULL && i < b->n && len != NULL);
	r = tb_rec(b, i);
	*len = rec_key_len(r);
	return rec_key(r);
}

const char *
table_builder_scope(const struct table_builder *b, size_t i, size_t *len)
{
	const unsigned char *r;

	assert(b != NULL && i < b->n && len != NULL);
	r = tb_rec(b, i);
	*len = rec_scope_len(r);
	return (const char *)rec_key(r);
}

size_t
table_builder_scope_end(const struct table_builder *b, size_t i)
{
	const char *s, *t;
	size_t sl, tl, j;

	assert(b != NULL && i < b->n);
	if (b->sorted && b->ranked) {
		/* Ranks stand for scopes: the records need not be read. */
		for (j = i + 1; j < b->n; j++)
			if ((tb_ent_off(b, j) >> TB_OFF_BITS) !=
			    (tb_ent_off(b, i) >> TB_OFF_BITS))
				break;
		return j;
	}
	s = table_builder_scope(b, i, &sl);
	for (j = i + 1; j < b->n; j++) {
		t = table_builder_scope(b, j, &tl);
		if (tl != sl || memcmp(s, t, sl) != 0)
			break;
	}
	return j;
}

int
table_builder_get(const struct table_builder *b, size_t i,
    struct table_rec *out)
{
	assert(b != NULL && out != NULL);
	if (i >= b->n)
		return -1;
	return rec_to_table_rec(tb_rec(b, i), b->len - (tb_ent_off(b, i) &
	    TB_OFF_MASK), out);
}

/*
 * Emits the table file through a sink in chunks of at most TB_CHUNK bytes.
 * The sink returns 0 or -1 (and then has filled err).
 */
#define TB_CHUNK (1u << 20)

typedef int (*tb_sink_fn)(void *arg, const unsigned char *p, size_t n,
    char *err, size_t errlen);

struct tb_out {
	unsigned char	*buf;
	size_t		 len;
	tb_sink_fn	 sink;
	void		*arg;
	char		*err;
	size_t		 errlen;
};

static int
tb_out_flush(struct tb_out *o)
{
	int rc = 0;

	if (o->len > 0)
		rc = o->sink(o->arg, o->buf, o->len, o->err, o->errlen);
	o->len = 0;
	return rc;
}

static int
tb_out_put(struct tb_out *o, const unsigned char *p, size_t n)
{
	while (n > 0) {
		size_t room = TB_CHUNK - o->len, c = n < room ? n : room;

		memcpy(o->buf + o->len, p, c);
		o->len += c;
		p += c;
		n -= c;
		if (o->len == TB_CHUNK && tb_out_flush(o) != 0)
			return -1;
	}
	return 0;
}

/* The record area's length (computed by table_builder_sort_unique). */
static uint64_t
tb_records_len(const struct table_builder *b)
{
	return b->sorted ? b->rlen : 0;
}

/* Sends n bytes straight to the sink in chunks of at most TB_CHUNK. */
static int
tb_out_direct(struct tb_out *o, const unsigned char *p, size_t n)
{
	size_t c;

	for (; n > 0; p += c, n -= c) {
		c = n < TB_CHUNK ? n : TB_CHUNK;
		if (o->sink(o->arg, p, c, o->err, o->errlen) != 0)
			return -1;
	}
	return 0;
}

static int
tb_emit(const struct table_builder *b, tb_sink_fn sink, void *arg,
    uint64_t *total, char *err, size_t errlen)
{
	struct tb_out o = { NULL, 0, sink, arg, err, errlen };
	unsigned char hdr[TABLE_HDR_LEN], le[8];
	uint64_t rlen;
	size_t i;
	int rc = -1;

	if (!b->sorted) {
		util_errf(err, errlen, "table: records not sorted");
		return -1;
	}
	o.buf = malloc(TB_CHUNK);
	if (o.buf == NULL) {
		util_errf(err, errlen, "table: out of memory");
		return -1;
	}
	rlen = tb_records_len(b);
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, TABLE_MAGIC, 8);
	util_put_le16(hdr + 8, TABLE_FORMAT);
	util_put_le64(hdr + 16, (uint64_t)b->n);
	util_put_le64(hdr + 24, rlen);
	if (tb_out_put(&o, hdr, sizeof(hdr)) != 0)
		goto out_free;
	for (i = 0; i < b->n; i++) {
		util_put_le64(le, tb_out_off(b, i));
		if (tb_out_put(&o, le, 8) != 0)
			goto out_free;
	}
	if (b->offs != NULL) {
		/* Packed: the arena is the record area, sent as it lies on
		 * both sides of the gap. */
		if (tb_out_flush(&o) != 0 || tb_out_direct(&o, b->arena,
		    (size_t)b->gap_at) != 0 || tb_out_direct(&o, b->arena +
		    b->gap_at + b->gap_len, (size_t)(rlen - b->gap_at)) != 0)
			goto out_free;
		goto done;
	}
	for (i = 0; i < b->n; i++) {
		const unsigned char *r = tb_rec(b, i);
		uint64_t sz = tb_out_off(b, i + 1) - tb_out_off(b, i);

		table_builder_prefetch(b, i + TB_AHEAD);
		/* The size the sort recorded is the record's own. */
		assert(sz == rec_size(r));
		if (tb_out_put(&o, r, (size_t)sz) != 0)
			goto out_free;
	}
done:
	if (tb_out_flush(&o) != 0)
		goto out_free;
	if (total != NULL)
		*total = TABLE_HDR_LEN + 8 * (uint64_t)b->n + rlen;
	rc = 0;
out_free:
	free(o.buf);
	return rc;
}

static int
tb_sink_sha(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	if (EVP_DigestUpdate(arg, p, n) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		return -1;
	}
	return 0;
}

int
table_builder_digest(const struct table_builder *b, unsigned char sha[32],
    uint64_t *len, char *err, size_t errlen)
{
	EVP_MD_CTX *ctx;
	unsigned int dlen = 0;
	int rc = -1;

	assert(b != NULL && sha != NULL && len != NULL);
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	if (tb_emit(b, tb_sink_sha, ctx, len, err, errlen) != 0)
		goto out;
	if (EVP_DigestFinal_ex(ctx, sha, &dlen) != 1 || dlen != 32) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

struct tb_membuf {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

static int
tb_sink_mem(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	struct tb_membuf *m = arg;

	if (n > m->cap - m->len) {
		util_errf(err, errlen, "table: size changed while encoding");
		return -1;
	}
	memcpy(m->p + m->len, p, n);
	m->len += n;
	return 0;
}

int
table_builder_encode(const struct table_builder *b, unsigned char **out,
    size_t *outlen, char *err, size_t errlen)
{
	struct tb_membuf m = { NULL, 0, 0 };
	uint64_t total;

	assert(b != NULL && out != NULL && outlen != NULL);
	*out = NULL;
	*outlen = 0;
	total = TABLE_HDR_LEN + 8 * (uint64_t)b->n + tb_records_len(b);
	if (total > SIZE_MAX) {
		util_errf(err, errlen, "table: too large");
		return -1;
	}
	m.cap = (size_t)total;
	m.p = malloc(m.cap);
	if (m.p == NULL) {
		util_errf(err, errlen, "table: out of memory (%" PRIu64 " bytes)",
		    total);
		return -1;
	}
	if (tb_emit(b, tb_sink_mem, &m, NULL, err, errlen) != 0) {
		free(m.p);
		return -1;
	}
	assert(m.len == m.cap);
	*out = m.p;
	*outlen = m.len;
	return 0;
}

/* The file's bytes to fd through the direct writer, and to SHA-256. */
struct tb_fdsink {
	struct util_dwriter	 w;
	EVP_MD_CTX		*ctx;	/* NULL: no digest */
};

static int
tb_sink_fd(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	struct tb_fdsink *s = arg;

	if (s->ctx != NULL && EVP_DigestUpdate(s->ctx, p, n) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		return -1;
	}
	if (util_dw_write(&s->w, p, n) != 0) {
		util_errf(err, errlen, "table: write: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
table_builder_write(const struct table_builder *b, int fd,
    unsigned char sha[32], uint64_t *len, char *err, size_t errlen)
{
	struct tb_fdsink s;
	unsigned int dlen = 0;
	int rc = -1;

	assert(b != NULL && fd >= 0);
	memset(&s, 0, sizeof(s));
	if (sha != NULL && ((s.ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(s.ctx, EVP_sha256(), NULL) != 1)) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	if (util_dw_open(&s.w, fd, true) != 0) {
		util_errf(err, errlen, "table: %s", strerror(errno));
		goto out;
	}
	if (tb_emit(b, tb_sink_fd, &s, len, err, errlen) != 0) {
		util_dw_abort(&s.w);
		goto out;
	}
	if (util_dw_close(&s.w) != 0) {
		util_errf(err, errlen, "table: write: %s", strerror(errno));
		goto out;
	}
	if (sha != NULL && (EVP_DigestFinal_ex(s.ctx, sha, &dlen) != 1 ||
	    dlen != 32)) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(s.ctx);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Reading. */

static int
tb_validate(struct table *t, char *err, size_t errlen)
{
	const unsigned char *h = t->buf, *prev = NULL;
	uint64_t count, rlen, pos, i;
	const unsigned char *last_scope = NULL;
	size_t last_scope_len = 0;

	if (t->len < TABLE_HDR_LEN) {
		util_errf(err, errlen, "offset 0: truncated header (%zu bytes)",
		    t->len);
		return -1;
	}
	if (memcmp(h, TABLE_MAGIC, 8) != 0) {
		util_errf(err, errlen, "offset 0: bad magic (not a table file)");
		return -1;
	}
	if (util_get_le16(h + 8) != TABLE_FORMAT) {
		if (util_get_le16(h + 8) < TABLE_FORMAT)
			util_errf(err, errlen, "offset 8: format %u is from an "
			    "older filterbuild (X.509 scopes were not over the "
			    "canonical issuer Name); rebuild with this "
			    "filterbuild", (unsigned)util_get_le16(h + 8));
		else
			util_errf(err, errlen, "offset 8: unsupported format %u",
			    (unsigned)util_get_le16(h + 8));
		return -1;
	}
	if (util_get_le16(h + 10) != 0 || util_get_le32(h + 12) != 0) {
		util_errf(err, errlen, "offset 10: reserved bytes not zero");
		return -1;
	}
	count = util_get_le64(h + 16);
	rlen = util_get_le64(h + 24);
	if (count > TABLE_MAX_RECORDS ||
	    count > (t->len - TABLE_HDR_LEN) / 8) {
		util_errf(err, errlen, "offset 16: record count %" PRIu64
		    " does not fit the file", count);
		return -1;
	}
	if (rlen != t->len - TABLE_HDR_LEN - 8 * count) {
		util_errf(err, errlen, "offset 24: records length %" PRIu64
		    " does not match the file size %zu", rlen, t->len);
		return -1;
	}
	t->count = count;
	t->idx = h + TABLE_HDR_LEN;
	t->recs = t->idx + 8 * count;
	t->recs_len = rlen;

	pos = 0;
	for (i = 0; i < count; i++) {
		uint64_t off = util_get_le64(t->idx + 8 * i);
		uint64_t at = TABLE_HDR_LEN + 8 * count + pos;
		const unsigned char *r;
		size_t sl, il, rl, sz;

		if (off != pos) {
			util_errf(err, errlen, "offset %" PRIu64 ": index entry %"
			    PRIu64 " is %" PRIu64 ", expected %" PRIu64,
			    TABLE_HDR_LEN + 8 * i, i, off, pos);
			return -1;
		}
		if (rlen - pos < TABLE_REC_HDR_LEN) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " truncated", at, i);
			return -1;
		}
		r = t->recs + pos;
		sl = rec_scope_len(r);
		il = rec_id_len(r);
		rl = rec_reason_len(r);
		if (sl == 0 || il == 0 || il > REVKEY_ID_MAX ||
		    rl >= TABLE_REASON_MAX) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has bad lengths (scope %zu, id %zu, reason %zu)",
			    at, i, sl, il, rl);
			return -1;
		}
		sz = tb_rec_size(sl, il, rl);
		if (rlen - pos < sz) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " runs past the end of the file", at, i);
			return -1;
		}
		if (r[TABLE_REC_HDR_LEN + sl] != 0) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has no key separator", at, i);
			return -1;
		}
		if (last_scope == NULL || last_scope_len != sl ||
		    memcmp(last_scope, rec_key(r), sl) != 0) {
			if (!revkey_scope_valid((const char *)rec_key(r), sl)) {
				util_errf(err, errlen, "offset %" PRIu64
				    ": record %" PRIu64 " has an invalid scope",
				    at, i);
				return -1;
			}
			last_scope = rec_key(r);
			last_scope_len = sl;
		}
		if (!tb_reason_ok((const char *)r + sz - rl, rl)) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " has control characters in its reason", at, i);
			return -1;
		}
		if (prev != NULL && tb_keycmp(rec_key(prev), rec_key_len(prev),
		    rec_key(r), rec_key_len(r)) >= 0) {
			util_errf(err, errlen, "offset %" PRIu64 ": record %" PRIu64
			    " is not in strictly ascending key order", at, i);
			return -1;
		}
		prev = r;
		pos += sz;
		util_give_way_point(sz + 8);
	}
	if (pos != rlen) {
		util_errf(err, errlen, "offset %" PRIu64 ": %" PRIu64
		    " trailing bytes after the last record",
		    TABLE_HDR_LEN + 8 * count + pos, rlen - pos);
		return -1;
	}
	if (util_sha256(t->sha, t->buf, t->len) != 0) {
		util_errf(err, errlen, "SHA-256 failed");
		return -1;
	}
	return 0;
}

struct table *
table_parse(const unsigned char *buf, size_t len, bool take, char *err,
    size_t errlen)
{
	struct table *t;
	char why[256];

	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		util_errf(err, errlen, "table: out of memory");
		if (take)
			free((void *)(uintptr_t)buf);
		return NULL;
	}
	t->buf = buf;
	t->len = len;
	t->owned = take;
	if (buf == NULL) {
		util_errf(err, errlen, "table: no data");
		table_close(t);
		return NULL;
	}
	if (tb_validate(t, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "table: %s", why);
		table_close(t);
		return NULL;
	}
	return t;
}

struct table *
table_open_fd(int fd, const char *name, char *err, size_t errlen)
{
	return table_open_fd_len(fd, name, 0, err, errlen);
}

struct table *
table_open_fd_len(int fd, const char *name, uint64_t want, char *err,
    size_t errlen)
{
	struct table *t;
	void *map;
	size_t len;
	char why[256];

	assert(name != NULL);
	/*
	 * A private copy, not a shared mapping: a table mapped from its file
	 * changes with the file, so an edit in place after the SHA-256 check
	 * would change answers (docs/BENCHMARKS.md has the memory it costs).
	 * With want, a file of another size is refused by util_copy_fd's
	 * fstat before a byte of it is copied.
	 */
	if (util_copy_fd(fd, name, want != 0 ? want : TABLE_HDR_LEN,
	    want != 0 ? want : UINT64_MAX, &map, &len, err, errlen) != 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL) {
		util_errf(err, errlen, "%s: out of memory", name);
		util_copy_free(map, len);
		return NULL;
	}
	t->buf = map;
	t->len = len;
	t->mapped = true;
	if (tb_validate(t, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "%s: %s", name, why);
		table_close(t);
		return NULL;
	}
	return t;
}

struct table *
table_open(const char *path, char *err, size_t errlen)
{
	struct table *t;
	int fd;

	assert(path != NULL);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		util_errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	t = table_open_fd(fd, path, err, errlen);
	close(fd);
	return t;
}

bool
table_intact(const struct table *t)
{
	unsigned char sha[32];

	assert(t != NULL);
	return util_sha256(sha, t->buf, t->len) == 0 &&
	    CRYPTO_memcmp(sha, t->sha, 32) == 0;
}

int
table_check_binding(const struct table *t, const unsigned char sha[32],
    uint64_t len, char *err, size_t errlen)
{
	assert(t != NULL && sha != NULL);
	if ((uint64_t)t->len != len) {
		util_errf(err, errlen, "table length %zu does not match the "
		    "filter's %" PRIu64, t->len, len);
		return -1;
	}
	if (CRYPTO_memcmp(t->sha, sha, 32) != 0) {
		util_errf(err, errlen,
		    "table SHA-256 does not match the filter's");
		return -1;
	}
	return 0;
}

uint64_t
table_count(const struct table *t)
{
	assert(t != NULL);
	return t->count;
}

const unsigned char *
table_sha256(const struct table *t)
{
	assert(t != NULL);
	return t->sha;
}

uint64_t
table_size(const struct table *t)
{
	assert(t != NULL);
	return t->len;
}

/*
 * The i-th record (i < count), its index entry and its key checked to lie
 * inside the record area; *avail gets the bytes from it to the area's end.
 * NULL when they do not.
 */
static const unsigned char *
tb_record(const struct table *t, uint64_t i, size_t *avail)
{
	uint64_t off = util_get_le64(t->idx + 8 * i);
	const unsigned char *r;

	if (off > t->recs_len || t->recs_len - off < TABLE_REC_HDR_LEN)
		return NULL;
	r = t->recs + off;
	if (rec_key_len(r) > t->recs_len - off - TABLE_REC_HDR_LEN)
		return NULL;
	*avail = (size_t)(t->recs_len - off);
	return r;
}

int
table_lookup(const struct table *t, const struct revkey *k,
    struct table_rec *out)
{
	unsigned char key[REVKEY_ENC_MAX];
	size_t klen, avail;
	uint64_t lo, hi;

	assert(t != NULL && k != NULL);
	if (!tb_key_ok(k))
		return 0;
	klen = revkey_encode(k, key);
	lo = 0;
	hi = t->count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const unsigned char *r = tb_record(t, mid, &avail);
		int c;

		if (r == NULL)
			return -1;
		c = tb_keycmp(rec_key(r), rec_key_len(r), key, klen);
		if (c == 0) {
			if (out != NULL &&
			    rec_to_table_rec(r, avail, out) == -1)
				return -1;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int
table_get(const struct table *t, uint64_t i, struct table_rec *out)
{
	const unsigned char *r;
	size_t avail;

	assert(t != NULL && out != NULL);
	if (i >= t->count || (r = tb_record(t, i, &avail)) == NULL)
		return -1;
	return rec_to_table_rec(r, avail, out);
}

void
table_close(struct table *t)
{
	if (t == NULL)
		return;
	if (t->mapped)
		util_copy_free((void *)(uintptr_t)t->buf, t->len);
	else if (t->owned)
		free((void *)(uintptr_t)t->buf);
	free(t);
}
