/* live.h - the settings in force: one immutable generation, swapped whole on SIGHUP */
#ifndef REVCHECK_SVC_LIVE_H
#define REVCHECK_SVC_LIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "ocspd.h"
#include "stale.h"
#include "trust.h"

/*
 * A generation is the whole configuration in force (restart-only keys
 * keep their values from the start: config_keep_restart), the trusted
 * token issuers built from it (JWKS, secrets, introspection clients, an
 * empty verified-token cache) and the staleness policy. Nothing in it
 * changes once it is installed (the trust's own locks guard its fetched
 * key sets). A SIGHUP builds and checks the next generation completely,
 * then installs it with one pointer store: a request sees one generation
 * from start to end, and a generation that failed to build was never
 * seen by anyone.
 *
 * Readers: a request reads the current generation inside a read section
 * (live_enter/live_leave, the epoch sections of snapshot.c: no shared
 * write on the way); a thread that blocks while it uses one (the main
 * loop, status hooks) holds a reference (live_acquire/live_release).
 * live_swap retires the previous generation after a grace period, and
 * the last reference frees it (its JWKS refresh thread is stopped then).
 */
struct live {
	uint64_t	 gen;		/* 1 at start, +1 per applied SIGHUP */
	int64_t		 applied_at;	/* unix seconds */
	struct config	 cfg;		/* owned */
	struct stale_policy policy;
	struct trust	 trust;		/* borrows cfg's issuers */
	struct ocspd	 ocsp;		/* borrows cfg's OCSP path */
	char		 pending[512];	/* restart-only keys changed, or "" */
	_Atomic unsigned long refs;
};

/*
 * The outcome of the last SIGHUP, applied or refused: a refused one
 * changes no generation, so without this only the log would say it.
 */
struct live_reload {
	int64_t		 time;		/* unix seconds; 0: no SIGHUP yet */
	bool		 applied;
	char		 error[512];	/* why it was refused, or "" */
};

struct live_slot {
	_Alignas(64) _Atomic(struct live *) cur;
	pthread_mutex_t	 mu;	/* swaps; readers without a section; last */
	struct live_reload last;	/* under mu */
};

/*
 * A generation from c (deep-copied; c stays the caller's) numbered gen:
 * the issuers loaded (JWKS files, HS and client secrets: trust_init),
 * not started, and the OCSP responders loaded (ocspd_init). Returns it with one reference, or NULL with err naming
 * the issuer or file.
 */
struct live *live_new(const struct config *c, uint64_t gen, int64_t now,
    char *err, size_t errlen);

/*
 * Starts the generation's JWKS fetching: the sets fetched by prev (the
 * generation in force, or NULL at start) for an unchanged jwks_uri are
 * carried over and fetched again in the background (trust_inherit), any
 * other jwks_uri is fetched now (trust_start). Returns 0, or -1 with err.
 */
int live_start(struct live *lv, struct live *prev, char *err,
    size_t errlen);

/* Adds a reference to lv (held) and returns it. */
struct live *live_ref(struct live *lv);

/* Drops a reference; the last one frees the generation. NULL-safe. */
void live_release(struct live *lv);

void live_slot_init(struct live_slot *sl);

/* Empties the slot (live_swap with NULL) and destroys its lock. */
void live_slot_free(struct live_slot *sl);

/*
 * Starts a read section and returns the generation in force, valid
 * until the matching live_leave() on this thread. NULL when none is
 * installed or the thread could not register (memory ran out): answer
 * 503. Call live_leave() after either. The rules of snapshot_enter hold.
 */
struct live *live_enter(struct live_slot *sl);
void live_leave(void);

/* The generation in force with a reference, or NULL. Any thread. */
struct live *live_acquire(struct live_slot *sl);

/*
 * Installs lv (taking over the caller's reference; NULL empties the
 * slot), waits until no read section can still see the previous one and
 * drops the slot's reference to it. Outside any read section.
 */
void live_swap(struct live_slot *sl, struct live *lv);

/*
 * Records the outcome of a SIGHUP (err: why it was refused, NULL when
 * applied) and counts it (revcheckd_config_reloads_total).
 */
void live_note_reload(struct live_slot *sl, int64_t when, const char *err);

/* Copies the outcome of the last SIGHUP (time 0: none yet). Any thread. */
void live_last_reload(struct live_slot *sl, struct live_reload *out);

#endif
