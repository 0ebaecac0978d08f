/* perthread.c - one cache-line aligned record per thread, found by the others */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perthread.h"

struct perthread_rec {
	struct perthread_rec *next;
	void		**tls;		/* the owner's cache, cleared at exit */
	_Atomic bool	 used;
	_Alignas(16) unsigned char payload[];
};

/* Serializes the slow path (a thread's first call); never a request's. */
static pthread_mutex_t get_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * The key's destructor, run by the exiting thread: its cache is cleared
 * before the record is handed on (release: the next owner sees every
 * count this thread made).
 */
static void
rec_exit(void *p)
{
	struct perthread_rec *r = p;

	if (r->tls != NULL)
		*r->tls = NULL;
	r->tls = NULL;
	atomic_store_explicit(&r->used, false, memory_order_release);
}

static struct perthread_rec *
rec_of(const void *payload)
{
	return (struct perthread_rec *)(void *)((uintptr_t)payload -
	    offsetof(struct perthread_rec, payload));
}

void *
perthread_get(struct perthread *pt, void **tls)
{
	struct perthread_rec *r;
	size_t sz;

	pthread_mutex_lock(&get_mu);
	if (!atomic_load(&pt->key_made)) {
		if (pthread_key_create(&pt->key, rec_exit) != 0)
			goto fail;
		atomic_store(&pt->key_made, true);
	}
	for (r = atomic_load(&pt->head); r != NULL; r = r->next)
		if (!atomic_load_explicit(&r->used, memory_order_acquire))
			goto take;
	sz = sizeof(*r) + pt->size;
	if (sz > SIZE_MAX - PERTHREAD_LINE)
		goto fail;
	sz = (sz + PERTHREAD_LINE - 1) / PERTHREAD_LINE * PERTHREAD_LINE;
	if ((r = aligned_alloc(PERTHREAD_LINE, sz)) == NULL)
		goto fail;
	memset(r, 0, sz);
	r->next = atomic_load(&pt->head);
	atomic_store(&pt->head, r);	/* readers see it whole */
take:
	atomic_store(&r->used, true);
	r->tls = tls;
	if (pthread_setspecific(pt->key, r) != 0) {
		r->tls = NULL;
		atomic_store(&r->used, false);
		goto fail;
	}
	*tls = r->payload;
	pthread_mutex_unlock(&get_mu);
	return r->payload;
fail:
	pthread_mutex_unlock(&get_mu);
	return NULL;
}

void *
perthread_first(struct perthread *pt)
{
	struct perthread_rec *r = atomic_load(&pt->head);

	return r != NULL ? r->payload : NULL;
}

void *
perthread_next(const void *payload)
{
	struct perthread_rec *r = rec_of(payload)->next;

	return r != NULL ? r->payload : NULL;
}
