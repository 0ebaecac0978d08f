/* perthread.h - one cache-line aligned record per thread, found by the others */
#ifndef REVCHECK_SVC_PERTHREAD_H
#define REVCHECK_SVC_PERTHREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * State that every thread writes for itself and that another thread reads
 * now and then: request counters summed by /metrics, the epoch a reader
 * of the snapshot announces (snapshot.c). Each thread gets its own record,
 * aligned and padded to whole cache lines, so a thread's writes never
 * touch a line another thread writes: the point is that requests on
 * different cores share nothing they write.
 *
 * Records are never freed. When a thread exits its record is marked free
 * and the next new thread takes it over as it is (a counter keeps its
 * count, so a sum over all records never goes down); the list only grows
 * to the largest number of threads alive at once.
 */
#define PERTHREAD_LINE	64

struct perthread_rec;

struct perthread {
	size_t		 size;		/* payload bytes, fixed */
	_Atomic(struct perthread_rec *) head;	/* all records, newest first */
	pthread_key_t	 key;		/* its destructor frees the record */
	_Atomic bool	 key_made;
};

#define PERTHREAD_INIT(payload_size)	{ (payload_size), NULL, 0, false }

/*
 * The calling thread's payload: made (zeroed, PERTHREAD_LINE aligned) or
 * taken over from an exited thread (contents kept) on the first call, the
 * same pointer afterwards. *tls is the caller's _Thread_local cache of it:
 * set here and cleared when the thread exits, so a call after that takes a
 * record again instead of writing into one another thread may own.
 * Returns NULL when memory runs out (nothing changed; a later call tries
 * again).
 */
void *perthread_get(struct perthread *pt, void **tls);

/*
 * Walks every record ever made (in use or free), for readers that sum or
 * scan them: perthread_first, then perthread_next until NULL. Safe from
 * any thread at any time: the list is only ever prepended to.
 */
void *perthread_first(struct perthread *pt);
void *perthread_next(const void *payload);

#endif
