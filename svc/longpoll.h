/* longpoll.h - requests held until what they wait for changes, on no thread of their own */
#ifndef REVCHECK_SVC_LONGPOLL_H
#define REVCHECK_SVC_LONGPOLL_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "sbuf.h"

/*
 * A held request is a suspended libmicrohttpd connection and one node in
 * a list: no thread, no allocation (the node lives in the request's own
 * state), and at most `max` at once. One thread of this module resumes
 * them: all of them when the snapshot in service changes (longpoll_wake,
 * called by every snapshot swap), each one at its deadline otherwise. A
 * resumed request runs its handler again, which answers or holds it once
 * more (a change that is not one it waits for).
 *
 * Locking: the list lock is taken before libmicrohttpd's own (suspend and
 * resume are called under it) and never the other way round:
 * libmicrohttpd calls no handler of ours with its lock held.
 */
struct longpoll_node {
	struct longpoll_node	*prev;
	struct longpoll_node	*next;
	struct MHD_Connection	*conn;
	double			 until;		/* monotonic deadline */
};

struct longpoll;

/*
 * Starts the resuming thread; at most max requests are held at once (0:
 * none, every request is answered at once). NULL when a thread or
 * memory cannot be had.
 */
struct longpoll *longpoll_start(unsigned max);

/*
 * Refuses every later hold, resumes every held request (they answer at
 * once) and stops the thread. Call before libmicrohttpd stops, while it
 * still serves resumed connections; a second call does nothing.
 * NULL-safe.
 */
void longpoll_stop(struct longpoll *lp);

/* Frees a stopped lp, once no handler can call it any more. NULL-safe. */
void longpoll_free(struct longpoll *lp);

/*
 * The count of changes so far. A handler reads it before it looks at
 * the snapshot and passes it to longpoll_hold, so that a change between
 * the two is never missed. This function can't fail.
 */
uint64_t longpoll_gen(const struct longpoll *lp);

/*
 * Holds the request of conn (on its own thread, inside its access
 * handler) until the next change or n->until: suspends conn and adds n.
 * Returns 0 when held (the handler returns MHD_YES and runs again once
 * resumed), 1 when a change came after gen (look again now, nothing
 * held), -1 when max requests are held already or lp is stopping (answer
 * now; counted as refused). n belongs to the caller and must stay valid
 * until the request runs again.
 */
int longpoll_hold(struct longpoll *lp, struct longpoll_node *n,
    struct MHD_Connection *conn, uint64_t gen);

/*
 * A change: every held request is resumed. For snapshot_slot_on_swap
 * (arg is the longpoll). Any thread; never blocks for long.
 */
void longpoll_wake(void *arg);

/* Requests held now. */
unsigned longpoll_waiting(const struct longpoll *lp);

/*
 * Appends the revcheckd_longpoll_* series: held now, the cap, and holds
 * by outcome (answered by a change, at the deadline, refused over the
 * cap). NULL lp: all zero. Can't fail (sbuf's sticky error).
 */
void longpoll_metrics(struct longpoll *lp, struct sbuf *b);

#endif
