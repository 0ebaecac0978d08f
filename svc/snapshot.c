/* snapshot.c - the filter in service: refcounted, swapped atomically on reload */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snapshot.h"
#include "util.h"

static _Atomic uint64_t freed;

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
		return NULL;
	}
	memcpy(s, cur, sizeof(*s));
	s->info = &s->info_eff;
	s->parent = snapshot_ref(owner);
	s->ov = ch->ov;
	ch->ov = NULL;
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
	sl->cur = NULL;
	atomic_init(&sl->newer_seen_at, 0);
}

void
snapshot_slot_free(struct snapshot_slot *sl)
{
	snapshot_swap(sl, NULL);
	pthread_mutex_destroy(&sl->mu);
}

/*
 * The lock covers only the pointer load and the increment, so a swapper
 * can never free a snapshot between a reader seeing it and counting
 * itself in. It is held for a few instructions.
 */
struct snapshot *
snapshot_acquire(struct snapshot_slot *sl)
{
	struct snapshot *s;

	pthread_mutex_lock(&sl->mu);
	s = sl->cur;
	if (s != NULL)
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&sl->mu);
	return s;
}

void
snapshot_swap(struct snapshot_slot *sl, struct snapshot *s)
{
	struct snapshot *old;

	pthread_mutex_lock(&sl->mu);
	old = sl->cur;
	sl->cur = s;
	pthread_mutex_unlock(&sl->mu);
	snapshot_release(old);
}

uint64_t
snapshot_freed_count(void)
{
	return atomic_load(&freed);
}
