/* ocsp_cache.c - signed OCSP responses kept per CertID for the state they were made from, bounded, LRU */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ocsp.h"

/*
 * Shards, each with its own lock, hash table and LRU list: threads
 * answering different serials rarely meet on a lock. The bound is split
 * evenly between them.
 */
#define SHARDS		16
#define BUCKETS_MIN	64

struct link {
	struct link	*prev, *next;	/* LRU: head is the most recent */
};

struct entry {
	struct link	 l;		/* first: a link is its entry */
	struct entry	*hnext;		/* the bucket's chain */
	uint64_t	 h;
	struct ocsp_stamp st;
	unsigned	 ri;
	int		 nid;
	int		 status;
	size_t		 klen;
	size_t		 dlen;
	size_t		 cost;
	unsigned char	 data[];	/* the key, then the response */
};

struct shard {
	_Alignas(64) pthread_mutex_t mu;
	struct entry	**tab;
	size_t		 nb;		/* buckets: a power of two */
	size_t		 n;
	uint64_t	 bytes;
	struct link	 lru;		/* sentinel */
};

struct ocsp_cache {
	uint64_t	 max_shard;	/* bytes per shard */
	uint64_t	 seed;
	struct shard	 sh[SHARDS];
};

/* The key of q's CertID: the serial's sign and bytes. */
#define KEY_MAX		(1 + OCSP_SERIAL_MAX)

static size_t
cache_key(const struct ocsp_req *q, unsigned char *out)
{
	size_t n = (size_t)ASN1_STRING_length(q->serial);

	if (n > OCSP_SERIAL_MAX)
		n = OCSP_SERIAL_MAX;	/* the parser refused longer ones */
	out[0] = ASN1_STRING_type(q->serial) == V_ASN1_NEG_INTEGER;
	memcpy(out + 1, ASN1_STRING_get0_data(q->serial), n);
	return n + 1;
}

struct ocsp_cache *
ocsp_cache_new(uint64_t max_bytes)
{
	struct ocsp_cache *c;
	size_t i;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->max_shard = max_bytes / SHARDS;
	if (RAND_bytes((unsigned char *)&c->seed, (int)sizeof(c->seed)) != 1)
		c->seed = (uint64_t)time(NULL) * UINT64_C(0x9e3779b97f4a7c15);
	for (i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&c->sh[i].mu, NULL);
		c->sh[i].lru.next = c->sh[i].lru.prev = &c->sh[i].lru;
	}
	return c;
}

void
ocsp_cache_free(struct ocsp_cache *c)
{
	struct link *e, *n;
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < SHARDS; i++) {
		for (e = c->sh[i].lru.next; e != &c->sh[i].lru; e = n) {
			n = e->next;
			free(e);
		}
		free(c->sh[i].tab);
		pthread_mutex_destroy(&c->sh[i].mu);
	}
	free(c);
}

static void
lru_unlink(struct entry *e)
{
	e->l.prev->next = e->l.next;
	e->l.next->prev = e->l.prev;
}

static void
lru_front(struct shard *s, struct entry *e)
{
	e->l.next = s->lru.next;
	e->l.prev = &s->lru;
	s->lru.next->prev = &e->l;
	s->lru.next = &e->l;
}

/* The slot pointing at the entry for the key, or at the chain's end. */
static struct entry **
find_slot(struct shard *s, uint64_t h, unsigned ri, int nid,
    const unsigned char *key, size_t klen)
{
	struct entry **p;

	for (p = &s->tab[h & (s->nb - 1)]; *p != NULL; p = &(*p)->hnext)
		if ((*p)->h == h && (*p)->ri == ri && (*p)->nid == nid &&
		    (*p)->klen == klen && memcmp((*p)->data, key, klen) == 0)
			break;
	return p;
}

/* Takes e out of the table and the list and frees it. */
static void
drop(struct shard *s, struct entry **slot)
{
	struct entry *e = *slot;

	*slot = e->hnext;
	lru_unlink(e);
	s->n--;
	s->bytes -= e->cost;
	free(e);
}

static bool
stamp_eq(const struct ocsp_stamp *a, const struct ocsp_stamp *b)
{
	return a->version == b->version && a->seq == b->seq &&
	    a->this_update == b->this_update &&
	    a->next_update == b->next_update;
}

int
ocsp_cache_get(struct ocsp_cache *c, unsigned ri, const struct ocsp_req *q,
    const struct ocsp_stamp *st, unsigned char **der, size_t *len,
    int *status)
{
	unsigned char key[KEY_MAX];
	struct entry **p, *e;
	struct shard *s;
	size_t klen = cache_key(q, key);
	uint64_t h = XXH3_64bits_withSeed(key, klen, c->seed ^ ri ^
	    ((uint64_t)(unsigned)q->md_nid << 32));
	int rc = -1;

	*der = NULL;
	*len = 0;
	s = &c->sh[(h >> 32) % SHARDS];	/* buckets use the low bits */
	pthread_mutex_lock(&s->mu);
	if (s->tab == NULL)
		goto out;
	p = find_slot(s, h, ri, q->md_nid, key, klen);
	if ((e = *p) == NULL || !stamp_eq(&e->st, st))
		goto out;
	if ((*der = malloc(e->dlen)) == NULL)
		goto out;
	memcpy(*der, e->data + e->klen, e->dlen);
	*len = e->dlen;
	*status = e->status;
	lru_unlink(e);
	lru_front(s, e);
	rc = 0;
out:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* Doubles the buckets when the chains grow long; nothing on failure. */
static void
grow(struct shard *s)
{
	struct entry **nt, *e, *n;
	size_t nb = s->nb == 0 ? BUCKETS_MIN : 2 * s->nb, i;

	if (s->nb != 0 && s->n < s->nb)
		return;
	if ((nt = calloc(nb, sizeof(*nt))) == NULL)
		return;
	for (i = 0; i < s->nb; i++)
		for (e = s->tab[i]; e != NULL; e = n) {
			n = e->hnext;
			e->hnext = nt[e->h & (nb - 1)];
			nt[e->h & (nb - 1)] = e;
		}
	free(s->tab);
	s->tab = nt;
	s->nb = nb;
}

/* Evicts from the cold end until need more bytes fit. */
static void
evict(struct shard *s, uint64_t max, size_t need)
{
	struct entry *e;

	while (s->n > 0 && s->bytes + need > max) {
		e = (struct entry *)(void *)s->lru.prev;
		drop(s, find_slot(s, e->h, e->ri, e->nid, e->data, e->klen));
	}
}

void
ocsp_cache_put(struct ocsp_cache *c, unsigned ri, const struct ocsp_req *q,
    const struct ocsp_stamp *st, const unsigned char *der, size_t len,
    int status)
{
	unsigned char key[KEY_MAX];
	struct entry **p, *e;
	struct shard *s;
	size_t klen = cache_key(q, key), cost;
	uint64_t h = XXH3_64bits_withSeed(key, klen, c->seed ^ ri ^
	    ((uint64_t)(unsigned)q->md_nid << 32));

	if (len > c->max_shard)
		return;
	cost = sizeof(*e) + klen + len;
	if (cost > c->max_shard)
		return;
	if ((e = malloc(cost)) == NULL)
		return;
	e->h = h;
	e->st = *st;
	e->ri = ri;
	e->nid = q->md_nid;
	e->status = status;
	e->klen = klen;
	e->dlen = len;
	e->cost = cost;
	memcpy(e->data, key, klen);
	memcpy(e->data + klen, der, len);
	s = &c->sh[(h >> 32) % SHARDS];	/* buckets use the low bits */
	pthread_mutex_lock(&s->mu);
	grow(s);
	if (s->tab == NULL) {
		pthread_mutex_unlock(&s->mu);
		free(e);
		return;
	}
	/* One entry per CertID: the one for an older state goes. */
	p = find_slot(s, h, ri, q->md_nid, key, klen);
	if (*p != NULL)
		drop(s, p);
	evict(s, c->max_shard, cost);
	p = find_slot(s, h, ri, q->md_nid, key, klen);
	e->hnext = NULL;
	*p = e;
	lru_front(s, e);
	s->n++;
	s->bytes += cost;
	pthread_mutex_unlock(&s->mu);
}

void
ocsp_cache_stats(struct ocsp_cache *c, uint64_t *entries, uint64_t *bytes)
{
	size_t i;

	*entries = *bytes = 0;
	for (i = 0; i < SHARDS; i++) {
		pthread_mutex_lock(&c->sh[i].mu);
		*entries += c->sh[i].n;
		*bytes += c->sh[i].bytes;
		pthread_mutex_unlock(&c->sh[i].mu);
	}
}
