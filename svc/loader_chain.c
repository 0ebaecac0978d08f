/* loader_chain.c - the delta chain applied over the base in service */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"
#include "loader_int.h"
#include "log.h"
#include "metrics.h"
#include "util.h"

struct chain_walk {
	struct overlay	*ov;
	int64_t		 issued_at;
	int64_t		 expires_at;
	int64_t		 last_change_at;
	int64_t		 last_delta_at;
	uint64_t	 applied;
	/* Who signed the deltas applied, for loader_set_keys. */
	unsigned char	 signers[SNAPSHOT_CHAIN_SIGNERS][SIGN_KEYID_LEN];
	unsigned	 nsigners;
	bool		 signers_lost;
	/* The verified files, for /v1/delta (origin); NULL: not held. */
	struct chainbuf	*cb;
	uint64_t	 cb_max;
	bool		 cb_over;
};

static void
walk_signer(struct chain_walk *w, const unsigned char id[SIGN_KEYID_LEN])
{
	unsigned i;

	for (i = 0; i < w->nsigners; i++)
		if (memcmp(w->signers[i], id, SIGN_KEYID_LEN) == 0)
			return;
	if (w->nsigners == SNAPSHOT_CHAIN_SIGNERS)
		w->signers_lost = true;
	else
		memcpy(w->signers[w->nsigners++], id, SIGN_KEYID_LEN);
}

/* Keeps d's verified bytes for /v1/delta; past the bound, none. */
static void
chain_hold(struct chain_walk *w, const struct delta *d)
{
	const unsigned char *p;
	size_t len;

	if (w->cb == NULL)
		return;
	p = delta_bytes(d, &len);
	if ((delta_info(d)->kind == DELTA_KIND_HEAD ?
	    chainbuf_set_head(w->cb, p, len, w->cb_max) :
	    chainbuf_add(w->cb, p, len, w->cb_max)) == -1) {
		chainbuf_release(w->cb);
		w->cb = NULL;
		w->cb_over = true;
	}
}

/*
 * An origin holds its chain's verified files for /v1/delta: the deltas
 * of cur's chain (shared) and what this walk adds. Not held when cur's
 * were not (over the bound) or memory runs out: /v1/delta answers 503.
 */
static void
chain_hold_begin(struct chain_walk *w, const struct snapshot *cur,
    uint64_t max)
{
	w->cb_max = max;
	if (cur->pos.seq == 0)
		w->cb = chainbuf_begin(NULL);
	else if (cur->chain != NULL &&
	    chainbuf_deltas(cur->chain) == cur->pos.seq)
		w->cb = chainbuf_begin(cur->chain);
	w->cb_over = w->cb == NULL;
}

/* delta_chain_walk's callback: one verified, linked delta into the clone. */
static int
chain_apply(void *arg, const struct delta *d)
{
	struct chain_walk *w = arg;
	const struct delta_info *in = delta_info(d);

	if (overlay_apply(w->ov, d) != 0)
		return -1;
	w->issued_at = in->issued_at;
	w->expires_at = in->expires_at;
	w->last_delta_at = in->issued_at;
	if (in->changed_at != 0)
		w->last_change_at = in->changed_at;
	walk_signer(w, in->signer);
	w->applied++;
	chain_hold(w, d);
	return 0;
}

/* Logs and counts a chain refusal once per distinct message. */
static void
chain_refused(struct loader *l, const char *why)
{
	if (strcmp(l->chain_err, why) == 0)
		return;
	loader_copy_str(l->chain_err, sizeof(l->chain_err), why);
	metrics_inc(MET_DELTA_REFUSED);
	log_warn("delta chain refused: %s", why);
}

static bool
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * True when the chain may have changed since the last poll: a next delta
 * or head file that was not there, or is another file now. Cheap: two
 * stat calls, so an origin can look five times a second.
 */
static bool
chain_changed(struct loader *l, const char *ddir, const struct snapshot *s)
{
	char p[PATH_MAX + 32], name[DELTA_NAME_LEN + 1];
	struct stat hst, nst;
	bool changed;

	delta_file_name(name, s->pos.seq + 1);
	if (util_path_join(p, sizeof(p), ddir, DELTA_HEAD_NAME) != 0 ||
	    stat(p, &hst) == -1)
		memset(&hst, 0, sizeof(hst));
	if (util_path_join(p, sizeof(p), ddir, name) != 0 ||
	    stat(p, &nst) == -1)
		memset(&nst, 0, sizeof(nst));
	changed = l->chain_seq != s->pos.seq ||
	    l->chain_base != s->pos.base_version ||
	    !same_file(&hst, &l->chain_head_st) ||
	    !same_file(&nst, &l->chain_next_st);
	l->chain_head_st = hst;
	l->chain_next_st = nst;
	l->chain_seq = s->pos.seq;
	l->chain_base = s->pos.base_version;
	return changed;
}

/* An origin's chain directory, and whose files it may hold. */
struct chain_src {
	const struct loader *l;
	const char	*ddir;
};

/*
 * delta_src_dir with the checks of the filter and table: each delta and
 * the head are read from a regular file (opened without blocking), owned
 * by root, the daemon's user or filter_owner and writable by neither group
 * nor others, checked on the descriptor that was read.
 */
static int
chain_src_dir(void *arg, uint64_t seq, unsigned char **buf, size_t *len,
    char *err, size_t errlen)
{
	const struct chain_src *cs = arg;
	char path[PATH_MAX + 64], name[DELTA_NAME_LEN + 1];
	struct stat st;
	int n;

	if (seq == DELTA_SEQ_HEAD)
		n = snprintf(path, sizeof(path), "%s/" DELTA_HEAD_NAME,
		    cs->ddir);
	else {
		delta_file_name(name, seq);
		n = snprintf(path, sizeof(path), "%s/%s", cs->ddir, name);
	}
	if (n < 0 || (size_t)n >= sizeof(path)) {
		snprintf(err, errlen, "%.400s: path too long", cs->ddir);
		return -1;
	}
	if (access(path, F_OK) != 0)
		return 0;
	if (util_read_file_st(path, (size_t)DELTA_MAX_SIZE, buf, len, &st,
	    err, errlen) != 0)
		return -1;
	if (loader_owner_ok(cs->l, path, &st, err, errlen) == -1) {
		free(*buf);
		*buf = NULL;
		*len = 0;
		return -1;
	}
	return 1;
}

int
loader_poll_chain(struct loader *l, struct snapshot_slot *sl)
{
	struct chain_src cs;
	char ddir[PATH_MAX];
	struct snapshot *s;
	const char *slash;
	bool go;

	if (l->filter_dir[0] == '\0')
		return 1;
	pthread_mutex_lock(&l->load_mu);
	s = snapshot_acquire(sl);
	go = s != NULL && l->serving_filter[0] != '\0' &&
	    (slash = strrchr(l->serving_filter, '/')) != NULL &&
	    snprintf(ddir, sizeof(ddir), "%.*s/" DELTA_DIR,
	    (int)(slash - l->serving_filter), l->serving_filter) <
	    (int)sizeof(ddir) && chain_changed(l, ddir, s);
	if (go)
		loader_copy_str(l->chain_dir, sizeof(l->chain_dir), ddir);
	snapshot_release(s);
	pthread_mutex_unlock(&l->load_mu);
	cs.l = l;
	cs.ddir = ddir;
	return go ? loader_apply_chain(l, sl, chain_src_dir, &cs, ddir) : 1;
}

/*
 * Persists seq as the chain position served on s's base, before a
 * snapshot holding it is swapped in (load_mu held): after a restart the
 * base must not answer alone while it lacks those deltas. 0, or -1 with
 * err; nothing is written when the state already says seq or more.
 */
static int
chain_persist(struct loader *l, const struct snapshot *s, uint64_t seq,
    char *err, size_t errlen)
{
	struct loader_hwm next[LOADER_MAX_SIGNERS];
	size_t i, n = l->nhwm;
	char e[256];

	for (i = 0; i < n; i++)
		if (memcmp(l->hwm[i].signer, s->info->signer,
		    SIGN_KEYID_LEN) == 0 && memcmp(l->hwm[i].sha256,
		    s->pos.base_sha256, 32) == 0)
			break;
	if (i == n) {
		snprintf(err, errlen, "the rollback state no longer names "
		    "base version %llu (a newer base was accepted)",
		    (unsigned long long)s->pos.base_version);
		return -1;
	}
	if (l->hwm[i].delta_seq >= seq)
		return 0;
	memcpy(next, l->hwm, n * sizeof(next[0]));
	next[i].delta_seq = seq;
	if (loader_state_write(l, next, n, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "cannot persist the chain position "
		    "(delta %llu) in the rollback state: %.200s",
		    (unsigned long long)seq, e);
		return -1;
	}
	pthread_mutex_lock(&l->ev_mu);
	l->hwm[i].delta_seq = seq;
	pthread_mutex_unlock(&l->ev_mu);
	return 0;
}

/*
 * The delta seq a head in src names when it is above pos on pos's base
 * and verifies against the trusted keys, else 0: only signed evidence
 * of deltas on this base moves the chain's lag clock (an unsigned or
 * badly signed head, or one of another base, moves nothing).
 */
static uint64_t
head_ahead(struct loader *l, delta_src_fn src, void *src_arg,
    const struct delta_pos *pos)
{
	const struct delta_info *in;
	struct delta *d;
	unsigned char *buf = NULL;
	size_t len = 0;
	uint64_t seq = 0;
	char e[512];

	if (src(src_arg, DELTA_SEQ_HEAD, &buf, &len, e, sizeof(e)) != 1) {
		free(buf);
		return 0;
	}
	d = delta_parse(buf, len, e, sizeof(e));
	free(buf);
	if (d == NULL)
		return 0;
	in = delta_info(d);
	if (in->kind == DELTA_KIND_HEAD && in->seq > pos->seq &&
	    in->base_version == pos->base_version &&
	    memcmp(in->base_sha256, pos->base_sha256, 32) == 0 &&
	    delta_verify(d, &l->ring, e, sizeof(e)) == 0)
		seq = in->seq;
	delta_free(d);
	return seq;
}

/*
 * The walk's start from the snapshot s serves: its position, a copy of its
 * overlay, its times, and the chain's files held for /v1/delta (from a
 * directory, or fetched from where: an edge serves the chain it applied
 * to the edges below it). 0, or -1 (refusal recorded) when there is no
 * overlay.
 */
static int
chain_walk_begin(struct loader *l, struct snapshot *s, delta_src_fn src,
    void *src_arg, const char *where, struct chain_walk *w,
    struct snapshot_chain *ch)
{
	memset(w, 0, sizeof(*w));
	memset(ch, 0, sizeof(*ch));
	ch->pos = s->pos;
	w->ov = s->ov != NULL ? overlay_clone(s->ov) : overlay_new();
	if (w->ov == NULL) {
		chain_refused(l, "cannot make the delta overlay: out of memory, "
		    "or no random seed for it");
		return -1;
	}
	w->issued_at = s->info->issued_at;
	w->expires_at = s->info->expires_at;
	w->last_change_at = s->last_change_at;
	if (src == delta_src_dir)
		ch->chain_dir = src_arg;
	else if (src == chain_src_dir)
		ch->chain_dir = ((const struct chain_src *)src_arg)->ddir;
	else
		ch->chain_dir = where;
	if (ch->chain_dir != NULL)
		chain_hold_begin(w, s, l->chain_max);
	return 0;
}

int
loader_apply_chain(struct loader *l, struct snapshot_slot *sl,
    delta_src_fn src, void *src_arg, const char *where)
{
	char e[600];
	struct snapshot_chain ch;
	struct chain_walk w;
	struct snapshot *s, *ns;
	struct delta *head = NULL;
	uint64_t head_seq, ahead = 0;
	unsigned i;
	bool head_used = false;
	int rc = 1;

	pthread_mutex_lock(&l->load_mu);
	if ((s = snapshot_acquire(sl)) == NULL)
		goto out;
	if (chain_walk_begin(l, s, src, src_arg, where, &w, &ch) == -1) {
		rc = -1;
		goto out;
	}
	if (delta_chain_walk_src(src, src_arg, where, &l->ring, &ch.pos,
	    chain_apply, &w, &head, &head_seq, e, sizeof(e)) != 0) {
		/* What linked before the bad file is still applied. */
		chain_refused(l, e);
		rc = -1;
	} else if (head_seq != UINT64_MAX && head_seq > ch.pos.seq) {
		snprintf(e, sizeof(e), "%.400s: the head names delta %llu, only "
		    "%llu are there (a gap is never crossed)", where,
		    (unsigned long long)head_seq,
		    (unsigned long long)ch.pos.seq);
		chain_refused(l, e);
	} else {
		l->chain_err[0] = '\0';
	}
	/*
	 * A verified head of this base names deltas the walk could not
	 * apply (withheld, cut off, bad): the node knows of changes it
	 * lacks, and the lag clock runs until the chain reaches that seq.
	 */
	if (rc == -1 || (head_seq != UINT64_MAX && head_seq > ch.pos.seq))
		ahead = head_ahead(l, src, src_arg, &ch.pos);
	if (ahead > 0)
		snapshot_slot_chain_seen(sl, ch.pos.base_version, ahead,
		    util_now());
	/* A head extends freshness, never shortens it (no rollback). */
	if (head != NULL && delta_info(head)->issued_at >= w.issued_at) {
		w.issued_at = delta_info(head)->issued_at;
		w.expires_at = delta_info(head)->expires_at;
		head_used = true;
	}
	if (w.applied == 0 && w.issued_at == s->info->issued_at) {
		overlay_free(w.ov);
		chainbuf_release(w.cb);
		goto out;
	}
	if (head != NULL)
		chain_hold(&w, head);
	if (w.cb_over && !s->chain_over)
		log_warn("%.400s: the chain's files come to more than "
		    "delta_memory_max (%llu bytes), or memory ran out: "
		    "/v1/delta answers 503 until the next base",
		    where, (unsigned long long)l->chain_max);
	ch.chain = w.cb;
	ch.chain_over = w.cb_over;
	ch.ov = w.ov;
	ch.issued_at = w.issued_at;
	ch.expires_at = w.expires_at;
	ch.last_delta_at = w.applied > 0 ? w.last_delta_at : s->last_delta_at;
	ch.last_change_at = w.last_change_at;
	ns = snapshot_with_chain(s, &ch, util_now());
	if (ns == NULL) {
		chain_refused(l, "out of memory for a snapshot");
		rc = -1;
		goto out;
	}
	for (i = 0; i < w.nsigners; i++)
		snapshot_add_chain_signer(ns, w.signers[i]);
	if (w.signers_lost)
		ns->chain_signers_lost = true;
	if (head_used)
		snapshot_add_chain_signer(ns, delta_info(head)->signer);
	/* Durable before served, as the base's high-water mark is. */
	if (ch.pos.seq > s->pos.seq &&
	    chain_persist(l, s, ch.pos.seq, e, sizeof(e)) == -1) {
		chain_refused(l, e);
		snapshot_release(ns);
		l->chain_seq = UINT64_MAX;	/* the next poll tries again */
		rc = -1;
		goto out;
	}
	if (w.applied > 0) {
		metrics_add(MET_DELTA_APPLIED, w.applied);
		log_info("applied deltas %llu..%llu of base %llu (%zu keys "
		    "in the overlay)", (unsigned long long)(s->pos.seq + 1),
		    (unsigned long long)ch.pos.seq,
		    (unsigned long long)ch.pos.base_version,
		    overlay_count(ns->ov));
	}
	snapshot_swap(sl, ns);
	snapshot_slot_chain_reached(sl, ch.pos.base_version, ch.pos.seq);
	if (rc == 1)
		rc = 0;
out:
	delta_free(head);
	snapshot_release(s);
	pthread_mutex_unlock(&l->load_mu);
	return rc;
}
