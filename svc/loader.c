/* loader.c - loads, verifies and installs filters; rollback state; audit log */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "loader.h"
#include "loader_int.h"
#include "log.h"
#include "metrics.h"
#include "publish.h"
#include "sbuf.h"
#include "util.h"

#define STATE_MAX (1024 * 1024)
/* Seconds in the future a filter may be issued before the clock is named. */
#define LOADER_FUTURE_WARN 2

int
loader_copy_str(char *out, size_t cap, const char *s)
{
	int n = snprintf(out, cap, "%s", s);

	return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

/*
 * Reads the rollback state: {"signers": [{"signer", "version", "sha256",
 * "delta_seq"}]}; "delta_seq" (the chain position served on that base)
 * is absent from files written before it existed, and then 0.
 */
static int
state_read(struct loader *l, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char e[512];
	cJSON *root = NULL;
	const cJSON *arr, *it, *sg, *ver, *sha, *dseq;
	struct loader_hwm *h;
	int rc = -1;

	if (access(l->state_path, F_OK) == -1 && errno == ENOENT)
		return 0;
	if (util_read_file(l->state_path, STATE_MAX, &buf, &len, e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "rollback state: %s", e);
		return -1;
	}
	root = cJSON_ParseWithLength((const char *)buf, len);
	arr = cJSON_GetObjectItemCaseSensitive(root, "signers");
	if (!cJSON_IsArray(arr)) {
		snprintf(err, errlen, "%s: corrupt rollback state (no "
		    "\"signers\" array); refusing to start rather than "
		    "forget the highest accepted versions", l->state_path);
		goto out;
	}
	cJSON_ArrayForEach(it, arr) {
		sg = cJSON_GetObjectItemCaseSensitive(it, "signer");
		ver = cJSON_GetObjectItemCaseSensitive(it, "version");
		sha = cJSON_GetObjectItemCaseSensitive(it, "sha256");
		dseq = cJSON_GetObjectItemCaseSensitive(it, "delta_seq");
		if (l->nhwm >= LOADER_MAX_SIGNERS) {
			snprintf(err, errlen, "%s: more than %d signers",
			    l->state_path, LOADER_MAX_SIGNERS);
			goto out;
		}
		h = &l->hwm[l->nhwm];
		if (!cJSON_IsString(sg) || !cJSON_IsString(ver) ||
		    !cJSON_IsString(sha) ||
		    strlen(sg->valuestring) != 2 * SIGN_KEYID_LEN ||
		    strlen(sha->valuestring) != 64 ||
		    util_unhex(h->signer, sizeof(h->signer), sg->valuestring,
		    2 * SIGN_KEYID_LEN, false) != SIGN_KEYID_LEN ||
		    util_unhex(h->sha256, sizeof(h->sha256), sha->valuestring,
		    64, false) != 32 ||
		    util_parse_u64(ver->valuestring, UINT64_MAX,
		    &h->version) == -1 || (dseq != NULL &&
		    (!cJSON_IsString(dseq) || util_parse_u64(dseq->valuestring,
		    UINT64_MAX, &h->delta_seq) == -1))) {
			snprintf(err, errlen, "%s: corrupt rollback state "
			    "entry %zu", l->state_path, l->nhwm);
			goto out;
		}
		l->nhwm++;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	free(buf);
	return rc;
}

/*
 * Writes the state durably (publish_path), through cJSON; versions are
 * strings so that no JSON reader rounds a 64-bit one.
 */
int
loader_state_write(struct loader *l, const struct loader_hwm *hwm, size_t n,
    char *err, size_t errlen)
{
	cJSON *root, *arr, *o;
	struct iovec iov[2];
	char hex[65], ver[21], nl[] = "\n", *text = NULL;
	size_t i;
	int rc = -1;

	if ((root = cJSON_CreateObject()) == NULL ||
	    (arr = cJSON_AddArrayToObject(root, "signers")) == NULL)
		goto oom;
	for (i = 0; i < n; i++) {
		if ((o = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(arr, o))
			goto oom;
		util_hex(hex, hwm[i].signer, SIGN_KEYID_LEN);
		if (cJSON_AddStringToObject(o, "signer", hex) == NULL)
			goto oom;
		snprintf(ver, sizeof(ver), "%llu",
		    (unsigned long long)hwm[i].version);
		if (cJSON_AddStringToObject(o, "version", ver) == NULL)
			goto oom;
		util_hex(hex, hwm[i].sha256, 32);
		if (cJSON_AddStringToObject(o, "sha256", hex) == NULL)
			goto oom;
		if (hwm[i].delta_seq == 0)
			continue;
		snprintf(ver, sizeof(ver), "%llu",
		    (unsigned long long)hwm[i].delta_seq);
		if (cJSON_AddStringToObject(o, "delta_seq", ver) == NULL)
			goto oom;
	}
	if ((text = cJSON_PrintUnformatted(root)) == NULL)
		goto oom;
	iov[0].iov_base = text;
	iov[0].iov_len = strlen(text);
	iov[1].iov_base = nl;
	iov[1].iov_len = 1;
	rc = publish_pathv(l->state_path, iov, 2, 0600, 0, err, errlen);
	goto out;
oom:
	snprintf(err, errlen, "rollback state: out of memory");
out:
	cJSON_free(text);
	cJSON_Delete(root);
	return rc;
}

/*
 * Opens the audit log for appending, creating it (0640). Opened without
 * blocking, so that a FIFO without a reader (ENXIO) cannot hang the
 * start or a SIGHUP, and a FIFO is refused (a reader that stops would
 * block every load); a regular file or a device such as /dev/null is
 * then switched back to blocking writes. Returns the descriptor, or -1
 * with err.
 */
static int
open_audit(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK, 0640);
	if (fd == -1) {
		snprintf(err, errlen, "audit_log: %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) &
	    ~O_NONBLOCK) == -1) {
		snprintf(err, errlen, "audit_log: %s: %s", path,
		    strerror(errno));
		close(fd);
		return -1;
	}
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "audit_log: %s: a FIFO or socket, not a "
		    "file", path);
		close(fd);
		return -1;
	}
	return fd;
}

int
loader_init(struct loader *l, const struct config *c,
    const struct stale_policy *p, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	l->audit_fd = -1;
	sign_ring_init(&l->ring);
	l->chain_max = c->delta_memory_max;
	pthread_mutex_init(&l->load_mu, NULL);
	pthread_mutex_init(&l->ev_mu, NULL);
	loader_set_policy(l, p);
	l->edge = c->filter_dir == NULL;
	if (config_filter_owner(c, &l->owner_uid, &l->owner_set, err,
	    errlen) == -1)
		goto fail;
	if (c->filter_dir != NULL &&
	    loader_copy_str(l->filter_dir, sizeof(l->filter_dir), c->filter_dir)) {
		snprintf(err, errlen, "filter_dir: path too long");
		goto fail;
	}
	if (loader_load_ring(&l->ring, c, err, errlen) == -1)
		goto fail;
	if (util_path_join(l->state_path, sizeof(l->state_path), c->state_dir,
	    LOADER_STATE_NAME) == -1) {
		snprintf(err, errlen, "state_dir: path too long");
		goto fail;
	}
	if (c->audit_log != NULL) {
		if (loader_copy_str(l->audit_path, sizeof(l->audit_path),
		    c->audit_log) == -1) {
			snprintf(err, errlen, "audit_log: path too long");
			goto fail;
		}
	} else if (util_path_join(l->audit_path, sizeof(l->audit_path),
	    c->state_dir, LOADER_AUDIT_NAME) == -1) {
		snprintf(err, errlen, "state_dir: path too long");
		goto fail;
	}
	if (access(c->state_dir, W_OK) == -1) {
		snprintf(err, errlen, "state_dir: %s: %s", c->state_dir,
		    strerror(errno));
		goto fail;
	}
	if (state_read(l, err, errlen) == -1)
		goto fail;
	if ((l->audit_fd = open_audit(l->audit_path, err, errlen)) == -1)
		goto fail;
	return 0;
fail:
	loader_free(l);
	return -1;
}

int
loader_set_keys(struct loader *l, struct snapshot_slot *sl,
    const struct config *c, char *err, size_t errlen)
{
	struct sign_ring nr, old;
	struct snapshot *s;
	char who[2 * SIGN_KEYID_LEN + 1];
	const char *what;
	unsigned i;

	sign_ring_init(&nr);
	if (loader_load_ring(&nr, c, err, errlen) == -1) {
		sign_ring_free(&nr);
		return -1;
	}
	pthread_mutex_lock(&l->load_mu);
	old = l->ring;
	l->ring = nr;
	if ((s = snapshot_acquire(sl)) != NULL) {
		what = "is signed";
		who[0] = '\0';
		if (sign_ring_find(&l->ring, s->info->signer) == NULL)
			loader_copy_str(who, sizeof(who), s->signer_hex);
		else
			what = "has a delta or head signed";
		for (i = 0; who[0] == '\0' && i < s->nchain_signers; i++)
			if (sign_ring_find(&l->ring,
			    s->chain_signers[i]) == NULL)
				util_hex(who, s->chain_signers[i],
				    SIGN_KEYID_LEN);
		/* Signers not remembered may be the key just removed. */
		if (who[0] == '\0' && s->chain_signers_lost)
			loader_copy_str(who, sizeof(who), "a signer not recorded, "
			    "which may be");
		if (who[0] != '\0') {
			log_warn("filter version %llu (delta %llu) %s by %s, "
			    "which is no longer a trusted key: taken out of "
			    "service", (unsigned long long)s->version,
			    (unsigned long long)s->pos.seq, what, who);
			snapshot_swap(sl, NULL);
			snapshot_slot_chain_reached(sl, 0, 0);
			/*
			 * Whatever is published gets looked at again: the
			 * base reloads owing its chain (chain_behind) until
			 * deltas by trusted keys reach the seq once served.
			 */
			l->last_target[0] = '\0';
			l->serving_filter[0] = '\0';
			l->serving_table[0] = '\0';
		}
		snapshot_release(s);
	}
	pthread_mutex_unlock(&l->load_mu);
	sign_ring_free(&old);
	log_info("trusted keys: %zu loaded", c->ntrusted);
	return 0;
}

void
loader_set_policy(struct loader *l, const struct stale_policy *p)
{
	atomic_store(&l->pol_max_age, p->max_age);
	atomic_store(&l->pol_clock_skew, p->clock_skew);
	atomic_store(&l->pol_max_lag, p->max_lag);
}

void
loader_policy(const struct loader *l, struct stale_policy *p)
{
	p->max_age = atomic_load(&l->pol_max_age);
	p->clock_skew = atomic_load(&l->pol_clock_skew);
	p->max_lag = atomic_load(&l->pol_max_lag);
}

int
loader_verify(struct loader *l, const struct ffile *ff, char *err,
    size_t errlen)
{
	int rc;

	pthread_mutex_lock(&l->load_mu);
	rc = ffile_verify(ff, &l->ring, err, errlen);
	pthread_mutex_unlock(&l->load_mu);
	return rc;
}

void
loader_free(struct loader *l)
{
	if (l->audit_fd != -1)
		close(l->audit_fd);
	l->audit_fd = -1;
	sign_ring_free(&l->ring);
	pthread_mutex_destroy(&l->load_mu);
	pthread_mutex_destroy(&l->ev_mu);
}

cJSON *
loader_event_json(const struct loader_event *ev)
{
	cJSON *o;

	if (ev->time == 0)
		return cJSON_CreateNull();
	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	json_add_time(o, "time", ev->time);
	cJSON_AddStringToObject(o, "event", "load");
	cJSON_AddStringToObject(o, "result", ev->accepted ? "accepted" :
	    "refused");
	if (ev->version != 0)
		json_add_u64(o, "version", ev->version);
	else
		cJSON_AddNullToObject(o, "version");
	json_add_opt(o, "signer", ev->signer);
	json_add_opt(o, "sha256", ev->sha256);
	json_add_str(o, "source", ev->source);
	json_add_opt(o, "reason", ev->reason);
	return o;
}

/* One JSON line to the audit log and stderr; updates last and counters. */
static void
audit(struct loader *l, const struct loader_event *ev)
{
	struct sbuf b;
	cJSON *o = loader_event_json(ev);

	sbuf_init(&b, 512, 0);
	sbuf_add_json(&b, o);
	cJSON_Delete(o);
	if (sbuf_ok(&b)) {
		log_event(ev->accepted ? LOG_LVL_INFO : LOG_LVL_WARN, "audit",
		    b.p);
		sbuf_adds(&b, "\n");
		if (l->audit_fd != -1 && sbuf_ok(&b) &&
		    util_write_all(l->audit_fd, b.p, b.len) == -1)
			log_err("audit log %s: %s", l->audit_path,
			    strerror(errno));
	}
	sbuf_free(&b);
	pthread_mutex_lock(&l->ev_mu);
	l->last = *ev;
	if (ev->accepted)
		l->accepted++;
	else
		l->rejected++;
	pthread_mutex_unlock(&l->ev_mu);
	metrics_inc(ev->accepted ? MET_RELOAD_ACCEPTED :
	    MET_RELOAD_REJECTED);
}

void
loader_refuse(struct loader *l, uint64_t version, const char *source,
    const char *reason)
{
	struct loader_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.time = util_now();
	ev.version = version;
	loader_copy_str(ev.source, sizeof(ev.source), source);
	loader_copy_str(ev.reason, sizeof(ev.reason), reason);
	pthread_mutex_lock(&l->load_mu);	/* audit_fd may be reopened */
	audit(l, &ev);
	pthread_mutex_unlock(&l->load_mu);
}

uint64_t
loader_highest(struct loader *l)
{
	uint64_t v = 0;
	size_t i;

	/* Writers change hwm under ev_mu too, so readers on other threads
	 * never block behind a long load. */
	pthread_mutex_lock(&l->ev_mu);
	for (i = 0; i < l->nhwm; i++)
		if (l->hwm[i].version > v)
			v = l->hwm[i].version;
	pthread_mutex_unlock(&l->ev_mu);
	return v;
}

/* The entry holding the highest version, or NULL. */
static const struct loader_hwm *
highest_entry(const struct loader *l)
{
	const struct loader_hwm *best = NULL;
	size_t i;

	for (i = 0; i < l->nhwm; i++)
		if (best == NULL || l->hwm[i].version > best->version)
			best = &l->hwm[i];
	return best;
}

/*
 * loader_admissible() with load_mu held. chain_may_refresh: the node
 * serves nothing fresh, and a base too old or expired on its own may still
 * be taken for its chain (on disk, its newer heads) to refresh: checks
 * judge staleness on every request from the base and the chain applied
 * to it, so such a base answers 503 filter_stale until its chain makes it
 * fresh, never not_revoked from stale bits. Without this a node
 * restarted more than max_age after its last re-base refused the base
 * whose fresh heads were on disk (or at its origin) and answered 503
 * until the next re-base.
 */
static bool
admissible(const struct loader *l, const struct ffile *ff, int64_t now,
    bool chain_may_refresh, char *why, size_t whylen)
{
	const struct ffile_info *fi = ffile_info(ff);
	const struct loader_hwm *top = highest_entry(l);
	struct stale_policy pol;
	enum stale_reason sr;

	loader_policy(l, &pol);
	sr = stale_check(fi, &pol, now, 0);
	if (chain_may_refresh &&
	    (sr == STALE_MAX_AGE || sr == STALE_EXPIRED))
		sr = STALE_FRESH;
	if (sr != STALE_FRESH) {
		snprintf(why, whylen, "stale: %s", stale_reason_str(sr));
		return false;
	}
	if (top != NULL && fi->version < top->version) {
		snprintf(why, whylen, "rollback: version %llu is below the "
		    "highest accepted %llu", (unsigned long long)fi->version,
		    (unsigned long long)top->version);
		return false;
	}
	if (top != NULL && fi->version == top->version &&
	    memcmp(top->sha256, ffile_sha256(ff), 32) != 0) {
		snprintf(why, whylen, "version %llu was already accepted "
		    "with different bytes", (unsigned long long)fi->version);
		return false;
	}
	return true;
}

/* Whether sl serves a snapshot that is fresh at now. */
static bool
serving_fresh(const struct loader *l, struct snapshot_slot *sl, int64_t now)
{
	struct stale_policy pol;
	struct snapshot *cur;
	bool fresh;

	if ((cur = snapshot_acquire(sl)) == NULL)
		return false;
	loader_policy(l, &pol);
	fresh = snapshot_stale(cur, &pol, now, sl) == STALE_FRESH;
	snapshot_release(cur);
	return fresh;
}

bool
loader_admissible(struct loader *l, struct snapshot_slot *sl,
    const struct ffile *ff, int64_t now, char *why, size_t whylen)
{
	bool ok;

	pthread_mutex_lock(&l->load_mu);
	ok = admissible(l, ff, now, !serving_fresh(l, sl, now), why, whylen);
	pthread_mutex_unlock(&l->load_mu);
	return ok;
}

/*
 * Issued in this node's future (inside clock_skew, or it would have
 * been refused): its clock is behind the builder's, or the builder's
 * ahead. Behind, it keeps every expired filter fresh that much
 * longer, which it cannot see by itself; say so.
 */
static void
warn_future(const struct ffile_info *fi, int64_t now)
{
	if (fi->issued_at > now + LOADER_FUTURE_WARN)
		log_warn("filter version %llu was issued %llds in this node's "
		    "future: its clock is behind the builder's (expired "
		    "filters then stay fresh that long here) or the "
		    "builder's is ahead; filterbuild audit compares clocks",
		    (unsigned long long)fi->version,
		    (long long)(fi->issued_at - now));
}

/*
 * The high-water mark of ff's signer raised to ff (a signer not seen
 * before is added; another base starts its chain afresh), persisted and
 * made current before ff serves. *hw gets the signer's entry after it.
 * 0, or -1 with why filled and the state as it was. With load_mu held.
 */
static int
hwm_persist(struct loader *l, const struct ffile *ff, struct loader_hwm *hw,
    char *why, size_t whylen)
{
	struct loader_hwm next[LOADER_MAX_SIGNERS];
	const struct ffile_info *fi = ffile_info(ff);
	char e[256];
	size_t n, i;

	n = l->nhwm;
	memcpy(next, l->hwm, n * sizeof(next[0]));
	for (i = 0; i < n; i++)
		if (memcmp(next[i].signer, fi->signer, SIGN_KEYID_LEN) == 0)
			break;
	if (i == n) {
		if (n >= LOADER_MAX_SIGNERS) {
			snprintf(why, whylen, "too many signers in the rollback "
			    "state");
			return -1;
		}
		/* Every field known (padding too: the entries are compared
		 * whole below), delta_seq 0 and no base seen yet. */
		memset(&next[i], 0, sizeof(next[i]));
		memcpy(next[i].signer, fi->signer, SIGN_KEYID_LEN);
		n++;
	}
	if (fi->version >= next[i].version) {
		/* Another base starts its chain afresh. */
		if (memcmp(next[i].sha256, ffile_sha256(ff), 32) != 0)
			next[i].delta_seq = 0;
		next[i].version = fi->version;
		memcpy(next[i].sha256, ffile_sha256(ff), 32);
	}
	if (n != l->nhwm || memcmp(next, l->hwm, n * sizeof(next[0])) != 0) {
		if (loader_state_write(l, next, n, e, sizeof(e)) == -1) {
			snprintf(why, whylen, "cannot persist rollback state: "
			    "%.200s", e);
			return -1;
		}
		pthread_mutex_lock(&l->ev_mu);
		memcpy(l->hwm, next, n * sizeof(next[0]));
		l->nhwm = n;
		pthread_mutex_unlock(&l->ev_mu);
	}
	*hw = next[i];
	return 0;
}

int
loader_accept(struct loader *l, struct snapshot_slot *sl, struct ffile *ff,
    struct table *tab, const char *source)
{
	struct loader_event ev;
	struct loader_hwm hw;
	const struct ffile_info *fi = ffile_info(ff);
	struct snapshot *cur, *s;
	char e[256];
	int64_t now = util_now();
	int rc = -1;

	pthread_mutex_lock(&l->load_mu);
	memset(&ev, 0, sizeof(ev));
	ev.time = now;
	ev.version = fi->version;
	util_hex(ev.signer, fi->signer, SIGN_KEYID_LEN);
	util_hex(ev.sha256, ffile_sha256(ff), 32);
	loader_copy_str(ev.source, sizeof(ev.source), source);

	/* This exact filter already serving: nothing to do, nothing to log. */
	if ((cur = snapshot_acquire(sl)) != NULL) {
		bool same = memcmp(ffile_sha256(cur->ff), ffile_sha256(ff),
		    32) == 0;
		snapshot_release(cur);
		if (same) {
			rc = 1;
			goto out_close;
		}
	}
	if (ffile_verify(ff, &l->ring, e, sizeof(e)) == -1) {
		snprintf(ev.reason, sizeof(ev.reason), "signature: %.200s", e);
		goto refuse;
	}
	if (tab == NULL && !l->edge) {
		snprintf(ev.reason, sizeof(ev.reason), "no authoritative "
		    "table");
		goto refuse;
	}
	if (tab != NULL && table_check_binding(tab, fi->table_sha256,
	    fi->table_len, e, sizeof(e)) == -1) {
		snprintf(ev.reason, sizeof(ev.reason), "table does not match "
		    "the filter: %.200s", e);
		goto refuse;
	}
	/*
	 * Its chain comes next: from disk (loader_poll_chain) or, on an
	 * edge, in the same sync (sync_chain).
	 */
	if (!admissible(l, ff, now, !serving_fresh(l, sl, now), ev.reason,
	    sizeof(ev.reason)))
		goto refuse;

	/* Persist the new high-water mark before serving the filter. */
	if (hwm_persist(l, ff, &hw, ev.reason, sizeof(ev.reason)) == -1)
		goto refuse;
	if ((s = snapshot_new(ff, tab, now)) == NULL) {
		ff = NULL;
		tab = NULL;
		snprintf(ev.reason, sizeof(ev.reason), "out of memory");
		goto refuse;
	}
	/*
	 * The deltas once served on this base are owed before it answers:
	 * from the base alone, a key a delta revoked would be not_revoked.
	 */
	if (memcmp(hw.sha256, ffile_sha256(s->ff), 32) == 0)
		s->chain_need = hw.delta_seq;
	if (s->chain_need > 0)
		log_info("filter version %llu: deltas up to %llu were served "
		    "on it; checks answer 503 chain_behind until the chain "
		    "reaches it again", (unsigned long long)fi->version,
		    (unsigned long long)s->chain_need);
	snapshot_swap(sl, s);
	/* Another base: its chain's lag clock, if any, starts anew. */
	snapshot_slot_chain_reached(sl, fi->version, 0);
	warn_future(fi, now);
	/*
	 * The chain poll's cache describes the snapshot before; the same
	 * base loaded again (after SIGHUP took it out) walks its chain anew.
	 */
	l->chain_seq = UINT64_MAX;
	ev.accepted = true;
	audit(l, &ev);
	pthread_mutex_unlock(&l->load_mu);
	return 0;
refuse:
	audit(l, &ev);
	rc = -1;
out_close:
	if (ff != NULL)
		ffile_close(ff);
	if (tab != NULL)
		table_close(tab);
	pthread_mutex_unlock(&l->load_mu);
	return rc;
}

/*
 * A file the daemon trusts (the filter, its table, a trusted key) must be
 * owned by root, by the daemon's own user or by filter_owner (owner, when
 * owner_set), and neither its group nor others may write it: 0, or -1
 * with err naming the file, its owner or mode and what was expected. st
 * comes from fstat on the descriptor that was read.
 */
static int
file_ok(uid_t owner, bool owner_set, const char *path, const struct stat *st,
    char *err, size_t errlen)
{
	return util_file_trusted(path, st, owner, owner_set, false,
	    "the daemon's", err, errlen);
}

int
loader_owner_ok(const struct loader *l, const char *path, const struct stat *st,
    char *err, size_t errlen)
{
	return file_ok(l->owner_uid, l->owner_set, path, st, err, errlen);
}

int
loader_read_trusted(const struct config *c, const char *path, size_t max,
    unsigned char **out, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	uid_t owner = 0;
	bool owner_set;

	*out = NULL;
	*len = 0;
	if (config_filter_owner(c, &owner, &owner_set, err, errlen) == -1)
		return -1;
	if (util_read_file_st(path, max, out, len, &st, err, errlen) == -1)
		return -1;
	if (file_ok(owner, owner_set, path, &st, err, errlen) == -1) {
		OPENSSL_cleanse(*out, *len);
		free(*out);
		*out = NULL;
		*len = 0;
		return -1;
	}
	return 0;
}

int
loader_load_ring(struct sign_ring *r, const struct config *c, char *err,
    size_t errlen)
{
	unsigned char *pem;
	size_t i, len;
	char e[512];
	int rc;

	for (i = 0; i < c->ntrusted; i++) {
		rc = loader_read_trusted(c, c->trusted_keys[i], SIGN_PEM_MAX,
		    &pem, &len, e, sizeof(e));
		if (rc == 0) {
			rc = sign_ring_add_pem(r, pem, len, c->trusted_keys[i],
			    e, sizeof(e));
			free(pem);
		}
		if (rc == -1) {
			snprintf(err, errlen, "trusted_key: %s", e);
			return -1;
		}
	}
	return 0;
}

/*
 * Opens a file of the pair without blocking (a FIFO must not hang the
 * loader) and, with fstat on that descriptor and before a byte is read,
 * checks that it is a regular file, owned and moded as owner_ok wants,
 * of at most max bytes. Returns the descriptor (blocking again, the
 * caller closes it) with *st, or -1 with err.
 */
static int
open_checked(const struct loader *l, const char *path, uint64_t max,
    struct stat *st, char *err, size_t errlen)
{
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1 || fstat(fd, st) == -1) {
		snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%.400s: not a regular file", path);
		goto out_close;
	}
	if (loader_owner_ok(l, path, st, err, errlen) == -1)
		goto out_close;
	if ((uint64_t)st->st_size > max || (uint64_t)st->st_size > SIZE_MAX) {
		snprintf(err, errlen, "%.400s: %lld bytes, over the limit of "
		    "%llu", path, (long long)st->st_size,
		    (unsigned long long)max);
		goto out_close;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == -1) {
		snprintf(err, errlen, "%.400s: %s", path, strerror(errno));
		goto out_close;
	}
	return fd;
out_close:
	if (fd != -1)
		close(fd);
	return -1;
}

/*
 * Reads exactly size bytes of fd (checked by open_checked) into a new
 * buffer; a file that changed size meanwhile is refused. 0, or -1 with err.
 */
static int
read_exact(int fd, const char *path, size_t size, unsigned char **out,
    char *err, size_t errlen)
{
	unsigned char *buf, extra;
	size_t got = 0;
	ssize_t n;

	if ((buf = malloc(size > 0 ? size : 1)) == NULL) {
		snprintf(err, errlen, "%.400s: out of memory", path);
		return -1;
	}
	/* Its pages all get written: faulted in ahead, in large pages. */
	if (size >= UTIL_POPULATE_STEP)
		util_populate(buf, size);
	while (got < size) {
		n = pread(fd, buf + got, size - got, (off_t)got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got < size || pread(fd, &extra, 1, (off_t)got) != 0) {
		snprintf(err, errlen, "%.400s: offset %zu: the file changed "
		    "size while it was read", path, got);
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

/* Opens, checks and parses the filter file (its signature is not checked). */
static struct ffile *
open_filter(const struct loader *l, const char *path, char *err,
    size_t errlen)
{
	unsigned char *buf;
	struct stat st;
	int fd;
	struct ffile *ff = NULL;

	if ((fd = open_checked(l, path, FFILE_MAX_SIZE, &st, err,
	    errlen)) == -1)
		return NULL;
	if (read_exact(fd, path, (size_t)st.st_size, &buf, err, errlen) == 0)
		ff = ffile_parse(buf, (size_t)st.st_size, true, err, errlen);
	close(fd);
	return ff;
}

/*
 * Opens, checks and copies the table of ff, whose signature the caller
 * checked: the length the file must have is the verified header's, and
 * a file of another size is refused unread.
 */
static struct table *
open_table(const struct loader *l, const struct ffile *ff, const char *path,
    char *err, size_t errlen)
{
	uint64_t want = ffile_info(ff)->table_len;
	struct table *tab = NULL;
	struct stat st;
	int fd;

	if ((fd = open_checked(l, path, UINT64_MAX, &st, err, errlen)) == -1)
		return NULL;
	if ((uint64_t)st.st_size != want)
		snprintf(err, errlen, "%.250s: %lld bytes, but the signed "
		    "filter says its table has %llu: not read; publish the "
		    "pair again, or put back the table that belongs to this "
		    "filter", path, (long long)st.st_size,
		    (unsigned long long)want);
	else
		tab = table_open_fd_len(fd, path, want, err, errlen);
	close(fd);
	return tab;
}

int
loader_load_files(struct loader *l, struct snapshot_slot *sl,
    const char *filter_path, const char *table_path)
{
	struct ffile *ff;
	struct table *tab = NULL;
	char e[512], reason[600];
	bool same;
	int rc;

	/*
	 * Both files are read into private memory, so the bytes that were
	 * verified can never change under the daemon, whatever happens to
	 * the files (the table's SHA-256 is checked against the signed
	 * header in loader_accept). Nothing is read before fstat on the
	 * descriptor has passed: a regular file, owned by root, the
	 * daemon's user or filter_owner, writable by neither group nor
	 * others, within the size limit; the table's size must be the one
	 * its verified filter names.
	 */
	if ((ff = open_filter(l, filter_path, e, sizeof(e))) == NULL) {
		snprintf(reason, sizeof(reason), "filter: %.500s", e);
		loader_refuse(l, 0, filter_path, reason);
		return -1;
	}
	/*
	 * The signature before the table: its length is taken from the
	 * verified header (loader_accept checks the signature again, against
	 * the keys in force then).
	 */
	if (table_path != NULL && loader_verify(l, ff, e, sizeof(e)) == -1) {
		snprintf(reason, sizeof(reason), "signature: %.500s", e);
		loader_refuse(l, ffile_info(ff)->version, filter_path, reason);
		ffile_close(ff);
		return -1;
	}
	if (table_path != NULL &&
	    (tab = open_table(l, ff, table_path, e, sizeof(e))) == NULL) {
		snprintf(reason, sizeof(reason), "table: %.500s", e);
		loader_refuse(l, ffile_info(ff)->version, filter_path, reason);
		ffile_close(ff);
		return -1;
	}
	/* The same bytes as in service (rc 1) put them back on disk. */
	same = tab == NULL || table_check_binding(tab,
	    ffile_info(ff)->table_sha256, ffile_info(ff)->table_len, e,
	    sizeof(e)) == 0;
	rc = loader_accept(l, sl, ff, tab, filter_path);
	if (rc == 0 || (rc == 1 && same)) {
		loader_copy_str(l->serving_filter, sizeof(l->serving_filter),
		    filter_path);
		loader_copy_str(l->serving_table, sizeof(l->serving_table),
		    table_path != NULL ? table_path : "");
		loader_disk_clear(l);
	} else if (rc == 1) {
		snprintf(reason, sizeof(reason), "%.300s: %.200s", table_path,
		    e);
		loader_disk_flag(l, sl, reason);
	}
	return rc;
}

/* Compares a file's SHA-256 with want; 0, or -1 with why. */
static int
disk_matches(const char *path, const unsigned char want[32], char *why,
    size_t whylen)
{
	unsigned char sha[32];
	char e[512];

	if (util_sha256_file(path, sha, e, sizeof(e)) == -1) {
		snprintf(why, whylen, "%.300s", e);
		return -1;
	}
	if (memcmp(sha, want, 32) != 0) {
		snprintf(why, whylen, "%.300s changed on disk after it was "
		    "verified", path);
		return -1;
	}
	return 0;
}

int
loader_reverify(struct loader *l, struct snapshot_slot *sl)
{
	struct snapshot *s;
	char why[400] = "", disk[400] = "", reason[512];
	uint64_t version;

	if ((s = snapshot_acquire(sl)) == NULL)
		return 0;
	version = s->version;
	if (!ffile_intact(s->ff))
		snprintf(why, sizeof(why), "the filter in memory no longer "
		    "matches its verified SHA-256");
	else if (s->tab != NULL && !table_intact(s->tab))
		snprintf(why, sizeof(why), "the table in memory no longer "
		    "matches its verified SHA-256");
	else if (s->tab != NULL && l->serving_table[0] != '\0' &&
	    disk_matches(l->serving_table, table_sha256(s->tab), disk,
	    sizeof(disk)) == 0 && l->serving_filter[0] != '\0')
		(void)disk_matches(l->serving_filter, ffile_sha256(s->ff), disk,
		    sizeof(disk));
	snapshot_release(s);
	/*
	 * The bytes in memory are the ones verified, and nothing on disk
	 * can change them: files gone or edited are said loudly, and the
	 * verified pair serves on (until it expires, as always).
	 */
	if (why[0] == '\0' && disk[0] != '\0') {
		log_warn("SIGHUP: filter version %llu in service re-verified "
		    "in memory; its files are not", (unsigned long long)version);
		loader_disk_flag(l, sl, disk);
		return 0;
	}
	if (why[0] == '\0') {
		log_info("SIGHUP: filter version %llu in service re-verified",
		    (unsigned long long)version);
		return 0;
	}
	snprintf(reason, sizeof(reason), "re-verification on SIGHUP: %s; "
	    "version %llu taken out of service", why,
	    (unsigned long long)version);
	log_err("%s", reason);
	loader_refuse(l, version, l->serving_filter[0] != '\0' ?
	    l->serving_filter : "memory", reason);
	snapshot_swap(sl, NULL);
	snapshot_slot_chain_reached(sl, 0, 0);
	l->serving_filter[0] = '\0';
	l->serving_table[0] = '\0';
	return -1;
}

/* current names a pair that was refused: the one in service is not it. */
static void
disk_refused(struct loader *l, struct snapshot_slot *sl, const char *vdir,
    uint64_t version)
{
	struct loader_event ev;
	char found[512];

	loader_stats(l, &ev, NULL, NULL);
	snprintf(found, sizeof(found), "%s names version %llu (%.200s), "
	    "refused: %.200s", PUBLISH_CURRENT, (unsigned long long)version,
	    vdir, ev.reason);
	loader_disk_flag(l, sl, found);
}

int
loader_poll(struct loader *l, struct snapshot_slot *sl, bool force)
{
	char vdir[PATH_MAX], fpath[PATH_MAX], tpath[PATH_MAX], e[512];
	uint64_t version = 0;
	struct stat st;
	int r;

	if (l->filter_dir[0] == '\0')
		return 1;
	r = publish_current(l->filter_dir, vdir, sizeof(vdir), &version, e,
	    sizeof(e));
	if (r != 0) {
		if (r != l->last_pub_err) {
			if (r == 1)
				log_info("waiting for %s/%s", l->filter_dir,
				    PUBLISH_CURRENT);
			else
				log_warn("filter dir: %s", e);
		}
		l->last_pub_err = r;
		if (r == 1)
			snprintf(e, sizeof(e), "%.400s/%s: no current pair",
			    l->filter_dir, PUBLISH_CURRENT);
		loader_disk_flag(l, sl, e);
		return r == 1 ? 1 : -1;
	}
	l->last_pub_err = 0;
	if (util_path_join(fpath, sizeof(fpath), vdir, PUBLISH_FILTER_NAME) == -1 ||
	    util_path_join(tpath, sizeof(tpath), vdir, PUBLISH_TABLE_NAME) == -1) {
		log_warn("filter dir: path too long");
		return -1;
	}
	if (stat(fpath, &st) == -1)
		memset(&st, 0, sizeof(st));
	if (!force && strcmp(vdir, l->last_target) == 0 &&
	    st.st_ino == l->last_st.st_ino && st.st_dev == l->last_st.st_dev &&
	    st.st_size == l->last_st.st_size &&
	    st.st_mtim.tv_sec == l->last_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == l->last_st.st_mtim.tv_nsec)
		return 1;
	loader_copy_str(l->last_target, sizeof(l->last_target), vdir);
	l->last_st = st;
	if ((r = loader_load_files(l, sl, fpath, tpath)) == -1)
		disk_refused(l, sl, vdir, version);
	return r;
}

int
loader_reopen_audit(struct loader *l)
{
	char e[PATH_MAX + 64];
	int fd, old;

	if ((fd = open_audit(l->audit_path, e, sizeof(e))) == -1) {
		log_err("%s", e);
		return -1;
	}
	pthread_mutex_lock(&l->load_mu);
	old = l->audit_fd;
	l->audit_fd = fd;
	pthread_mutex_unlock(&l->load_mu);
	if (old != -1)
		close(old);
	return 0;
}

void
loader_stats(struct loader *l, struct loader_event *last,
    uint64_t *accepted, uint64_t *rejected)
{
	pthread_mutex_lock(&l->ev_mu);
	if (last != NULL)
		*last = l->last;
	if (accepted != NULL)
		*accepted = l->accepted;
	if (rejected != NULL)
		*rejected = l->rejected;
	pthread_mutex_unlock(&l->ev_mu);
}

void
loader_lower_priority(const struct config *c, const char *who)
{
	int n;

	if (c->loader_nice == 0)
		return;
	util_give_way(LOADER_GIVE_WAY);
	if ((n = util_lower_thread_priority((int)c->loader_nice)) == -1) {
		log_warn("%s thread: cannot lower its priority by loader_nice "
		    "%u: %s; filter loads compete with the HTTP workers (allow "
		    "setpriority, or set loader_nice 0)", who, c->loader_nice,
		    strerror(errno));
		return;
	}
	log_info("%s thread: filter loads run at nice %d (loader_nice %u) "
	    "and give way every %u KiB", who, n, c->loader_nice,
	    LOADER_GIVE_WAY >> 10);
}
