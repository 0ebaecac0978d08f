/* test_live.c - generations of the settings in force: swapped whole, freed once */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "../svc/live.h"
#include "log.h"

#define NGEN	200

static struct live_slot slot;
static _Atomic bool stop;
static _Atomic unsigned long torn, reads;

/* A generation whose every setting names its number. */
static struct live *
gen_of(uint64_t n)
{
	struct config c;
	struct live *lv;
	char err[256];

	config_init(&c);
	c.max_batch = n;
	c.max_age = (int64_t)n;
	c.clock_skew = (int64_t)n;
	lv = live_new(&c, n, 1000 + (int64_t)n, err, sizeof(err));
	cr_assert_not_null(lv, "%s", err);
	config_free(&c);
	return lv;
}

/*
 * A request's view: one generation from enter to leave, whatever swaps
 * meanwhile (ASan sees a use after free, TSan a race, this a mix).
 */
static void *
reader(void *arg)
{
	struct live *lv;
	uint64_t g;

	(void)arg;
	while (!atomic_load(&stop)) {
		if ((lv = live_enter(&slot)) != NULL) {
			g = lv->gen;
			if (lv->cfg.max_batch != g ||
			    lv->policy.max_age != (int64_t)g ||
			    lv->policy.clock_skew != (int64_t)g ||
			    lv->applied_at != 1000 + (int64_t)g)
				atomic_fetch_add(&torn, 1);
			atomic_fetch_add(&reads, 1);
		}
		live_leave();
		if ((lv = live_acquire(&slot)) != NULL) {
			if (lv->cfg.max_batch != lv->gen)
				atomic_fetch_add(&torn, 1);
			live_release(lv);
		}
	}
	return NULL;
}

Test(live, readers_see_one_whole_generation_across_swaps)
{
	pthread_t th[3];
	struct live *lv;
	uint64_t n;
	int i;

	log_init("test_live", LOG_LVL_ERR);
	live_slot_init(&slot);
	live_swap(&slot, gen_of(1));
	for (i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, reader, NULL), 0);
	while (atomic_load(&reads) < 100)
		sched_yield();	/* the readers run before the swaps start */
	for (n = 2; n <= NGEN; n++)
		live_swap(&slot, gen_of(n));
	/* A reference outlives the swap that retires its generation. */
	lv = live_acquire(&slot);
	cr_assert_eq(lv->gen, NGEN);
	live_swap(&slot, gen_of(NGEN + 1));
	cr_assert_eq(lv->cfg.max_batch, NGEN);
	live_release(lv);
	atomic_store(&stop, true);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&torn), 0);
	cr_assert_geq(atomic_load(&reads), 100);
	live_slot_free(&slot);
}

/* A generation fails to build as a whole: a JWKS file that is missing. */
Test(live, a_broken_issuer_builds_nothing)
{
	struct config c;
	char err[512];

	config_init(&c);
	c.issuers[0].issuer = strdup("https://idp.example");
	c.issuers[0].jwks_file = strdup("/nonexistent/idp.jwks");
	c.issuers[0].algs = JWA_BIT(JWA_ES256);
	c.nissuers = 1;
	cr_assert_null(live_new(&c, 2, 0, err, sizeof(err)));
	cr_assert(strstr(err, "idp.example") != NULL &&
	    strstr(err, "/nonexistent/idp.jwks") != NULL, "%s", err);
	config_free(&c);
}
