/* longpoll.c - requests held until what they wait for changes, on no thread of their own */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "longpoll.h"
#include "util.h"

struct longpoll {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	pthread_t		 th;
	struct longpoll_node	 list;	/* sentinel of the held requests */
	unsigned		 n;
	unsigned		 max;
	bool			 stop;
	_Atomic uint64_t	 gen;	/* changes so far */
	uint64_t		 seen;	/* the thread's: changes handled */
	/* Holds by outcome, under mu. */
	uint64_t		 held;
	uint64_t		 woken;
	uint64_t		 expired;
	uint64_t		 refused;
};

static void
unlink_node(struct longpoll *lp, struct longpoll_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
	lp->n--;
}

/*
 * Resumes n, under mu. The connection's own thread runs its handler
 * again later, which may hold it once more: n is out of the list first.
 */
static void
resume_node(struct longpoll *lp, struct longpoll_node *n)
{
	struct MHD_Connection *conn = n->conn;

	unlink_node(lp, n);
	MHD_resume_connection(conn);
}

/* Resumes every node past its deadline; returns the earliest left. */
static double
expire(struct longpoll *lp, double now)
{
	struct longpoll_node *n, *next;
	double first = INFINITY;

	for (n = lp->list.next; n != &lp->list; n = next) {
		next = n->next;
		if (n->until <= now) {
			lp->expired++;
			resume_node(lp, n);
		} else if (n->until < first)
			first = n->until;
	}
	return first;
}

static void
resume_all(struct longpoll *lp)
{
	while (lp->list.next != &lp->list) {
		lp->woken++;
		resume_node(lp, lp->list.next);
	}
}

/* Sleeps until the earliest deadline, or a change, under mu. */
static void
sleep_until(struct longpoll *lp, double first)
{
	struct timespec ts;
	double left, now = util_monotime();

	left = first - now;
	if (left > 3600 || isinf(first))
		left = 3600;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)left;
	ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9) + 1000000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	(void)pthread_cond_timedwait(&lp->cv, &lp->mu, &ts);
}

static void *
longpoll_main(void *arg)
{
	struct longpoll *lp = arg;
	uint64_t g;

	(void)pthread_setname_np(pthread_self(), "revcheckd-lpoll");
	pthread_mutex_lock(&lp->mu);
	while (!lp->stop) {
		if ((g = atomic_load(&lp->gen)) != lp->seen) {
			lp->seen = g;
			resume_all(lp);
		}
		sleep_until(lp, expire(lp, util_monotime()));
	}
	resume_all(lp);
	pthread_mutex_unlock(&lp->mu);
	return NULL;
}

struct longpoll *
longpoll_start(unsigned max)
{
	pthread_condattr_t ca;
	struct longpoll *lp;
	int e;

	if ((lp = calloc(1, sizeof(*lp))) == NULL)
		return NULL;
	pthread_mutex_init(&lp->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lp->cv, &ca);
	pthread_condattr_destroy(&ca);
	lp->list.prev = lp->list.next = &lp->list;
	lp->max = max;
	atomic_init(&lp->gen, 0);
	if ((e = pthread_create(&lp->th, NULL, longpoll_main, lp)) != 0) {
		log_err("longpoll: cannot start its thread: %s",
		    strerror(e));
		pthread_cond_destroy(&lp->cv);
		pthread_mutex_destroy(&lp->mu);
		free(lp);
		return NULL;
	}
	return lp;
}

void
longpoll_stop(struct longpoll *lp)
{
	if (lp == NULL)
		return;
	pthread_mutex_lock(&lp->mu);
	if (lp->stop) {
		pthread_mutex_unlock(&lp->mu);
		return;
	}
	lp->stop = true;
	pthread_cond_signal(&lp->cv);
	pthread_mutex_unlock(&lp->mu);
	pthread_join(lp->th, NULL);
}

void
longpoll_free(struct longpoll *lp)
{
	if (lp == NULL)
		return;
	pthread_cond_destroy(&lp->cv);
	pthread_mutex_destroy(&lp->mu);
	free(lp);
}

uint64_t
longpoll_gen(const struct longpoll *lp)
{
	return atomic_load(&((struct longpoll *)lp)->gen);
}

int
longpoll_hold(struct longpoll *lp, struct longpoll_node *n,
    struct MHD_Connection *conn, uint64_t gen)
{
	int rc = 0;

	pthread_mutex_lock(&lp->mu);
	if (lp->stop || lp->n >= lp->max) {
		lp->refused++;
		rc = -1;
	} else if (atomic_load(&lp->gen) != gen)
		rc = 1;
	else {
		/*
		 * Suspended under mu: the thread cannot resume it before
		 * it is suspended.
		 */
		MHD_suspend_connection(conn);
		n->conn = conn;
		n->prev = lp->list.prev;
		n->next = &lp->list;
		lp->list.prev->next = n;
		lp->list.prev = n;
		lp->n++;
		lp->held++;
		/* A deadline earlier than the one the thread sleeps to. */
		pthread_cond_signal(&lp->cv);
	}
	pthread_mutex_unlock(&lp->mu);
	return rc;
}

void
longpoll_wake(void *arg)
{
	struct longpoll *lp = arg;

	pthread_mutex_lock(&lp->mu);
	atomic_fetch_add(&lp->gen, 1);
	pthread_cond_signal(&lp->cv);
	pthread_mutex_unlock(&lp->mu);
}

unsigned
longpoll_waiting(const struct longpoll *lp)
{
	struct longpoll *l = (struct longpoll *)lp;
	unsigned n;

	pthread_mutex_lock(&l->mu);
	n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

void
longpoll_metrics(struct longpoll *lp, struct sbuf *b)
{
	uint64_t v[6] = { 0 };

	if (lp != NULL) {
		pthread_mutex_lock(&lp->mu);
		v[0] = lp->n;
		v[1] = lp->max;
		v[2] = lp->woken;
		v[3] = lp->expired;
		v[4] = lp->refused;
		v[5] = lp->held;
		pthread_mutex_unlock(&lp->mu);
	}
	sbuf_adds(b, "# HELP revcheckd_longpoll_waiting Requests held until "
	    "the chain in service changes (GET /v1/delta?wait=).\n"
	    "# TYPE revcheckd_longpoll_waiting gauge\n"
	    "revcheckd_longpoll_waiting ");
	sbuf_add_u64(b, v[0]);
	sbuf_adds(b, "\n# HELP revcheckd_longpoll_max Requests held at most "
	    "at once (longpoll_max).\n# TYPE revcheckd_longpoll_max gauge\n"
	    "revcheckd_longpoll_max ");
	sbuf_add_u64(b, v[1]);
	sbuf_adds(b, "\n# HELP revcheckd_longpoll_holds_total Holds by how "
	    "they ended (woken: a change; expired: the wait "
	    "ran out; refused: over longpoll_max, answered at once).\n"
	    "# TYPE revcheckd_longpoll_holds_total counter\n"
	    "revcheckd_longpoll_holds_total{result=\"woken\"} ");
	sbuf_add_u64(b, v[2]);
	sbuf_adds(b, "\nrevcheckd_longpoll_holds_total{result=\"expired\"} ");
	sbuf_add_u64(b, v[3]);
	sbuf_adds(b, "\nrevcheckd_longpoll_holds_total{result=\"refused\"} ");
	sbuf_add_u64(b, v[4]);
	sbuf_adds(b, "\n# HELP revcheckd_longpoll_held_total Requests held "
	    "(one resumed for a change it does not wait for and held again "
	    "counts twice).\n# TYPE revcheckd_longpoll_held_total counter\n"
	    "revcheckd_longpoll_held_total ");
	sbuf_add_u64(b, v[5]);
	sbuf_adds(b, "\n");
}
