/* test_snapshot.c - read sections and swaps: nothing freed while a reader can see it, everything freed once */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "../svc/snapshot.h"
#include "svc_fixture.h"

#define NOW 1700000000

static const struct fx_rec recs[] = {
	{ "default", "tok-revoked", "keyCompromise", 1600000000 },
	{ "default", "tok-other", NULL, 0 },
};

static EVP_PKEY *key;

static struct snapshot *
make_snapshot(uint64_t version)
{
	struct fx_pair p;
	struct ffile *ff;
	struct table *t;
	char err[256];

	if (key == NULL)
		cr_assert_not_null(key = sign_keygen());
	cr_assert_eq(fx_build(key, version, NOW - 10, NOW + 3600, recs, 2,
	    NULL, 0, 4096, 3, &p), 0);
	ff = ffile_parse(p.filter, p.flen, true, err, sizeof(err));
	cr_assert_not_null(ff, "%s", err);
	t = table_parse(p.table, p.tlen, true, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	return snapshot_new(ff, t, NOW);
}

static void
teardown(void)
{
	EVP_PKEY_free(key);
	key = NULL;
}

TestSuite(snapshot, .fini = teardown);

static void
nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A swap run by another thread, so the test thread can hold sections. */
struct swapper {
	struct snapshot_slot *sl;
	struct snapshot	*next;
	_Atomic bool	 done;
	pthread_t	 th;
};

static void *
swap_main(void *p)
{
	struct swapper *w = p;

	snapshot_swap(w->sl, w->next);
	atomic_store(&w->done, true);
	return NULL;
}

static void
swap_start(struct swapper *w, struct snapshot_slot *sl, uint64_t version)
{
	w->sl = sl;
	w->next = make_snapshot(version);
	atomic_init(&w->done, false);
	cr_assert_eq(pthread_create(&w->th, NULL, swap_main, w), 0);
}

/*
 * Until the swap w runs has made its snapshot current (10 s at most): from
 * then on it waits for the sections that saw the old one. A fixed nap
 * instead could end before a busy machine ran the thread at all.
 */
static void
swap_wait_current(struct swapper *w)
{
	int i;

	for (i = 0; i < 10000 && atomic_load(&w->sl->cur) != w->next; i++)
		nap_ms(1);
	cr_assert_eq(atomic_load(&w->sl->cur), w->next,
	    "the swap did not make its snapshot current");
}

Test(snapshot, swap_waits_for_the_section_that_saw_the_old_one)
{
	struct snapshot_slot sl;
	struct snapshot *s;
	struct swapper w;
	uint64_t freed;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1));
	freed = snapshot_freed_count();
	cr_assert_not_null(s = snapshot_enter(&sl));
	cr_assert_eq(s->version, 1);
	swap_start(&w, &sl, 2);
	swap_wait_current(&w);
	nap_ms(200);	/* a window for a swap that does not wait to end */
	/* The new one is current, the old one still whole. */
	cr_assert(!atomic_load(&w.done), "the swap did not wait");
	cr_assert_eq(snapshot_freed_count(), freed);
	cr_assert_eq(s->version, 1);
	cr_assert_eq(ffile_info(s->ff)->version, 1);
	snapshot_leave();
	pthread_join(w.th, NULL);
	cr_assert(atomic_load(&w.done));
	cr_assert_eq(snapshot_freed_count(), freed + 1);
	cr_assert_eq((s = snapshot_enter(&sl))->version, 2);
	snapshot_leave();
	snapshot_slot_free(&sl);
	cr_assert_eq(snapshot_freed_count(), freed + 2);
}

/* A reader that enters after the swap began sees the new one and is not waited for. */
struct late_reader {
	struct snapshot_slot *sl;
	_Atomic int	 stage;		/* 1 in its section, 2 told to leave */
	uint64_t	 version;
	pthread_t	 th;
};

static void *
late_main(void *p)
{
	struct late_reader *r = p;
	struct snapshot *s = snapshot_enter(r->sl);

	r->version = s != NULL ? s->version : 0;
	atomic_store(&r->stage, 1);
	while (atomic_load(&r->stage) != 2)
		nap_ms(1);
	snapshot_leave();
	return NULL;
}

Test(snapshot, later_sections_do_not_hold_back_a_swap)
{
	struct snapshot_slot sl;
	struct late_reader r;
	struct swapper w;
	uint64_t freed;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1));
	freed = snapshot_freed_count();
	cr_assert_not_null(snapshot_enter(&sl));
	swap_start(&w, &sl, 2);
	swap_wait_current(&w);
	nap_ms(100);	/* a window for a swap that does not wait to end */
	cr_assert(!atomic_load(&w.done));
	/* Entered while the swap waits: it holds the new snapshot. */
	r.sl = &sl;
	atomic_init(&r.stage, 0);
	cr_assert_eq(pthread_create(&r.th, NULL, late_main, &r), 0);
	while (atomic_load(&r.stage) != 1)
		nap_ms(1);
	cr_assert_eq(r.version, 2);
	snapshot_leave();
	/* Only the first section was waited for: done while r still reads. */
	pthread_join(w.th, NULL);
	cr_assert_eq(snapshot_freed_count(), freed + 1);
	atomic_store(&r.stage, 2);
	pthread_join(r.th, NULL);
	snapshot_slot_free(&sl);
}

Test(snapshot, nested_sections_end_with_the_outermost)
{
	struct snapshot_slot sl;
	struct snapshot *outer, *inner;
	struct swapper w;
	uint64_t freed;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1));
	freed = snapshot_freed_count();
	outer = snapshot_enter(&sl);
	inner = snapshot_enter(&sl);
	cr_assert_eq(outer, inner);
	swap_start(&w, &sl, 2);
	snapshot_leave();
	swap_wait_current(&w);
	nap_ms(150);	/* a window for a swap the inner leave would end */
	cr_assert(!atomic_load(&w.done), "the inner leave ended the section");
	cr_assert_eq(snapshot_freed_count(), freed);
	cr_assert_eq(outer->version, 1);
	snapshot_leave();
	pthread_join(w.th, NULL);
	cr_assert_eq(snapshot_freed_count(), freed + 1);
	snapshot_slot_free(&sl);
}

/*
 * The slow path: a request kept past its section (suspended on an edge)
 * takes a reference inside it, and the snapshot outlives the swap until
 * that reference goes.
 */
Test(snapshot, reference_taken_in_a_section_outlives_the_swap)
{
	struct snapshot_slot sl;
	struct snapshot *s;
	uint64_t freed;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1));
	freed = snapshot_freed_count();
	s = snapshot_ref(snapshot_enter(&sl));
	snapshot_leave();
	snapshot_swap(&sl, make_snapshot(2));
	cr_assert_eq(snapshot_freed_count(), freed, "freed while referenced");
	cr_assert_eq(s->version, 1);
	cr_assert_eq(ffile_info(s->ff)->version, 1);
	snapshot_release(s);
	cr_assert_eq(snapshot_freed_count(), freed + 1);
	snapshot_slot_free(&sl);
	cr_assert_eq(snapshot_freed_count(), freed + 2);
}

Test(snapshot, empty_slot_reads_null)
{
	struct snapshot_slot sl;

	snapshot_slot_init(&sl);
	cr_assert_null(snapshot_enter(&sl));
	snapshot_leave();
	cr_assert_null(snapshot_acquire(&sl));
	snapshot_swap(&sl, NULL);
	snapshot_slot_free(&sl);
}

/* Threads that read once and exit: their records must not hold back swaps. */
static void *
read_once(void *p)
{
	struct snapshot *s = snapshot_enter(p);

	snapshot_leave();
	return s;
}

Test(snapshot, exited_and_idle_threads_do_not_hold_back_a_swap)
{
	struct snapshot_slot sl;
	pthread_t th;
	uint64_t freed;
	void *seen;
	int i;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1));
	freed = snapshot_freed_count();
	for (i = 0; i < 64; i++) {
		cr_assert_eq(pthread_create(&th, NULL, read_once, &sl), 0);
		pthread_join(th, &seen);
		cr_assert_not_null(seen);
	}
	/* This thread read too and is idle now. */
	(void)snapshot_enter(&sl);
	snapshot_leave();
	snapshot_swap(&sl, make_snapshot(2));
	cr_assert_eq(snapshot_freed_count(), freed + 1);
	snapshot_slot_free(&sl);
}

/*
 * The stress case, run under ASan and TSan as well: readers in sections
 * use each snapshot's filter and table while another thread swaps in a
 * new one again and again. A snapshot freed while a section can still
 * see it is a use-after-free the sanitizers report; without them the
 * version each reader sees must never go down and every snapshot is
 * freed exactly once.
 */
struct stress_reader {
	struct snapshot_slot *sl;
	_Atomic bool	*stop;
	uint64_t	 last;
	unsigned long	 reads;
	bool		 went_down;
	bool		 wrong;
};

static void *
stress_main(void *p)
{
	struct stress_reader *a = p;
	struct table_rec rec;
	struct revkey k;
	struct snapshot *s;

	if (revkey_set(&k, "default", "tok-revoked", 11) == -1)
		a->wrong = true;
	while (!atomic_load(a->stop)) {
		if ((s = snapshot_enter(a->sl)) != NULL) {
			if (s->version < a->last)
				a->went_down = true;
			a->last = s->version;
			if (ffile_info(s->ff)->version != s->version ||
			    !ffile_query(s->ff, &k) ||
			    table_lookup(s->tab, &k, &rec) != 1)
				a->wrong = true;
			a->reads++;
		}
		snapshot_leave();
	}
	return NULL;
}

Test(snapshot, swaps_under_readers_free_each_exactly_once, .timeout = 60)
{
	struct snapshot_slot sl;
	struct stress_reader ra[4];
	struct snapshot *next[61];
	pthread_t th[4];
	_Atomic bool stop = false;
	uint64_t freed;
	int i;

	/* Built first, so the readers overlap the swaps, not the signing. */
	for (i = 1; i <= 60; i++)
		next[i] = make_snapshot((uint64_t)i);
	snapshot_slot_init(&sl);
	snapshot_swap(&sl, next[1]);
	freed = snapshot_freed_count();
	for (i = 0; i < 4; i++) {
		ra[i] = (struct stress_reader){ &sl, &stop, 0, 0, false,
		    false };
		cr_assert_eq(pthread_create(&th[i], NULL, stress_main,
		    &ra[i]), 0);
	}
	for (i = 2; i <= 60; i++) {
		snapshot_swap(&sl, next[i]);
		nap_ms(1);
	}
	atomic_store(&stop, true);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert(!ra[i].went_down, "reader %d went back", i);
		cr_assert(!ra[i].wrong, "reader %d read a bad snapshot", i);
		cr_assert(ra[i].reads > 0);
	}
	cr_assert_eq(snapshot_freed_count() - freed, 59);
	snapshot_slot_free(&sl);
	cr_assert_eq(snapshot_freed_count() - freed, 60);
}

/* snapshot_stale of the slot's current snapshot at now, max_lag 60. */
static enum stale_reason
lag_at(struct snapshot_slot *sl, int64_t now)
{
	struct stale_policy p = { 0, 300, 60 };
	struct snapshot *s = snapshot_acquire(sl);
	enum stale_reason r;

	cr_assert_not_null(s);
	r = snapshot_stale(s, &p, now, sl);
	snapshot_release(s);
	return r;
}

/* The slot's snapshot with its chain at seq (a fresh chain snapshot). */
static void
chain_to(struct snapshot_slot *sl, uint64_t seq)
{
	struct snapshot_chain ch;
	struct snapshot *cur = snapshot_acquire(sl), *ns;

	memset(&ch, 0, sizeof(ch));
	ch.pos = cur->pos;
	ch.pos.seq = seq;
	ch.issued_at = cur->info->issued_at;
	ch.expires_at = cur->info->expires_at;
	cr_assert_not_null(ns = snapshot_with_chain(cur, &ch, NOW));
	snapshot_release(cur);
	snapshot_swap(sl, ns);
	snapshot_slot_chain_reached(sl, ns->version, seq);
}

/*
 * The chain's lag clock: stale (chain_lag) max_lag after a verified head
 * named a delta the chain does not reach (naming it again does not
 * restart it); moved on to when a later delta was named once the chain
 * reaches the first; stopped when it reaches everything named, or
 * another base comes.
 */
Test(snapshot, chain_lag_clock)
{
	struct snapshot_slot sl;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(7));
	cr_assert_eq(lag_at(&sl, NOW + 100), STALE_FRESH);

	snapshot_slot_chain_seen(&sl, 7, 3, NOW);
	cr_assert_eq(lag_at(&sl, NOW + 59), STALE_FRESH, "within max_lag");
	cr_assert_eq(lag_at(&sl, NOW + 60), STALE_CHAIN_LAG);

	/* 3 named at NOW, 5 at NOW + 40 (4 later: no news). */
	snapshot_slot_chain_seen(&sl, 7, 3, NOW + 30);
	snapshot_slot_chain_seen(&sl, 7, 5, NOW + 40);
	snapshot_slot_chain_seen(&sl, 7, 4, NOW + 45);
	cr_assert_eq(atomic_load(&sl.chain_top_seq), 5);
	chain_to(&sl, 2);
	cr_assert_eq(lag_at(&sl, NOW + 60), STALE_CHAIN_LAG, "2 < 3");
	chain_to(&sl, 3);
	cr_assert_eq(lag_at(&sl, NOW + 60), STALE_FRESH,
	    "3 in: the clock runs from when 5 was named");
	cr_assert_eq(lag_at(&sl, NOW + 100), STALE_CHAIN_LAG, "5 not in");
	chain_to(&sl, 5);
	cr_assert_eq(lag_at(&sl, NOW + 1000), STALE_FRESH, "caught up");
	cr_assert_eq(atomic_load(&sl.chain_seen_at), 0, "clock stopped");

	/* A new base stops the clock of the old one. */
	snapshot_slot_chain_seen(&sl, 7, 9, NOW);
	snapshot_slot_chain_reached(&sl, 8, 0);
	cr_assert_eq(atomic_load(&sl.chain_seen_at), 0);
	snapshot_slot_free(&sl);
}
