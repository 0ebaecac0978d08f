/* table_sort.c - the builder's sort into key order: ranks, radix sort, packing */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <xxhash.h>

#include "table.h"
#include "table_int.h"
#include "util.h"

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
