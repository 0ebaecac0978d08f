/* overlay.c - the exact overlay of a delta chain over a base: keys added or removed since it */
#include "overlay.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>
#include <xxhash.h>

/* One key: its encoded bytes and its last change, in one allocation. */
struct ov_ent {
	uint8_t		 op;
	uint8_t		 reason_len;
	uint16_t	 key_len;
	int64_t		 revoked_at;
	unsigned char	 bytes[];	/* key (scope 0x00 id), then reason */
};

/*
 * The keys come from deltas, and a delta's keys from sources revcheck
 * does not control (a CA's CRL, rows of a database). A public hash
 * would let whoever chooses keys choose their slots: keys made to share
 * a slot's low bits become one probe run, and every insert and every
 * check that lands in it walks all of it. Each overlay has its own
 * random seed, so slots cannot be aimed at.
 */
struct overlay {
	struct ov_ent	**slots;	/* open addressing, NULL = empty */
	size_t		 cap;		/* power of two */
	size_t		 n;
	size_t		 bytes;
	uint64_t	 seed;		/* of ov_hash, random, kept by clones */
};

static uint64_t
ov_hash(const struct overlay *ov, const unsigned char *k, size_t len)
{
	return XXH3_64bits_withSeed(k, len, ov->seed);
}

struct overlay *
overlay_new(void)
{
	struct overlay *ov = calloc(1, sizeof(*ov));

	if (ov == NULL)
		return NULL;
	ov->cap = 64;
	if (RAND_bytes((unsigned char *)&ov->seed, sizeof(ov->seed)) != 1 ||
	    (ov->slots = calloc(ov->cap, sizeof(*ov->slots))) == NULL) {
		free(ov);
		return NULL;
	}
	return ov;
}

static size_t
ov_ent_size(const struct ov_ent *e)
{
	return sizeof(*e) + e->key_len + e->reason_len;
}

/* The slot of key k: where it is, or the empty slot it would go in. */
static size_t
ov_slot(const struct overlay *ov, const unsigned char *k, size_t len)
{
	size_t mask = ov->cap - 1, i = (size_t)ov_hash(ov, k, len) & mask;

	while (ov->slots[i] != NULL && (ov->slots[i]->key_len != len ||
	    memcmp(ov->slots[i]->bytes, k, len) != 0))
		i = (i + 1) & mask;
	return i;
}

/* Doubles the table. 0, or -1 (ov unchanged) when memory runs out. */
static int
ov_grow(struct overlay *ov)
{
	struct ov_ent **old = ov->slots, **ns;
	size_t oldcap = ov->cap, i;

	if (ov->cap > SIZE_MAX / 2 / sizeof(*ns) ||
	    (ns = calloc(ov->cap * 2, sizeof(*ns))) == NULL)
		return -1;
	ov->slots = ns;
	ov->cap *= 2;
	for (i = 0; i < oldcap; i++)
		if (old[i] != NULL)
			ov->slots[ov_slot(ov, old[i]->bytes,
			    old[i]->key_len)] = old[i];
	free(old);
	return 0;
}

struct overlay *
overlay_clone(const struct overlay *ov)
{
	struct overlay *c;
	size_t i, sz;

	assert(ov != NULL);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if ((c->slots = calloc(ov->cap, sizeof(*c->slots))) == NULL) {
		free(c);
		return NULL;
	}
	c->cap = ov->cap;
	c->seed = ov->seed;		/* the slots are copied where they are */
	for (i = 0; i < ov->cap; i++) {
		if (ov->slots[i] == NULL)
			continue;
		sz = ov_ent_size(ov->slots[i]);
		if ((c->slots[i] = malloc(sz)) == NULL) {
			overlay_free(c);
			return NULL;
		}
		memcpy(c->slots[i], ov->slots[i], sz);
		c->n++;
	}
	c->bytes = ov->bytes;
	return c;
}

/* Sets one key's change. 0, or -1 when memory runs out. */
static int
ov_set(struct overlay *ov, const struct delta_entry *de)
{
	unsigned char k[REVKEY_ENC_MAX];
	size_t klen = revkey_encode(&de->rec.key, k), rlen, i;
	struct ov_ent *e;

	if (2 * (ov->n + 1) > ov->cap && ov_grow(ov) != 0)
		return -1;
	rlen = de->op == DELTA_ADD ? strnlen(de->rec.reason,
	    TABLE_REASON_MAX - 1) : 0;
	if ((e = malloc(sizeof(*e) + klen + rlen)) == NULL)
		return -1;
	e->op = (uint8_t)de->op;
	e->reason_len = (uint8_t)rlen;
	e->key_len = (uint16_t)klen;
	e->revoked_at = de->op == DELTA_ADD ? de->rec.revoked_at : 0;
	memcpy(e->bytes, k, klen);
	memcpy(e->bytes + klen, de->rec.reason, rlen);
	i = ov_slot(ov, k, klen);
	if (ov->slots[i] != NULL) {
		ov->bytes -= ov_ent_size(ov->slots[i]);
		free(ov->slots[i]);
	} else {
		ov->n++;
	}
	ov->slots[i] = e;
	ov->bytes += ov_ent_size(e);
	return 0;
}

int
overlay_apply(struct overlay *ov, const struct delta *d)
{
	struct delta_entry de;
	uint64_t i, n = delta_info(d)->nentries;

	for (i = 0; i < n; i++) {
		if (delta_get(d, i, &de) != 0 || ov_set(ov, &de) != 0)
			return -1;
	}
	return 0;
}

/* Fills rec from an entry. */
static void
ov_rec(const struct ov_ent *e, struct table_rec *rec)
{
	const unsigned char *nul = memchr(e->bytes, 0, e->key_len);
	size_t slen = (size_t)(nul - e->bytes);

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->key.scope, e->bytes, slen);
	rec->key.scope_len = slen;
	memcpy(rec->key.id, nul + 1, e->key_len - slen - 1);
	rec->key.id_len = e->key_len - slen - 1;
	rec->revoked_at = e->revoked_at;
	memcpy(rec->reason, e->bytes + e->key_len, e->reason_len);
}

int
overlay_find(const struct overlay *ov, const struct revkey *k,
    struct table_rec *rec)
{
	unsigned char kb[REVKEY_ENC_MAX];
	size_t klen = revkey_encode(k, kb), i;

	i = ov_slot(ov, kb, klen);
	if (ov->slots[i] == NULL)
		return 0;
	if (rec != NULL)
		ov_rec(ov->slots[i], rec);
	return ov->slots[i]->op;
}

size_t
overlay_count(const struct overlay *ov)
{
	return ov->n;
}

size_t
overlay_bytes(const struct overlay *ov)
{
	return ov->bytes + ov->cap * sizeof(*ov->slots);
}

size_t
overlay_longest_run(const struct overlay *ov)
{
	size_t i, run = 0, best = 0, first = 0;

	/* Runs wrap around the end: the run at slot 0 continues the last. */
	for (i = 0; i < ov->cap && ov->slots[i] != NULL; i++)
		first++;
	for (i = first; i < ov->cap; i++) {
		run = ov->slots[i] != NULL ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	if (first < ov->cap && run + first > best)
		best = run + first;
	return first == ov->cap ? ov->cap : best;
}

int
overlay_next(const struct overlay *ov, size_t *it, struct table_rec *rec)
{
	for (; *it < ov->cap; (*it)++) {
		if (ov->slots[*it] != NULL) {
			ov_rec(ov->slots[*it], rec);
			return ov->slots[(*it)++]->op;
		}
	}
	return 0;
}

void
overlay_free(struct overlay *ov)
{
	size_t i;

	if (ov == NULL)
		return;
	for (i = 0; ov->slots != NULL && i < ov->cap; i++)
		free(ov->slots[i]);
	free(ov->slots);
	free(ov);
}
