/* sync.c - edge mode: the filter sync loop and the upstream authority */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "check.h"
#include "delta.h"
#include "ffile.h"
#include "log.h"
#include "publish.h"
#include "sync.h"
#include "upstream.h"
#include "util.h"

#define ETAG_MAX	200	/* longer ETags are not kept */
#define ERR_MAX		512

struct sync {
	const struct config	*cfg;
	struct loader		*l;
	struct snapshot_slot	*sl;
	struct upstream		*up;		/* NULL without upstream_check */
	CURL			*curl;		/* the sync thread's only */
	char			 persist[PATH_MAX];
	char			 dir[PATH_MAX];
	pthread_t		 th;
	pthread_mutex_t		 mu;	/* guards everything below but abort */
	pthread_cond_t		 cv;
	bool			 stop;
	bool			 kick;
	_Atomic bool		 abort;	/* read by the transfer callback */
	/* What /v1/status shows. */
	int64_t			 last_attempt;
	int64_t			 last_success;
	const char		*result;
	char			 error[ERR_MAX];
	uint64_t		 seen;		/* highest verified version seen */
	char			 etag[ETAG_MAX + 1];
	uint64_t		 attempts;
	uint64_t		 failures;
	uint64_t		 consecutive;
	uint64_t		 updates;
	/* The sync thread's own: the last refused bytes, not audited twice. */
	unsigned char		 refused_sha[32];
	bool			 have_refused;
	double			 refused_at;	/* monotonic */
	char			 refused_err[ERR_MAX];
	/* The delta chain (origin's /v1/delta): the last ETag and result. */
	char			 chain_etag[ETAG_MAX + 1];
	/*
	 * Push (a long-poll the upstream holds): whether the last answer
	 * was held, the failures in a row (the backoff), rounds, and the
	 * base check a 409 asks for.
	 */
	bool			 push_held;
	unsigned		 push_fails;
	uint64_t		 push_rounds;
	bool			 base_due;
	uint64_t		 chain_fetches;
	uint64_t		 chain_bytes;
	uint64_t		 sync_bytes;	/* every sync reply on the wire */
	char			 chain_error[ERR_MAX];
};

/* The download buffer, capped while the bytes arrive. */
struct dl {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
	uint64_t	 max;
	bool		 too_big;
};

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
	struct dl *d = arg;
	size_t len = size * n;

	if (util_buf_append(&d->p, &d->len, &d->cap, p, len, d->max) != 0) {
		if (errno == EFBIG)
			d->too_big = true;
		return 0;	/* aborts the transfer */
	}
	return len;
}

static void
succeed(struct sync *s, const char *result, const char *etag)
{
	pthread_mutex_lock(&s->mu);
	s->result = result;
	s->error[0] = '\0';
	s->last_success = util_now();
	if (s->consecutive > 0)
		log_info("sync recovered: %s from %s after %llu failed "
		    "attempts", result, s->cfg->upstream_filter,
		    (unsigned long long)s->consecutive);
	s->consecutive = 0;
	if (etag != NULL && etag[0] != '\0')
		snprintf(s->etag, sizeof(s->etag), "%s", etag);
	pthread_mutex_unlock(&s->mu);
}

/*
 * A failed sync: counted and shown. Logged once when syncs start failing,
 * then with backoff (after 2, 4, 8, ... failures in a row) so that a long
 * outage does not flood the log, and once more when they recover.
 */
static void
fail(struct sync *s, const char *result, const char *msg)
{
	uint64_t n;

	pthread_mutex_lock(&s->mu);
	s->result = result;
	snprintf(s->error, sizeof(s->error), "%s", msg);
	s->failures++;
	n = ++s->consecutive;
	pthread_mutex_unlock(&s->mu);
	if (n == 1)
		log_warn("sync failing: %s from %s: %s; keeping the current "
		    "filter", result, s->cfg->upstream_filter, msg);
	else if ((n & (n - 1)) == 0)
		log_warn("sync still failing after %llu attempts: %s from "
		    "%s: %s", (unsigned long long)n, result,
		    s->cfg->upstream_filter, msg);
	else
		log_debug("sync from %s failed again: %s",
		    s->cfg->upstream_filter, msg);
}

/* Writes bytes to the persisted path durably (publish_path). */
static int
persist(struct sync *s, const unsigned char *p, size_t len, char *err,
    size_t errlen)
{
	return publish_path(s->persist, p, len, 0600, 0, err, errlen);
}


static void
remember_refusal(struct sync *s, const unsigned char sha[32],
    const char *why)
{
	memcpy(s->refused_sha, sha, 32);
	s->have_refused = true;
	s->refused_at = util_monotime();
	snprintf(s->refused_err, sizeof(s->refused_err), "%s", why);
}

/* Verifies, persists and installs downloaded bytes (taken over). */
static void
install(struct sync *s, unsigned char *buf, size_t len, const char *etag)
{
	const char *url = s->cfg->upstream_filter;
	const struct ffile_info *fi;
	struct loader_event ev;
	struct snapshot *cur;
	struct ffile *ff;
	unsigned char sha[32];
	const unsigned char *bytes;
	uint64_t cur_version = 0;
	char e[ERR_MAX], reason[ERR_MAX];
	size_t blen;
	bool newer, ok, persisted = false;
	int64_t now = util_now();
	int rc;

	if (util_sha256(sha, buf, len) == -1) {
		free(buf);
		fail(s, "download_failed", "cannot hash the download");
		return;
	}
	if ((cur = snapshot_acquire(s->sl)) != NULL) {
		cur_version = cur->version;
		if (memcmp(ffile_sha256(cur->ff), sha, 32) == 0) {
			snapshot_release(cur);
			free(buf);
			succeed(s, "unchanged", etag);
			return;
		}
		snapshot_release(cur);
	}
	if (s->have_refused && memcmp(s->refused_sha, sha, 32) == 0 &&
	    util_monotime() - s->refused_at < SYNC_RECHECK_REFUSED) {
		/*
		 * The same bytes as last time: refused without a new audit
		 * line. They are judged again now and then, since a refusal
		 * may pass (a filter issued ahead of this clock).
		 */
		free(buf);
		fail(s, "refused", s->refused_err);
		return;
	}
	if ((ff = ffile_parse(buf, len, true, e, sizeof(e))) == NULL) {
		snprintf(reason, sizeof(reason), "download of %zu bytes: %.400s",
		    len, e);
		loader_refuse(s->l, 0, url, reason);
		remember_refusal(s, sha, reason);
		fail(s, "refused", reason);
		return;
	}
	fi = ffile_info(ff);
	ok = loader_verify(s->l, ff, e, sizeof(e)) == 0;
	newer = ok && fi->version > cur_version;
	if (ok) {
		pthread_mutex_lock(&s->mu);
		if (fi->version > s->seen)
			s->seen = fi->version;
		pthread_mutex_unlock(&s->mu);
		ok = loader_admissible(s->l, s->sl, ff, now, reason,
		    sizeof(reason));
	}
	if (ok) {
		bytes = ffile_bytes(ff, &blen);
		if (persist(s, bytes, blen, e, sizeof(e)) == -1) {
			snprintf(reason, sizeof(reason), "cannot keep the "
			    "filter in the state directory: %.400s", e);
			loader_refuse(s->l, fi->version, url, reason);
			ffile_close(ff);
			fail(s, "refused", reason);
			goto lag;
		}
		persisted = true;
	}
	/* The single acceptance path decides (and audits) in every case. */
	rc = loader_accept(s->l, s->sl, ff, NULL, url);
	if (rc == 0) {
		if (!persisted && (cur = snapshot_acquire(s->sl)) != NULL) {
			bytes = ffile_bytes(cur->ff, &blen);
			if (persist(s, bytes, blen, e, sizeof(e)) == -1)
				log_warn("sync: %s", e);
			snapshot_release(cur);
		}
		pthread_mutex_lock(&s->mu);
		s->updates++;
		pthread_mutex_unlock(&s->mu);
		if ((cur = snapshot_acquire(s->sl)) != NULL) {
			pthread_mutex_lock(&s->mu);
			if (cur->version >= s->seen)
				atomic_store(&s->sl->newer_seen_at, 0);
			pthread_mutex_unlock(&s->mu);
			log_info("sync: now serving version %llu from %s",
			    (unsigned long long)cur->version, url);
			snapshot_release(cur);
		}
		s->have_refused = false;
		succeed(s, "updated", etag);
		return;
	}
	if (rc == 1) {
		succeed(s, "unchanged", etag);
		return;
	}
	loader_stats(s->l, &ev, NULL, NULL);
	snprintf(reason, sizeof(reason), "%s", ev.reason[0] != '\0' ?
	    ev.reason : "refused by the loader");
	remember_refusal(s, sha, reason);
	fail(s, "refused", reason);
lag:
	/* A newer version exists and could not be loaded: the lag clock runs. */
	if (newer) {
		int64_t zero = 0;

		atomic_compare_exchange_strong(&s->sl->newer_seen_at, &zero,
		    now);
	}
}

/*
 * A 304 says upstream still holds the file our ETag names, and that tag
 * always belongs to the filter serving now (it is kept only from a
 * download that was installed or matched it, or from the persisted file
 * at start): upstream's version is ours, seen through a verified file.
 */
static void
note_not_modified(struct sync *s)
{
	struct snapshot *cur;

	if ((cur = snapshot_acquire(s->sl)) == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (cur->version > s->seen)
		s->seen = cur->version;
	pthread_mutex_unlock(&s->mu);
	snapshot_release(cur);
}

/* Keeps an ETag only when it is short and plain text (it goes back into a header). */
static void
read_etag(CURL *h, char *out, size_t cap)
{
	struct curl_header *hd;
	size_t n, i;

	out[0] = '\0';
	if (curl_easy_header(h, "ETag", 0, CURLH_HEADER, -1, &hd) !=
	    CURLHE_OK || hd->value == NULL)
		return;
	n = strlen(hd->value);
	if (n == 0 || n >= cap)
		return;
	for (i = 0; i < n; i++)
		if (hd->value[i] < 0x21 || hd->value[i] > 0x7e)
			return;
	memcpy(out, hd->value, n + 1);
}

/* How http_get asks: a HEAD, a long-poll of wait seconds, what it read. */
struct get_opts {
	bool		 nobody;	/* HEAD: headers only */
	bool		 base;		/* the base's: not counted as chain */
	long		 wait;		/* a long-poll held up to wait s */
	bool		 held;		/* out: X-Revcheck-Wait came back */
	uint64_t	 version;	/* out: X-Revcheck-Filter-Version, 0 */
	uint64_t	 seq;		/* out: X-Revcheck-Delta-Seq, 0 */
};

/* The value of header name in the last reply as an integer, or 0. */
static uint64_t
reply_u64(CURL *h, const char *name, bool *present)
{
	struct curl_header *hd;
	uint64_t v = 0;

	if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK ||
	    hd->value == NULL)
		return 0;
	if (present != NULL)
		*present = true;
	return util_parse_u64(hd->value, UINT64_MAX, &v) == 0 ? v : 0;
}

/*
 * One GET (or HEAD) of url into d, with If-None-Match: etag when etag
 * is not empty; the reply's ETag into newtag. Counts the bytes on the
 * wire as the chain's. Returns the HTTP status, or 0 with msg set when
 * the transfer failed.
 */
static long
http_get(struct sync *s, const char *url, const char *etag, struct dl *d,
    char newtag[ETAG_MAX + 1], char *msg, size_t msglen, struct get_opts *o)
{
	char hdr[ETAG_MAX + 32], ebuf[CURL_ERROR_SIZE];
	struct curl_slist *hl = NULL;
	curl_off_t body = 0;
	long code = 0, head = 0;
	CURLcode cc;

	memset(d, 0, sizeof(*d));
	d->max = s->cfg->max_download;
	newtag[0] = '\0';
	if (etag[0] != '\0') {
		snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag);
		if ((hl = curl_slist_append(NULL, hdr)) == NULL) {
			snprintf(msg, msglen, "out of memory");
			return 0;
		}
	}
	ebuf[0] = '\0';
	curl_easy_setopt(s->curl, CURLOPT_URL, url);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, ebuf);
	if (o != NULL && o->nobody)
		curl_easy_setopt(s->curl, CURLOPT_NOBODY, 1L);
	/* Nothing arrives while the upstream holds the request. */
	if (o != NULL && o->wait > 0) {
		curl_easy_setopt(s->curl, CURLOPT_LOW_SPEED_TIME,
		    (long)SYNC_LOW_SPEED_TIME + o->wait);
		curl_easy_setopt(s->curl, CURLOPT_TIMEOUT,
		    (long)s->cfg->sync_timeout + o->wait);
	}
	cc = curl_easy_perform(s->curl);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(s->curl, CURLOPT_URL, s->cfg->upstream_filter);
	if (o != NULL && o->nobody)
		curl_easy_setopt(s->curl, CURLOPT_HTTPGET, 1L);
	if (o != NULL && o->wait > 0) {
		curl_easy_setopt(s->curl, CURLOPT_LOW_SPEED_TIME,
		    (long)SYNC_LOW_SPEED_TIME);
		curl_easy_setopt(s->curl, CURLOPT_TIMEOUT,
		    (long)s->cfg->sync_timeout);
	}
	curl_slist_free_all(hl);
	if (cc != CURLE_OK || d->too_big) {
		snprintf(msg, msglen, "%.300s", d->too_big ?
		    "larger than max_download" : ebuf[0] != '\0' ? ebuf :
		    curl_easy_strerror(cc));
		return 0;
	}
	curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
	/* What the wire carried: headers and body, 304s included. */
	curl_easy_getinfo(s->curl, CURLINFO_SIZE_DOWNLOAD_T, &body);
	curl_easy_getinfo(s->curl, CURLINFO_HEADER_SIZE, &head);
	pthread_mutex_lock(&s->mu);
	if (o == NULL || !o->base)
		s->chain_bytes += (uint64_t)body + (uint64_t)head;
	s->sync_bytes += (uint64_t)body + (uint64_t)head;
	pthread_mutex_unlock(&s->mu);
	if (code == 200 || (code == 304 && o != NULL))
		read_etag(s->curl, newtag, ETAG_MAX + 1);
	if (o != NULL) {
		o->held = false;
		(void)reply_u64(s->curl, "X-Revcheck-Wait", &o->held);
		o->version = reply_u64(s->curl, "X-Revcheck-Filter-Version",
		    NULL);
		o->seq = reply_u64(s->curl, "X-Revcheck-Delta-Seq", NULL);
	}
	return code;
}

/* A GET of a chain file or bundle (http_get, errors named so). */
static long
chain_get(struct sync *s, const char *url, const char *etag, struct dl *d,
    char newtag[ETAG_MAX + 1], char *msg, size_t msglen)
{
	char m[ERR_MAX];
	long code = http_get(s, url, etag, d, newtag, m, sizeof(m), NULL);

	if (code == 0)
		snprintf(msg, msglen, "delta chain: %.400s", m);
	return code;
}

/* The length of upstream_filter without "/v1/filter", or 0: not a revcheckd. */
static size_t
api_prefix(const struct sync *s)
{
	const char *u = s->cfg->upstream_filter, *api = "/v1/filter";
	size_t n = strlen(u);

	return n > strlen(api) && strcmp(u + n - strlen(api), api) == 0 ?
	    n - strlen(api) : 0;
}

/*
 * An upstream that is a revcheckd (upstream_filter ends in /v1/filter):
 * a HEAD names the version in service (an unchanged one costs its
 * headers, a 304), and the bytes come from /v1/filter/V, a name whose
 * content never changes, which a cache tier keeps for good. Returns 0
 * when done (the outcome recorded), -1 when the upstream does not
 * answer so (no HEAD, no version, no /v1/filter/V: an older one, or a
 * proxy): the plain GET does it.
 */
static int
sync_named(struct sync *s, const char *etag)
{
	char url[PATH_MAX + 64], newtag[ETAG_MAX + 1], msg[ERR_MAX];
	struct get_opts o = { .nobody = true, .base = true };
	size_t n = api_prefix(s);
	struct dl d;
	long code;

	if (n == 0 || n > PATH_MAX)
		return -1;
	code = http_get(s, s->cfg->upstream_filter, etag, &d, newtag, msg,
	    sizeof(msg), &o);
	free(d.p);
	if (code == 0) {
		fail(s, "download_failed", msg);
		return 0;
	}
	if ((code == 304 && etag[0] != '\0') || (code == 200 &&
	    newtag[0] != '\0' && strcmp(newtag, etag) == 0)) {
		note_not_modified(s);
		succeed(s, "not_modified", NULL);
		return 0;
	}
	if (code != 200 || o.version == 0)
		return -1;
	snprintf(url, sizeof(url), "%.*s/v1/filter/%llu", (int)n,
	    s->cfg->upstream_filter, (unsigned long long)o.version);
	memset(&o, 0, sizeof(o));
	o.base = true;
	if ((code = http_get(s, url, "", &d, newtag, msg, sizeof(msg),
	    &o)) != 200) {
		free(d.p);
		return -1;
	}
	install(s, d.p, d.len, newtag);	/* takes d.p */
	return 0;
}

static void
sync_once(struct sync *s)
{
	char etag[ETAG_MAX + 1], newtag[ETAG_MAX + 1], hdr[ETAG_MAX + 32];
	char ebuf[CURL_ERROR_SIZE], msg[ERR_MAX];
	struct curl_slist *hl = NULL;
	curl_off_t body = 0;
	struct dl d;
	CURLcode cc;
	long code = 0, head = 0;

	memset(&d, 0, sizeof(d));
	d.max = s->cfg->max_download;
	pthread_mutex_lock(&s->mu);
	s->attempts++;
	s->last_attempt = util_now();
	s->base_due = false;
	memcpy(etag, s->etag, sizeof(etag));
	pthread_mutex_unlock(&s->mu);
	if (sync_named(s, etag) == 0)
		return;
	if (etag[0] != '\0') {
		snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag);
		if ((hl = curl_slist_append(NULL, hdr)) == NULL) {
			fail(s, "download_failed", "out of memory");
			return;
		}
	}
	ebuf[0] = '\0';
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, &d);
	curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, ebuf);
	cc = curl_easy_perform(s->curl);
	curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(s->curl, CURLINFO_SIZE_DOWNLOAD_T, &body);
		curl_easy_getinfo(s->curl, CURLINFO_HEADER_SIZE, &head);
		pthread_mutex_lock(&s->mu);
		s->sync_bytes += (uint64_t)body + (uint64_t)head;
		pthread_mutex_unlock(&s->mu);
	}
	if (cc == CURLE_FILESIZE_EXCEEDED || d.too_big) {
		snprintf(msg, sizeof(msg), "download larger than max_download "
		    "(%llu bytes); aborted",
		    (unsigned long long)s->cfg->max_download);
		fail(s, "too_large", msg);
		goto out;
	}
	if (cc != CURLE_OK) {
		/* The error buffer is the more precise text when curl fills it. */
		snprintf(msg, sizeof(msg), "%.300s", ebuf[0] != '\0' ? ebuf :
		    curl_easy_strerror(cc));
		fail(s, "download_failed", msg);
		goto out;
	}
	if (code == 304 && etag[0] != '\0') {
		note_not_modified(s);
		succeed(s, "not_modified", NULL);
		goto out;
	}
	if (code != 200) {
		snprintf(msg, sizeof(msg), "HTTP %ld from upstream", code);
		fail(s, "download_failed", msg);
		goto out;
	}
	read_etag(s->curl, newtag, sizeof(newtag));
	install(s, d.p, d.len, newtag);	/* takes d.p */
	d.p = NULL;
out:
	free(d.p);
}

/* A downloaded bundle as a delta source: its pieces by seq, and the head. */
#define SYNC_BUNDLE_MAX	4096	/* files in one bundle */
#define SYNC_PUSH_FILES	64	/* deltas fetched one by one; more: a bundle */
struct bundle {
	const unsigned char *p;
	size_t		 offs[SYNC_BUNDLE_MAX];
	size_t		 lens[SYNC_BUNDLE_MAX];
	int		 n;
};

static int
bundle_src(void *arg, uint64_t seq, unsigned char **buf, size_t *len,
    char *err, size_t errlen)
{
	const struct bundle *b = arg;
	const unsigned char *q;
	int i;

	(void)err;
	(void)errlen;
	for (i = 0; i < b->n; i++) {
		q = b->p + b->offs[i];
		/* kind at 10, seq at 56 (docs/FORMAT.md 6.1); parsed later. */
		if (seq == DELTA_SEQ_HEAD ? q[10] != DELTA_KIND_HEAD :
		    (q[10] != DELTA_KIND_DELTA || util_get_le64(q + 56) != seq))
			continue;
		if ((*buf = malloc(b->lens[i])) == NULL)
			return -1;
		memcpy(*buf, q, b->lens[i]);
		*len = b->lens[i];
		return 1;
	}
	return 0;
}

/*
 * Where the chain is, beside upstream_filter: an origin's /v1/delta (1,
 * out is the URL for what follows cur), a static copy of the output
 * directory (2, out is the URL of the pair's directory, ".../current"),
 * or nowhere (0).
 */
static int
chain_url(const struct sync *s, const struct snapshot *cur, char *out,
    size_t cap)
{
	const char *u = s->cfg->upstream_filter, *api = "/v1/filter",
	    *file = "/" PUBLISH_FILTER_NAME;
	size_t n = strlen(u);
	int w;

	if (n >= strlen(api) && strcmp(u + n - strlen(api), api) == 0) {
		w = snprintf(out, cap, "%.*s/v1/delta?base=%llu&after=%llu",
		    (int)(n - strlen(api)), u,
		    (unsigned long long)cur->version,
		    (unsigned long long)cur->pos.seq);
		if (w > 0 && (size_t)w < cap && s->cfg->upstream_wait > 0)
			w += snprintf(out + w, cap - (size_t)w,
			    "&wait=%lld&head_only=1",
			    (long long)s->cfg->upstream_wait);
		return w > 0 && (size_t)w < cap ? 1 : 0;
	}
	if (n >= strlen(file) && strcmp(u + n - strlen(file), file) == 0) {
		w = snprintf(out, cap, "%.*s", (int)(n - strlen(file)), u);
		return w > 0 && (size_t)w < cap ? 2 : 0;
	}
	return 0;
}

/*
 * A static copy of the output directory: the head first (an idle chain
 * costs a 304), then each delta file after the one in service up to the
 * seq the head names (never trusted: the walk verifies everything), back
 * to back in d as /v1/delta would serve them. Returns the HTTP status of
 * the head; 200 with d holding the bundle.
 */
static long
chain_get_static(struct sync *s, const char *dir, uint64_t after,
    const char *etag, struct dl *d, char newtag[ETAG_MAX + 1], char *msg,
    size_t msglen)
{
	char url[PATH_MAX + 128], name[DELTA_NAME_LEN + 1], t2[ETAG_MAX + 1];
	struct dl head, one;
	uint64_t seq, last;
	long code;

	if (strlen(dir) > PATH_MAX) {
		snprintf(msg, msglen, "delta chain: URL too long");
		memset(d, 0, sizeof(*d));
		return 0;
	}
	snprintf(url, sizeof(url), "%s/" DELTA_DIR "/" DELTA_HEAD_NAME, dir);
	code = chain_get(s, url, etag, &head, newtag, msg, msglen);
	if (code != 200 || head.len < DELTA_HDR_LEN + SIGN_SIG_LEN) {
		free(head.p);
		memset(d, 0, sizeof(*d));
		return code == 200 ? 404 : code;
	}
	last = util_get_le64(head.p + 56);	/* the head's seq, 6.1 */
	if (last > after + SYNC_BUNDLE_MAX - 1)
		last = after + SYNC_BUNDLE_MAX - 1;
	*d = head;
	head.p = NULL;
	for (seq = after + 1; seq <= last; seq++) {
		delta_file_name(name, seq);
		snprintf(url, sizeof(url), "%s/" DELTA_DIR "/%s", dir, name);
		if (chain_get(s, url, "", &one, t2, msg, msglen) != 200 ||
		    util_buf_append(&d->p, &d->len, &d->cap, one.p, one.len,
		    s->cfg->max_download) != 0) {
			free(one.p);
			break;	/* the walk stops where the files stop */
		}
		free(one.p);
	}
	msg[0] = '\0';
	return 200;
}

/*
 * The long-poll of a revcheckd upstream (url asks for the head alone,
 * wait set): held there until something is new for this node, then its
 * head; the deltas it names come from their immutable names
 * /v1/delta/BASE/SEQ (a cache tier keeps them), or, far behind, as one
 * bundle. d holds the head first, then the deltas, as a bundle; *named
 * the seq the head names (0: none). An upstream that does not hold
 * requests (no X-Revcheck-Wait in its answer) ignored the long-poll's
 * parameters and sent the bundle itself: *held false.
 */
static long
chain_get_push(struct sync *s, const char *url, uint64_t base,
    uint64_t after, const char *etag, struct dl *d,
    char newtag[ETAG_MAX + 1], char *msg, size_t msglen, bool *held,
    uint64_t *named)
{
	struct get_opts o = { .wait = (long)s->cfg->upstream_wait };
	char m[ERR_MAX], furl[PATH_MAX + 96], t2[ETAG_MAX + 1];
	size_t n = api_prefix(s);
	struct dl one;
	uint64_t last, k;
	long code;

	code = http_get(s, url, etag, d, newtag, m, sizeof(m), &o);
	*held = o.held;
	/*
	 * What the upstream says it serves (unsigned: it only decides
	 * whether this answer's ETag may be kept, chain_caught_up).
	 */
	*named = code == 200 ? o.seq : 0;
	if (code == 0)
		snprintf(msg, msglen, "delta chain: %.400s", m);
	if (code != 200 || !o.held || d->len < DELTA_HDR_LEN + SIGN_SIG_LEN ||
	    d->p[10] != DELTA_KIND_HEAD || n == 0 || n > PATH_MAX)
		return code;	/* deltas (no head yet), or refused by the walk */
	last = util_get_le64(d->p + 56);	/* FORMAT.md 6.1 */
	if (last > *named)
		*named = last;
	if (last <= after)
		return code;
	if (last - after > SYNC_PUSH_FILES) {
		snprintf(furl, sizeof(furl), "%.*s/v1/delta?base=%llu&after=%llu",
		    (int)n, s->cfg->upstream_filter, (unsigned long long)base,
		    (unsigned long long)after);
		if (chain_get(s, furl, "", &one, t2, msg, msglen) == 200 &&
		    util_buf_append(&d->p, &d->len, &d->cap, one.p, one.len,
		    s->cfg->max_download) != 0)
			snprintf(msg, msglen, "delta chain: larger than "
			    "max_download");
		free(one.p);
		return code;
	}
	for (k = after + 1; k <= last; k++) {
		snprintf(furl, sizeof(furl), "%.*s/v1/delta/%llu/%llu", (int)n,
		    s->cfg->upstream_filter, (unsigned long long)base,
		    (unsigned long long)k);
		if (chain_get(s, furl, "", &one, t2, msg, msglen) != 200 ||
		    util_buf_append(&d->p, &d->len, &d->cap, one.p, one.len,
		    s->cfg->max_download) != 0) {
			free(one.p);
			break;	/* the walk stops where the files stop */
		}
		free(one.p);
	}
	return code;
}

/*
 * True when the node has everything the fetched head names, so that its
 * ETag may make the next fetch a 304: from a static host the head comes
 * first and the delta files after it may have failed to arrive, and so
 * may the files a long-poll's head names (named).
 */
static bool
chain_caught_up(struct sync *s, int mode, const struct dl *d, uint64_t named)
{
	struct snapshot *cur;
	uint64_t want;
	bool ok;

	if (named != 0)
		want = named;
	else if (mode != 2 || d->len < DELTA_HDR_LEN)
		return true;
	else
		want = util_get_le64(d->p + 56);
	if ((cur = snapshot_acquire(s->sl)) == NULL)
		return false;
	ok = cur->pos.seq >= want;
	snapshot_release(cur);
	return ok;
}

/*
 * True, with msg saying so, while a verified head names deltas on the
 * base in service above the chain applied (the lag clock runs): the
 * ETag is then not kept, so the next fetch asks again instead of a 304.
 */
static bool
chain_lagging(struct sync *s, char *msg, size_t msglen)
{
	struct snapshot *cur;
	uint64_t seq = atomic_load(&s->sl->chain_top_seq);
	bool lag = false;

	if (atomic_load(&s->sl->chain_seen_at) == 0 ||
	    (cur = snapshot_acquire(s->sl)) == NULL)
		return false;
	if (cur->version == atomic_load(&s->sl->chain_seen_base) &&
	    cur->pos.seq < seq) {
		lag = true;
		snprintf(msg, msglen, "delta chain: a verified head names "
		    "delta %llu of base %llu, only %llu applied (%s)",
		    (unsigned long long)seq, (unsigned long long)cur->version,
		    (unsigned long long)cur->pos.seq, s->cfg->max_lag > 0 ?
		    "stale: chain_lag once that lasts max_lag" :
		    "max_lag is off");
	}
	snapshot_release(cur);
	return lag;
}

/* Splits the bundle d and applies it; keeps newtag once caught up. */
static void
chain_apply_bundle(struct sync *s, int mode, const char *url, struct dl *d,
    const char *newtag, uint64_t named, char *msg, size_t msglen)
{
	struct bundle *b;

	if ((b = calloc(1, sizeof(*b))) == NULL) {
		snprintf(msg, msglen, "out of memory");
		return;
	}
	if ((b->n = delta_bundle_split(d->p, d->len, b->offs, b->lens,
	    SYNC_BUNDLE_MAX, msg, msglen)) >= 0) {
		b->p = d->p;
		/* Refusals are logged and counted by the loader. */
		if (loader_apply_chain(s->l, s->sl, bundle_src, b, url) != -1 &&
		    chain_caught_up(s, mode, d, named) &&
		    !chain_lagging(s, msg, msglen)) {
			pthread_mutex_lock(&s->mu);
			snprintf(s->chain_etag, sizeof(s->chain_etag), "%s",
			    newtag);
			pthread_mutex_unlock(&s->mu);
		}
	}
	free(b);
}

/*
 * Fetches the chain after what is in service, from the origin's
 * /v1/delta (a long-poll it holds until something is new, with
 * upstream_wait) or a static copy of the output directory
 * (If-None-Match: an idle chain costs a 304), and applies it through the
 * loader's one rule (loader_apply_chain). A 409 from an origin means it
 * moved to another base: the base sync fetches it. Returns 1 when the
 * upstream held the request (push: ask again at once), 0 when it
 * answered at once or there is no chain to ask for (poll: wait
 * sync_interval), -1 when the transfer failed, the answer was 500 or
 * more, or a revcheckd upstream has no chain.
 */
static int
sync_chain(struct sync *s)
{
	char url[PATH_MAX + 96], etag[ETAG_MAX + 1], newtag[ETAG_MAX + 1];
	char msg[ERR_MAX];
	struct snapshot *cur;
	struct dl d;
	uint64_t after, base, named = 0;
	long code;
	int mode;
	bool held = false;

	if ((cur = snapshot_acquire(s->sl)) == NULL)
		return 0;
	mode = chain_url(s, cur, url, sizeof(url));
	after = cur->pos.seq;
	base = cur->version;
	snapshot_release(cur);
	if (mode == 0)
		return 0;
	pthread_mutex_lock(&s->mu);
	memcpy(etag, s->chain_etag, sizeof(etag));
	s->chain_fetches++;
	pthread_mutex_unlock(&s->mu);
	msg[0] = '\0';
	if (mode == 1 && s->cfg->upstream_wait > 0)
		code = chain_get_push(s, url, base, after, etag, &d, newtag,
		    msg, sizeof(msg), &held, &named);
	else if (mode == 1)
		code = chain_get(s, url, etag, &d, newtag, msg, sizeof(msg));
	else
		code = chain_get_static(s, url, after, etag, &d, newtag, msg,
		    sizeof(msg));
	if (code == 409) {
		pthread_mutex_lock(&s->mu);
		s->base_due = true;	/* another base upstream */
		pthread_mutex_unlock(&s->mu);
		if (!held)
			sync_kick(s);
	} else if (code != 0 && code != 200 && code != 304 && code != 404)
		snprintf(msg, sizeof(msg), "delta chain: HTTP %ld", code);
	else if (code == 200)
		chain_apply_bundle(s, mode, url, &d, newtag, named, msg,
		    sizeof(msg));
	if (msg[0] == '\0')
		(void)chain_lagging(s, msg, sizeof(msg));
	log_debug("sync: chain after %llu: HTTP %ld%s, head names %llu, "
	    "%zu bytes", (unsigned long long)after, code, held ? " (held)" :
	    "", (unsigned long long)named, d.len);
	pthread_mutex_lock(&s->mu);
	if (msg[0] != '\0' && strcmp(msg, s->chain_error) != 0)
		log_warn("%s", msg);
	memcpy(s->chain_error, msg, sizeof(s->chain_error));
	s->push_held = held;
	pthread_mutex_unlock(&s->mu);
	free(d.p);
	/*
	 * An upstream with no chain (yet: a node that just started) is
	 * asked again soon, then every sync_interval (round_wait).
	 */
	if (code == 0 || code >= 500 || (code == 404 && mode == 1 &&
	    s->cfg->upstream_wait > 0))
		return -1;
	return held ? 1 : 0;
}

/* What the node serves, to tell a round that changed it. */
static void
served(struct sync *s, uint64_t out[3])
{
	struct snapshot *cur;

	out[0] = out[1] = out[2] = 0;
	if ((cur = snapshot_acquire(s->sl)) == NULL)
		return;
	out[0] = cur->version;
	out[1] = cur->pos.seq;
	out[2] = (uint64_t)cur->info->issued_at;
	snapshot_release(cur);
}

/*
 * Seconds to wait before the next round, under mu. A held long-poll
 * goes again at once. A failed one (the transfer, or an answer of 500 or
 * more: an upstream stopping says 503), or one that came back at once
 * with nothing new (the upstream would not hold it: over its
 * longpoll_max, or a base this node refuses), goes again after 1, 2, 4,
 * ... seconds up to sync_interval, so that a restarted upstream is
 * found again within moments. An upstream that does not hold requests
 * is polled every sync_interval.
 */
static double
round_wait(struct sync *s, int rc, bool base_synced, double took,
    bool changed)
{
	double w = (double)s->cfg->sync_interval, b;

	s->push_rounds++;
	if (s->base_due && !base_synced && rc != -1)
		return 0;	/* a 409: the new base first */
	if (rc == 1 && (took >= 1.0 || changed)) {
		s->push_fails = 0;
		return 0;
	}
	if (rc == 0 || s->cfg->upstream_wait == 0) {
		s->push_fails = 0;
		return w;
	}
	if (s->push_fails < 16)
		s->push_fails++;
	b = (double)(1u << (s->push_fails - 1));
	return b < w ? b : w;
}

static void *
sync_main(void *arg)
{
	struct sync *s = arg;
	struct timespec dl;
	uint64_t before[3], after[3];
	double t0, wait;
	bool base;
	int rc;

	(void)pthread_setname_np(pthread_self(), "revcheckd-sync");
	loader_lower_priority(s->cfg, "sync");
	pthread_mutex_lock(&s->mu);
	s->base_due = true;
	while (!s->stop) {
		s->kick = false;
		/* Pushed, the base is fetched when a 409 says it moved. */
		base = s->base_due || !s->push_held;
		pthread_mutex_unlock(&s->mu);
		t0 = util_monotime();
		served(s, before);
		if (base)
			sync_once(s);
		rc = sync_chain(s);
		served(s, after);
		pthread_mutex_lock(&s->mu);
		wait = round_wait(s, rc, base, util_monotime() - t0,
		    memcmp(before, after, sizeof(before)) != 0);
		if (wait <= 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += (time_t)wait;
		while (!s->stop && !s->kick)
			if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) ==
			    ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static CURL *
download_handle(struct sync *s)
{
	const char *url = s->cfg->upstream_filter;
	const char *proto = s->cfg->upstream_insecure_http ? "http,https" :
	    "https";
	CURL *h;

	if ((h = curl_easy_init()) == NULL)
		return NULL;
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, proto) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, proto) !=
	    CURLE_OK ||
	    (s->cfg->upstream_ca_file != NULL &&
	    curl_easy_setopt(h, CURLOPT_CAINFO, s->cfg->upstream_ca_file) !=
	    CURLE_OK) ||
	    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)SYNC_MAX_REDIRS) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
	    (long)s->cfg->sync_connect_timeout) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)s->cfg->sync_timeout) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
	    (long)SYNC_LOW_SPEED_TIME) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)s->cfg->max_download) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION,
	    upstream_xfer_abort) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &s->abort) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_USERAGENT,
	    "revcheckd/" REVCHECK_VERSION " (edge sync)") != CURLE_OK) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}

/* The filter kept by an earlier run, when it is still acceptable. */
static void
load_persisted(struct sync *s)
{
	struct snapshot *cur;

	if (access(s->persist, F_OK) == -1)
		return;
	if (loader_load_files(s->l, s->sl, s->persist, NULL) != 0)
		return;
	if ((cur = snapshot_acquire(s->sl)) == NULL)
		return;
	log_info("edge: serving the persisted filter version %llu from %s "
	    "until upstream answers", (unsigned long long)cur->version,
	    s->persist);
	snprintf(s->etag, sizeof(s->etag), "%s", cur->etag);
	snapshot_release(cur);
}

struct sync *
sync_start(const struct config *c, struct loader *l,
    struct snapshot_slot *sl, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	struct upstream_limits lim;
	struct sync *s;
	int n;

	if (c->upstream_filter == NULL) {
		snprintf(err, errlen, "upstream_filter: not set");
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "libcurl: global init failed");
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		curl_global_cleanup();
		return NULL;
	}
	s->cfg = c;
	s->l = l;
	s->sl = sl;
	s->result = "pending";
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	n = snprintf(s->dir, sizeof(s->dir), "%s", c->state_dir);
	if (n < 0 || (size_t)n >= sizeof(s->dir)) {
		snprintf(err, errlen, "state_dir: path too long");
		goto fail;
	}
	if (util_path_join(s->persist, sizeof(s->persist), c->state_dir,
	    SYNC_PERSIST_NAME) != 0) {
		snprintf(err, errlen, "state_dir: path too long");
		goto fail;
	}
	if ((s->curl = download_handle(s)) == NULL) {
		snprintf(err, errlen, "upstream_filter: libcurl refused the "
		    "settings for %.200s", c->upstream_filter);
		goto fail;
	}
	lim.timeout = c->upstream_timeout;
	lim.connect_timeout = c->upstream_connect_timeout;
	lim.retries = c->upstream_retries;
	lim.ca_file = c->upstream_ca_file;
	lim.concurrency = c->upstream_concurrency;
	lim.max_waiting = c->upstream_max_waiting;
	lim.allow_http = c->upstream_insecure_http;
	if (c->upstream_check != NULL &&
	    (s->up = upstream_new(c->upstream_check, &lim, err, errlen)) == NULL)
		goto fail;
	load_persisted(s);
	if (s->up != NULL)
		check_set_authority(upstream_check, s->up);
	if ((n = pthread_create(&s->th, NULL, sync_main, s)) != 0) {
		snprintf(err, errlen, "sync thread: %s", strerror(n));
		check_set_authority(NULL, NULL);
		goto fail;
	}
	log_info("edge: syncing from %s every %llds (max_download %llu, "
	    "max_lag %llds, sync_timeout %llds); positives to %s",
	    c->upstream_filter, (long long)c->sync_interval,
	    (unsigned long long)c->max_download, (long long)c->max_lag,
	    (long long)c->sync_timeout, c->upstream_check != NULL ?
	    c->upstream_check : "nobody (503 authority_unavailable)");
	if (c->upstream_insecure_http)
		log_warn("edge: upstream_insecure_http is set: plain http:// "
		    "upstreams are allowed, and anyone on their path can forge "
		    "the filter's freshness and the authority's answers");
	if (c->upstream_check != NULL)
		log_info("edge: upstream_timeout %llds, "
		    "upstream_connect_timeout %llds, upstream_retries %u",
		    (long long)c->upstream_timeout,
		    (long long)c->upstream_connect_timeout, c->upstream_retries);
	return s;
fail:
	upstream_free(s->up);
	if (s->curl != NULL)
		curl_easy_cleanup(s->curl);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	curl_global_cleanup();
	return NULL;
}

void
sync_stop(struct sync *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->abort, true);
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	check_set_authority(NULL, NULL);
	upstream_free(s->up);
	curl_easy_cleanup(s->curl);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	curl_global_cleanup();
}

void
sync_set_limits(struct sync *s, const struct config *c)
{
	struct upstream_limits lim;

	if (s == NULL || s->up == NULL)
		return;
	memset(&lim, 0, sizeof(lim));
	lim.timeout = c->upstream_timeout;
	lim.connect_timeout = c->upstream_connect_timeout;
	lim.retries = c->upstream_retries;
	lim.max_waiting = c->upstream_max_waiting;
	upstream_set_limits(s->up, &lim);
}

int
sync_settle(void *arg, struct check_settle *st, void (*done)(void *),
    void *done_arg)
{
	struct sync *s = arg;

	return s->up != NULL ? upstream_settle(s->up, st, done, done_arg) : -1;
}

const char *
sync_degraded(void *arg)
{
	struct sync *s = arg;

	return s->up != NULL ? upstream_degraded(s->up) : NULL;
}

void
sync_quiesce(struct sync *s)
{
	if (s != NULL)
		upstream_quiesce(s->up);
}

void
sync_kick(struct sync *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->kick = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void
sync_status_json(cJSON *root, void *arg)
{
	struct sync *s = arg;
	cJSON *o = cJSON_AddObjectToObject(root, "sync");
	int64_t at;

	pthread_mutex_lock(&s->mu);
	json_add_str(o, "upstream_filter", s->cfg->upstream_filter);
	json_add_i64(o, "interval_seconds", s->cfg->sync_interval);
	json_add_u64(o, "max_download", s->cfg->max_download);
	json_add_i64(o, "max_lag_seconds", s->cfg->max_lag);
	json_add_time(o, "last_attempt", s->last_attempt);
	json_add_time(o, "last_success", s->last_success);
	json_add_str(o, "result", s->result);
	json_add_opt(o, "error", s->error);
	if (s->seen != 0)
		json_add_u64(o, "upstream_version_seen", s->seen);
	else
		cJSON_AddNullToObject(o, "upstream_version_seen");
	json_add_time(o, "newer_version_seen_at",
	    atomic_load(&s->sl->newer_seen_at));
	if ((at = atomic_load(&s->sl->chain_seen_at)) != 0)
		json_add_u64(o, "delta_seq_seen",
		    atomic_load(&s->sl->chain_top_seq));
	else
		cJSON_AddNullToObject(o, "delta_seq_seen");
	json_add_time(o, "newer_delta_seen_at", at);
	json_add_opt(o, "etag", s->etag);
	json_add_u64(o, "attempts", s->attempts);
	json_add_u64(o, "failures", s->failures);
	json_add_u64(o, "consecutive_failures", s->consecutive);
	json_add_u64(o, "updates", s->updates);
	json_add_u64(o, "delta_fetches", s->chain_fetches);
	json_add_u64(o, "delta_bytes", s->chain_bytes);
	json_add_u64(o, "bytes", s->sync_bytes);
	/* push: the upstream held the last request (a long-poll). */
	json_add_str(o, "mode", s->push_held ? "push" : "poll");
	json_add_i64(o, "upstream_wait_seconds", s->cfg->upstream_wait);
	json_add_opt(o, "delta_error", s->chain_error);
	json_add_str(o, "persisted", s->persist);
	cJSON_AddBoolToObject(o, "insecure_http",
	    s->cfg->upstream_insecure_http);
	pthread_mutex_unlock(&s->mu);
	if (s->up != NULL)
		upstream_status(s->up, root);
}

static void
series(struct sbuf *b, const char *name, const char *type, const char *help,
    double v)
{
	sbuf_addf(b, "# HELP revcheckd_%s %s\n# TYPE revcheckd_%s %s\n"
	    "revcheckd_%s %.17g\n", name, help, name, type, name, v);
}

void
sync_metrics(struct sbuf *b, void *arg)
{
	struct sync *s = arg;
	uint64_t att, fails, cons, upd, seen, cfetch, cbytes, sbytes;
	bool push;
	int64_t last_att, last_ok;

	pthread_mutex_lock(&s->mu);
	att = s->attempts;
	fails = s->failures;
	cons = s->consecutive;
	upd = s->updates;
	cfetch = s->chain_fetches;
	cbytes = s->chain_bytes;
	sbytes = s->sync_bytes;
	push = s->push_held;
	seen = s->seen;
	last_att = s->last_attempt;
	last_ok = s->last_success;
	pthread_mutex_unlock(&s->mu);
	series(b, "sync_attempts_total", "counter", "Filter syncs attempted.",
	    (double)att);
	series(b, "sync_failures_total", "counter", "Filter syncs that "
	    "failed (download errors and refused files).", (double)fails);
	series(b, "sync_updates_total", "counter", "Filter syncs that "
	    "installed a new filter.", (double)upd);
	series(b, "sync_delta_fetches_total", "counter", "Delta chain "
	    "requests to the origin's /v1/delta.", (double)cfetch);
	series(b, "sync_delta_bytes_total", "counter", "Bytes of those "
	    "replies on the wire (headers and bodies, 304s included).",
	    (double)cbytes);
	series(b, "sync_bytes_total", "counter", "Bytes of every sync "
	    "reply on the wire (base and chain, headers and bodies).",
	    (double)sbytes);
	series(b, "sync_push", "gauge", "1 when the upstream held the last "
	    "chain request (long-poll), 0 when polling.", push ? 1.0 : 0.0);
	series(b, "sync_consecutive_failures", "gauge", "Failed syncs since "
	    "the last good one.", (double)cons);
	series(b, "sync_last_attempt_timestamp_seconds", "gauge", "When the "
	    "last sync started (0: never).", (double)last_att);
	series(b, "sync_last_success_timestamp_seconds", "gauge", "When the "
	    "last sync succeeded (0: never).", (double)last_ok);
	series(b, "sync_upstream_version_seen", "gauge", "Highest verified "
	    "version seen upstream (0: none).", (double)seen);
	series(b, "sync_newer_version_pending", "gauge", "1 while a newer "
	    "verified version is known upstream but not loaded.",
	    atomic_load(&s->sl->newer_seen_at) != 0 ? 1.0 : 0.0);
	series(b, "sync_newer_delta_pending", "gauge", "1 while a verified "
	    "head names deltas on the base in service that are not applied.",
	    atomic_load(&s->sl->chain_seen_at) != 0 ? 1.0 : 0.0);
	if (s->up != NULL)
		upstream_metrics(s->up, b);
}
