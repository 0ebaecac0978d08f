/* live.c - the settings in force: one immutable generation, swapped whole on SIGHUP */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "metrics.h"
#include "snapshot.h"

struct live *
live_new(const struct config *c, uint64_t gen, int64_t now, char *err,
    size_t errlen)
{
	struct live *lv;
	char e[1024];

	if ((lv = calloc(1, sizeof(*lv))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (config_copy(&lv->cfg, c, err, errlen) == -1) {
		free(lv);
		return NULL;
	}
	lv->gen = gen;
	lv->applied_at = now;
	lv->policy.max_age = lv->cfg.max_age;
	lv->policy.clock_skew = lv->cfg.clock_skew;
	lv->policy.max_lag = lv->cfg.max_lag;
	if (trust_init(&lv->trust, &lv->cfg, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "issuers: %s", e);
		config_free(&lv->cfg);
		free(lv);
		return NULL;
	}
	if (ocspd_init(&lv->ocsp, &lv->cfg, err, errlen) == -1) {
		trust_free(&lv->trust);
		config_free(&lv->cfg);
		free(lv);
		return NULL;
	}
	atomic_init(&lv->refs, 1);
	return lv;
}

int
live_start(struct live *lv, struct live *prev, char *err, size_t errlen)
{
	trust_inherit(&lv->trust, prev != NULL ? &prev->trust : NULL);
	return trust_start(&lv->trust, err, errlen);
}

struct live *
live_ref(struct live *lv)
{
	atomic_fetch_add_explicit(&lv->refs, 1, memory_order_relaxed);
	return lv;
}

void
live_release(struct live *lv)
{
	if (lv == NULL ||
	    atomic_fetch_sub_explicit(&lv->refs, 1, memory_order_acq_rel) != 1)
		return;
	ocspd_free(&lv->ocsp);
	trust_free(&lv->trust);
	config_free(&lv->cfg);
	free(lv);
}

void
live_slot_init(struct live_slot *sl)
{
	atomic_init(&sl->cur, NULL);
	pthread_mutex_init(&sl->mu, NULL);
	memset(&sl->last, 0, sizeof(sl->last));
}

void
live_slot_free(struct live_slot *sl)
{
	live_swap(sl, NULL);
	pthread_mutex_destroy(&sl->mu);
}

struct live *
live_enter(struct live_slot *sl)
{
	if (!snapshot_read_enter())
		return NULL;
	return atomic_load(&sl->cur);
}

void
live_leave(void)
{
	snapshot_leave();
}

/*
 * In a read section the slot's own reference keeps the generation alive,
 * so counting in cannot race with the free; without a section, the
 * slot's lock, which a swap holds while it replaces the pointer.
 */
struct live *
live_acquire(struct live_slot *sl)
{
	struct live *lv;

	if (snapshot_read_enter()) {
		if ((lv = atomic_load(&sl->cur)) != NULL)
			live_ref(lv);
		snapshot_leave();
		return lv;
	}
	pthread_mutex_lock(&sl->mu);
	if ((lv = atomic_load(&sl->cur)) != NULL)
		live_ref(lv);
	pthread_mutex_unlock(&sl->mu);
	return lv;
}

void
live_swap(struct live_slot *sl, struct live *lv)
{
	struct live *old;

	pthread_mutex_lock(&sl->mu);
	old = atomic_exchange(&sl->cur, lv);
	pthread_mutex_unlock(&sl->mu);
	if (old == NULL)
		return;
	snapshot_synchronize();
	live_release(old);
}

void
live_note_reload(struct live_slot *sl, int64_t when, const char *err)
{
	pthread_mutex_lock(&sl->mu);
	sl->last.time = when;
	sl->last.applied = err == NULL;
	snprintf(sl->last.error, sizeof(sl->last.error), "%s",
	    err != NULL ? err : "");
	pthread_mutex_unlock(&sl->mu);
	metrics_inc(err == NULL ? MET_CONFIG_RELOAD_APPLIED :
	    MET_CONFIG_RELOAD_REFUSED);
}

void
live_last_reload(struct live_slot *sl, struct live_reload *out)
{
	pthread_mutex_lock(&sl->mu);
	*out = sl->last;
	pthread_mutex_unlock(&sl->mu);
}
