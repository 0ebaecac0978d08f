/* snapshot.c - the filter in service: read without a shared write, swapped on reload */
#include <assert.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perthread.h"
#include "snapshot.h"
#include "util.h"

static _Atomic uint64_t freed;

/*
 * Read sections (snapshot_enter). Each thread has a reader record of its
 * own; epoch is the value of the global epoch when it entered its
 * outermost section, 0 outside. A swap publishes the new pointer, then
 * moves the global epoch on to E and waits until no record holds a
 * nonzero epoch below E.
 *
 * Why that is enough (every access below is sequentially consistent):
 * a reader stores its epoch, then loads the pointer; a swapper stores
 * the pointer, then increments the epoch, then loads each record. If a
 * reader loaded the old pointer, its load came before the swapper's
 * store in the single total order, so its epoch store came before the
 * swapper's loads (which therefore see it, or something later from that
 * thread) and its load of the global epoch came before the increment
 * (so the epoch it holds is below E). The swapper waits for that
 * section to end. A section entered after the increment holds E or more
 * and is not waited for: it can only have loaded the new pointer.
 */
struct reader {
	_Atomic uint64_t epoch;
	unsigned	 nest;		/* only the owner reads or writes it */
};

static struct perthread readers = PERTHREAD_INIT(sizeof(struct reader));
static _Thread_local struct reader *me;
static _Atomic uint64_t epoch_now = 1;

/* Waits until every read section entered before this call has ended. */
static void
grace_period(void)
{
	struct timespec ts = { 0, 20 * 1000 };
	struct reader *r;
	uint64_t target, e;
	unsigned spins;

	/* A section that swaps would wait for itself forever. */
	assert(me == NULL || me->nest == 0);
	target = atomic_fetch_add(&epoch_now, 1) + 1;
	for (r = perthread_first(&readers); r != NULL;
	    r = perthread_next(r)) {
		for (spins = 0; (e = atomic_load(&r->epoch)) != 0 &&
		    e < target; spins++) {
			if (spins < 100)
				sched_yield();
			else
				nanosleep(&ts, NULL);
		}
	}
}

static void
http_date(char *out, size_t cap, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
		out[0] = '\0';
}

struct snapshot *
snapshot_new(struct ffile *ff, struct table *tab, int64_t now)
{
	struct snapshot *s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		ffile_close(ff);
		if (tab != NULL)
			table_close(tab);
		return NULL;
	}
	s->ff = ff;
	s->tab = tab;
	s->info_eff = *ffile_info(ff);
	s->info = &s->info_eff;
	s->pos.base_version = s->info->version;
	memcpy(s->pos.base_sha256, ffile_sha256(ff), 32);
	memcpy(s->pos.last_sha256, s->pos.base_sha256, 32);
	s->version = s->info->version;
	s->loaded_at = now;
	util_hex(s->sha_hex, ffile_sha256(ff), 32);
	util_hex(s->signer_hex, s->info->signer, SIGN_KEYID_LEN);
	s->etag[0] = '"';
	memcpy(s->etag + 1, s->sha_hex, 64);
	s->etag[65] = '"';
	s->etag[66] = '\0';
	http_date(s->last_modified, sizeof(s->last_modified),
	    s->info->issued_at);
	s->fill_ratio = bloom_fill_ratio(ffile_bloom(ff));
	s->estimated_fp = bloom_estimated_fp(ffile_bloom(ff));
	atomic_init(&s->refs, 1);
	return s;
}

struct snapshot *
snapshot_with_chain(struct snapshot *cur, struct snapshot_chain *ch,
    int64_t now)
{
	struct snapshot *s, *owner = cur->parent != NULL ? cur->parent : cur;

	if ((s = malloc(sizeof(*s))) == NULL) {
		overlay_free(ch->ov);
		ch->ov = NULL;
		chainbuf_release(ch->chain);
		ch->chain = NULL;
		return NULL;
	}
	memcpy(s, cur, sizeof(*s));
	s->info = &s->info_eff;
	s->parent = snapshot_ref(owner);
	s->ov = ch->ov;
	ch->ov = NULL;
	s->chain = ch->chain;
	ch->chain = NULL;
	s->chain_over = ch->chain_over;
	s->pos = ch->pos;
	s->info_eff.issued_at = ch->issued_at;
	s->info_eff.expires_at = ch->expires_at;
	s->last_delta_at = ch->last_delta_at;
	s->last_change_at = ch->last_change_at;
	if (ch->chain_dir != NULL)
		snprintf(s->chain_dir, sizeof(s->chain_dir), "%s",
		    ch->chain_dir);
	if (ch->pos.seq != cur->pos.seq)
		s->applied_at = now;
	atomic_init(&s->refs, 1);
	return s;
}

void
snapshot_add_chain_signer(struct snapshot *s,
    const unsigned char signer[SIGN_KEYID_LEN])
{
	unsigned i;

	for (i = 0; i < s->nchain_signers; i++)
		if (memcmp(s->chain_signers[i], signer, SIGN_KEYID_LEN) == 0)
			return;
	if (s->nchain_signers == SNAPSHOT_CHAIN_SIGNERS) {
		s->chain_signers_lost = true;
		return;
	}
	memcpy(s->chain_signers[s->nchain_signers++], signer,
	    SIGN_KEYID_LEN);
}

enum stale_reason
snapshot_stale(const struct snapshot *s, const struct stale_policy *p,
    int64_t now, struct snapshot_slot *sl)
{
	enum stale_reason r;
	int64_t at;

	r = stale_check(s->info, p, now, sl == NULL ? 0 :
	    atomic_load_explicit(&sl->newer_seen_at, memory_order_relaxed));
	if (r == STALE_FRESH && s->pos.seq < s->chain_need)
		r = STALE_CHAIN_BEHIND;
	if (r != STALE_FRESH || sl == NULL || p->max_lag <= 0)
		return r;
	at = atomic_load_explicit(&sl->chain_seen_at, memory_order_acquire);
	if (at > 0 && now >= at && now - at >= p->max_lag &&
	    atomic_load(&sl->chain_seen_base) == s->version &&
	    s->pos.seq < atomic_load(&sl->chain_seen_seq))
		r = STALE_CHAIN_LAG;
	return r;
}

void
snapshot_slot_chain_seen(struct snapshot_slot *sl, uint64_t base,
    uint64_t seq, int64_t now)
{
	if (now <= 0)
		now = 1;
	if (atomic_load(&sl->chain_seen_at) != 0 &&
	    atomic_load(&sl->chain_seen_base) == base) {
		if (seq > atomic_load(&sl->chain_top_seq)) {
			atomic_store(&sl->chain_top_seq, seq);
			atomic_store(&sl->chain_top_at, now);
		}
		return;
	}
	/* Another base's clock, or none: this one starts now. */
	atomic_store(&sl->chain_seen_at, 0);
	atomic_store(&sl->chain_seen_base, base);
	atomic_store(&sl->chain_seen_seq, seq);
	atomic_store(&sl->chain_top_seq, seq);
	atomic_store(&sl->chain_top_at, now);
	atomic_store_explicit(&sl->chain_seen_at, now, memory_order_release);
}

void
snapshot_slot_chain_reached(struct snapshot_slot *sl, uint64_t base,
    uint64_t seq)
{
	bool same;

	if (atomic_load(&sl->chain_seen_at) == 0)
		return;
	same = base != 0 && atomic_load(&sl->chain_seen_base) == base;
	if (same && seq < atomic_load(&sl->chain_seen_seq))
		return;
	if (same && seq < atomic_load(&sl->chain_top_seq)) {
		/*
		 * The delta the clock ran for is in; a later one named
		 * since is not: the clock runs from when it was named. The
		 * time first, so that a reader never pairs the old time
		 * with the new seq.
		 */
		atomic_store(&sl->chain_seen_at, atomic_load(&sl->chain_top_at));
		atomic_store(&sl->chain_seen_seq, atomic_load(&sl->chain_top_seq));
		return;
	}
	atomic_store(&sl->chain_seen_at, 0);
	atomic_store(&sl->chain_seen_seq, 0);
	atomic_store(&sl->chain_seen_base, 0);
	atomic_store(&sl->chain_top_seq, 0);
	atomic_store(&sl->chain_top_at, 0);
}

struct snapshot *
snapshot_ref(struct snapshot *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void
snapshot_release(struct snapshot *s)
{
	if (s == NULL)
		return;
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	overlay_free(s->ov);
	chainbuf_release(s->chain);
	if (s->parent != NULL) {
		snapshot_release(s->parent);
	} else {
		ffile_close(s->ff);
		if (s->tab != NULL)
			table_close(s->tab);
	}
	free(s);
	atomic_fetch_add(&freed, 1);
}

void
snapshot_slot_init(struct snapshot_slot *sl)
{
	pthread_mutex_init(&sl->mu, NULL);
	atomic_init(&sl->cur, NULL);
	atomic_init(&sl->newer_seen_at, 0);
	atomic_init(&sl->chain_seen_at, 0);
	atomic_init(&sl->chain_seen_base, 0);
	atomic_init(&sl->chain_seen_seq, 0);
	atomic_init(&sl->chain_top_seq, 0);
	atomic_init(&sl->chain_top_at, 0);
	sl->on_swap = NULL;
	sl->on_swap_arg = NULL;
}

void
snapshot_slot_free(struct snapshot_slot *sl)
{
	snapshot_swap(sl, NULL);
	pthread_mutex_destroy(&sl->mu);
}

struct snapshot *
snapshot_enter(struct snapshot_slot *sl)
{
	struct reader *r = me;

	if (r == NULL && (r = perthread_get(&readers, (void **)&me)) == NULL)
		return NULL;
	if (r->nest++ == 0)
		atomic_store(&r->epoch, atomic_load(&epoch_now));
	return atomic_load(&sl->cur);
}

void
snapshot_leave(void)
{
	struct reader *r = me;

	/* A section whose enter found no record is a no-op to leave. */
	if (r == NULL || r->nest == 0)
		return;
	if (--r->nest == 0)
		atomic_store_explicit(&r->epoch, 0, memory_order_release);
}

/*
 * In a read section, the slot's own reference keeps the snapshot alive
 * until the section ends, so counting in cannot race with the free. A
 * thread without a reader record takes the slot's lock instead, which a
 * swap holds while it replaces the pointer.
 */
struct snapshot *
snapshot_acquire(struct snapshot_slot *sl)
{
	struct snapshot *s;

	if (me != NULL || perthread_get(&readers, (void **)&me) != NULL) {
		if ((s = snapshot_enter(sl)) != NULL)
			snapshot_ref(s);
		snapshot_leave();
		return s;
	}
	pthread_mutex_lock(&sl->mu);
	if ((s = atomic_load(&sl->cur)) != NULL)
		snapshot_ref(s);
	pthread_mutex_unlock(&sl->mu);
	return s;
}

void
snapshot_slot_on_swap(struct snapshot_slot *sl, void (*fn)(void *),
    void *arg)
{
	pthread_mutex_lock(&sl->mu);
	sl->on_swap = fn;
	sl->on_swap_arg = arg;
	pthread_mutex_unlock(&sl->mu);
}

void
snapshot_swap(struct snapshot_slot *sl, struct snapshot *s)
{
	struct snapshot *old;
	void (*fn)(void *);
	void *arg;

	pthread_mutex_lock(&sl->mu);
	old = atomic_exchange(&sl->cur, s);
	fn = sl->on_swap;
	arg = sl->on_swap_arg;
	pthread_mutex_unlock(&sl->mu);
	/* Waiters learn of the change before the grace period ends. */
	if (fn != NULL)
		fn(arg);
	if (old == NULL)
		return;
	grace_period();
	snapshot_release(old);
}

bool
snapshot_read_enter(void)
{
	struct reader *r = me;

	if (r == NULL && (r = perthread_get(&readers, (void **)&me)) == NULL)
		return false;
	if (r->nest++ == 0)
		atomic_store(&r->epoch, atomic_load(&epoch_now));
	return true;
}

void
snapshot_synchronize(void)
{
	grace_period();
}

uint64_t
snapshot_freed_count(void)
{
	return atomic_load(&freed);
}
