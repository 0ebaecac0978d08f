/* chainbuf.c - the verified delta chain in service, held once in memory and served by reference */
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "chainbuf.h"

/* One verified file's bytes, shared by every chain that holds it. */
struct chainseg {
	_Atomic unsigned long refs;
	size_t		 len;
	unsigned char	 p[];
};

struct chainbuf {
	_Atomic unsigned long refs;
	uint64_t	 n, cap;	/* deltas held, room in segs/offs */
	struct chainseg	**segs;		/* segs[i]: delta i + 1 */
	size_t		*offs;		/* offs[i]: where delta i + 1 starts */
	struct chainseg	*head;		/* NULL: none */
	size_t		 dlen;		/* bytes of the deltas */
	size_t		 index_bytes;	/* of segs and offs, counted live */
};

static _Atomic uint64_t live;

uint64_t
chainbuf_live_bytes(void)
{
	return atomic_load(&live);
}

static struct chainseg *
seg_new(const unsigned char *p, size_t len)
{
	struct chainseg *s;

	if (len > SIZE_MAX - sizeof(*s))
		return NULL;
	if ((s = malloc(sizeof(*s) + len)) == NULL)
		return NULL;
	atomic_init(&s->refs, 1);
	s->len = len;
	memcpy(s->p, p, len);
	atomic_fetch_add(&live, len);
	return s;
}

static void
seg_release(struct chainseg *s)
{
	if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	atomic_fetch_sub(&live, s->len);
	free(s);
}

/* Room for want deltas; 0, or -1 out of memory (cb unchanged). */
static int
grow(struct chainbuf *cb, uint64_t want)
{
	struct chainseg **ns;
	size_t *no, bytes;
	uint64_t cap = cb->cap != 0 ? cb->cap : 16;

	while (cap < want)
		cap *= 2;
	if (cap == cb->cap)
		return 0;
	if (cap > SIZE_MAX / sizeof(*ns) / 2)
		return -1;
	if ((ns = realloc(cb->segs, cap * sizeof(*ns))) == NULL)
		return -1;
	cb->segs = ns;
	if ((no = realloc(cb->offs, cap * sizeof(*no))) == NULL)
		return -1;
	cb->offs = no;
	bytes = cap * (sizeof(*ns) + sizeof(*no));
	atomic_fetch_add(&live, bytes);
	atomic_fetch_sub(&live, cb->index_bytes);
	cb->index_bytes = bytes;
	cb->cap = cap;
	return 0;
}

struct chainbuf *
chainbuf_begin(const struct chainbuf *prev)
{
	struct chainbuf *cb;
	uint64_t i;

	if ((cb = calloc(1, sizeof(*cb))) == NULL)
		return NULL;
	atomic_init(&cb->refs, 1);
	if (prev == NULL || prev->n == 0)
		return cb;
	if (grow(cb, prev->n + 1) == -1) {
		chainbuf_release(cb);
		return NULL;
	}
	for (i = 0; i < prev->n; i++) {
		cb->segs[i] = prev->segs[i];
		atomic_fetch_add(&cb->segs[i]->refs, 1);
		cb->offs[i] = prev->offs[i];
	}
	cb->n = prev->n;
	cb->dlen = prev->dlen;
	return cb;
}

int
chainbuf_add(struct chainbuf *cb, const unsigned char *p, size_t len,
    uint64_t max)
{
	struct chainseg *s;

	assert(cb != NULL && cb->head == NULL);
	if (len > SIZE_MAX - cb->dlen || cb->dlen + len > max ||
	    grow(cb, cb->n + 1) == -1 || (s = seg_new(p, len)) == NULL)
		return -1;
	cb->segs[cb->n] = s;
	cb->offs[cb->n] = cb->dlen;
	cb->n++;
	cb->dlen += len;
	return 0;
}

int
chainbuf_set_head(struct chainbuf *cb, const unsigned char *p, size_t len,
    uint64_t max)
{
	assert(cb != NULL && cb->head == NULL);
	if (len > SIZE_MAX - cb->dlen || cb->dlen + len > max ||
	    (cb->head = seg_new(p, len)) == NULL)
		return -1;
	return 0;
}

uint64_t
chainbuf_deltas(const struct chainbuf *cb)
{
	return cb->n;
}

void
chainbuf_range(const struct chainbuf *cb, uint64_t after, size_t *off,
    size_t *len)
{
	size_t total = cb->dlen + (cb->head != NULL ? cb->head->len : 0);

	*off = after < cb->n ? cb->offs[after] : cb->dlen;
	*len = total - *off;
}

size_t
chainbuf_read(const struct chainbuf *cb, size_t pos, void *buf, size_t max)
{
	const struct chainseg *s;
	size_t lo = 0, hi = cb->n, mid, start, k;

	if (pos >= cb->dlen) {
		s = cb->head;
		start = cb->dlen;
	} else {
		/* The last delta that starts at or before pos. */
		while (hi - lo > 1) {
			mid = lo + (hi - lo) / 2;
			if (cb->offs[mid] <= pos)
				lo = mid;
			else
				hi = mid;
		}
		s = cb->segs[lo];
		start = cb->offs[lo];
	}
	if (s == NULL || pos - start >= s->len)
		return 0;
	k = s->len - (pos - start);
	if (k > max)
		k = max;
	memcpy(buf, s->p + (pos - start), k);
	return k;
}

struct chainbuf *
chainbuf_ref(struct chainbuf *cb)
{
	atomic_fetch_add(&cb->refs, 1);
	return cb;
}

void
chainbuf_release(struct chainbuf *cb)
{
	uint64_t i;

	if (cb == NULL || atomic_fetch_sub(&cb->refs, 1) != 1)
		return;
	for (i = 0; i < cb->n; i++)
		seg_release(cb->segs[i]);
	seg_release(cb->head);
	atomic_fetch_sub(&live, cb->index_bytes);
	free(cb->segs);
	free(cb->offs);
	free(cb);
}
