/* snapshot.h - the filter in service: read without a shared write, swapped on reload */
#ifndef REVCHECK_SVC_SNAPSHOT_H
#define REVCHECK_SVC_SNAPSHOT_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "chainbuf.h"
#include "delta.h"
#include "ffile.h"
#include "overlay.h"
#include "stale.h"
#include "table.h"

/* Distinct delta and head signers a snapshot remembers (then: unknown). */
#define SNAPSHOT_CHAIN_SIGNERS	8

/*
 * A snapshot is one verified filter and (on an origin) its authoritative
 * table. A request answers from exactly one snapshot even when a reload
 * swaps a new one in meanwhile, and a snapshot is freed exactly once,
 * after the last reader is done with it. Two ways to read one:
 *
 * - Requests use a read section (snapshot_enter/snapshot_leave), which
 *   writes nothing another thread writes: the thread announces the
 *   reload epoch it entered in its own cache line (perthread.h). A swap
 *   makes the new snapshot current, starts a new epoch and waits until
 *   every thread has left the sections it entered before (an epoch-based
 *   grace period, as in RCU); only then does the slot drop its reference
 *   to the old one. No process-wide lock, no shared counter on the way.
 * - Everything else (the loader, sync, /v1/status, a request kept across
 *   a suspend) holds a reference: snapshot_acquire, or snapshot_ref
 *   inside a read section; the last snapshot_release frees.
 */
struct snapshot {
	struct ffile	*ff;
	struct table	*tab;		/* NULL on an edge: no local authority */
	/*
	 * The base's fields, except that issued_at and expires_at are the
	 * chain's once a delta or head extends it: staleness follows the
	 * newest signed file in service.
	 */
	const struct ffile_info *info;
	struct ffile_info info_eff;
	/* A snapshot made by snapshot_with_chain borrows ff and tab from it. */
	struct snapshot	*parent;
	struct overlay	*ov;		/* NULL: no delta applied */
	struct delta_pos pos;		/* pos.seq is the delta sequence */
	int64_t		 last_delta_at;	/* issued_at of the last delta, 0 none */
	int64_t		 last_change_at; /* newest change it covers, 0 unknown */
	int64_t		 applied_at;	/* when the last delta was applied */
	/*
	 * The delta seq the rollback state says was once served on this
	 * base: below it the snapshot lacks changes it once answered with,
	 * and answers nothing (STALE_CHAIN_BEHIND) until the chain is back.
	 */
	uint64_t	 chain_need;
	/*
	 * Who signed the deltas and heads applied (a withdrawn key takes
	 * the snapshot out of service); chain_signers_lost when there were
	 * more than fit, which counts as signed by a key since withdrawn.
	 */
	unsigned char	 chain_signers[SNAPSHOT_CHAIN_SIGNERS][SIGN_KEYID_LEN];
	unsigned	 nchain_signers;
	bool		 chain_signers_lost;
	/* An origin's chain directory, served by /v1/delta; "" otherwise. */
	char		 chain_dir[PATH_MAX];
	/*
	 * The verified bytes of the deltas 1..pos.seq and head in service,
	 * what /v1/delta serves (by reference); NULL on an edge, before a
	 * chain, or with chain_over: the chain's files come to more than
	 * delta_memory_max (or memory ran out), and /v1/delta answers 503.
	 */
	struct chainbuf	*chain;
	bool		 chain_over;
	uint64_t	 version;
	int64_t		 loaded_at;
	char		 sha_hex[65];
	char		 signer_hex[65];
	char		 etag[70];		/* "\"<sha256 hex>\"" */
	char		 last_modified[40];	/* HTTP-date of issued_at */
	double		 fill_ratio;		/* computed once at load */
	double		 estimated_fp;
	_Atomic unsigned long refs;
};

struct snapshot_slot {
	/* Read by every request; written only by a swap. */
	_Alignas(64) _Atomic(struct snapshot *) cur;
	/*
	 * Swaps, and snapshot_acquire on a thread that could not register
	 * for read sections (memory ran out).
	 */
	pthread_mutex_t	 mu;
	/* Edge: when a newer version was first seen upstream, 0 if none. */
	_Alignas(64) _Atomic int64_t newer_seen_at;
	/*
	 * The chain's lag clock, written by the loader only: since
	 * chain_seen_at (0: not running) a verified head of base
	 * chain_seen_base has named delta chain_seen_seq, above the chain
	 * in service (STALE_CHAIN_LAG after max_lag). chain_top_seq is the
	 * highest delta named on that base, first named at chain_top_at:
	 * the clock moves on to it when chain_seen_seq is reached, so a
	 * chain that follows a moving head a little behind does not lag.
	 */
	_Atomic int64_t	 chain_seen_at;
	_Atomic uint64_t chain_seen_base;
	_Atomic uint64_t chain_seen_seq;
	_Atomic uint64_t chain_top_seq;
	_Atomic int64_t	 chain_top_at;
	/*
	 * Called after every swap, outside the lock, on the swapping
	 * thread (snapshot_slot_on_swap); NULL: none. Under mu.
	 */
	void		(*on_swap)(void *arg);
	void		*on_swap_arg;
};

/*
 * Wraps a verified filter and table (tab may be NULL) in a snapshot with
 * one reference. Takes ownership of ff and tab in every case (closes them
 * on failure). Returns NULL when memory runs out.
 */
struct snapshot *snapshot_new(struct ffile *ff, struct table *tab,
    int64_t now);

/* What a chain adds to a snapshot (snapshot_with_chain). */
struct snapshot_chain {
	struct overlay	*ov;		/* taken over */
	struct delta_pos pos;
	int64_t		 issued_at;	/* of the newest delta or head */
	int64_t		 expires_at;
	int64_t		 last_delta_at;
	int64_t		 last_change_at;
	const char	*chain_dir;	/* NULL: not a local directory */
	struct chainbuf	*chain;		/* taken over; NULL: none */
	bool		 chain_over;	/* not held: see struct snapshot */
};

/*
 * A snapshot of cur's base with a chain applied: shares cur's filter and
 * table (holding a reference to the snapshot that owns them), takes
 * ownership of ch->ov and ch->chain in every case. Returns NULL when memory runs out.
 */
struct snapshot *snapshot_with_chain(struct snapshot *cur,
    struct snapshot_chain *ch, int64_t now);

/*
 * Records that a delta or head signed by signer is applied in s, which
 * must not be in service yet. This function can't fail.
 */
void snapshot_add_chain_signer(struct snapshot *s,
    const unsigned char signer[SIGN_KEYID_LEN]);

/*
 * stale_check() for a snapshot of sl (its newer_seen_at; sl may be NULL:
 * no lag): its freshness, then its chain position (STALE_CHAIN_BEHIND
 * when it holds fewer deltas than chain_need), then the chain's lag
 * (STALE_CHAIN_LAG when, for max_lag or more, a verified head of its
 * base has named a delta above the ones it holds).
 */
enum stale_reason snapshot_stale(const struct snapshot *s,
    const struct stale_policy *p, int64_t now, struct snapshot_slot *sl);

/*
 * The loader saw, at now, a verified head of base version base naming
 * delta seq above the chain in service: starts the chain's lag clock
 * unless it runs for that base (then seq only raises chain_top_seq).
 * Loader only (one writer).
 */
void snapshot_slot_chain_seen(struct snapshot_slot *sl, uint64_t base,
    uint64_t seq, int64_t now);

/*
 * The chain in service on base reached seq: stops the clock when that
 * is all that was named on base, moves it on to chain_top_seq when the
 * delta it ran for is reached. Another base, or base 0: stops it.
 * Loader only.
 */
void snapshot_slot_chain_reached(struct snapshot_slot *sl, uint64_t base,
    uint64_t seq);

/*
 * Adds a reference to s and returns it: s must be held (a reference, or
 * a read section it was found in).
 */
struct snapshot *snapshot_ref(struct snapshot *s);

/* Drops a reference; the last one closes the filter and table. NULL-safe. */
void snapshot_release(struct snapshot *s);

void snapshot_slot_init(struct snapshot_slot *sl);

/*
 * Sets the function every later snapshot_swap calls once the new
 * snapshot is current (requests held for a change: longpoll.h). It runs
 * on the swapping thread outside any read section and must not block
 * for long nor swap. fn NULL: none. This function can't fail.
 */
void snapshot_slot_on_swap(struct snapshot_slot *sl, void (*fn)(void *),
    void *arg);
/* Drops the slot's reference to its current snapshot. */
void snapshot_slot_free(struct snapshot_slot *sl);

/*
 * The current snapshot with a reference the caller must release, or NULL
 * when none is loaded. Safe from any thread. Never NULL while one is
 * loaded.
 */
struct snapshot *snapshot_acquire(struct snapshot_slot *sl);

/*
 * Starts a read section on the calling thread and returns the current
 * snapshot, valid until the matching snapshot_leave() on this thread, or
 * NULL when none is loaded (or, when memory runs out the first time this
 * thread reads, NULL as well: a caller answers 503, never from nothing).
 * Call snapshot_leave() after either. Sections nest (the outermost one
 * counts). Costs one store to the thread's own cache line and a fence.
 * Inside a section: never block for long (a reload waits for it to end)
 * and never swap (that would wait for itself).
 */
struct snapshot *snapshot_enter(struct snapshot_slot *sl);

/* Ends the innermost read section of the calling thread. Can't fail. */
void snapshot_leave(void);

/*
 * Installs s as current, taking over the caller's reference, waits until
 * no read section can still see the previous one, and drops the slot's
 * reference to it (freed now, or by its last holder's release). s may be
 * NULL to empty the slot. Safe from any thread outside a read section;
 * returns once the old snapshot is out of every section.
 */
void snapshot_swap(struct snapshot_slot *sl, struct snapshot *s);

/*
 * The same read sections for other data published through an atomic
 * pointer (svc/live.c): snapshot_read_enter starts one on the calling
 * thread (false when memory ran out: the thread could not register, and
 * must read another way; snapshot_leave is still safe), and
 * snapshot_synchronize waits until every section entered before the
 * call has ended. The rules of snapshot_enter and snapshot_swap hold.
 */
bool snapshot_read_enter(void);
void snapshot_synchronize(void);

/* How many snapshots have been freed so far (tests: exactly once each). */
uint64_t snapshot_freed_count(void);

#endif
