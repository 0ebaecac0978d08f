/* upstream.c - the edge's authority: filter positives settled by the origin's /v1/check */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "log.h"
#include "metrics.h"
#include "upstream.h"
#include "util.h"

#define LOG_EVERY	10	/* seconds between two failure log lines */
#define MAX_THREADS	64
#define PROBE_FIRST	1.0	/* seconds from degraded to the first probe */
#define PROBE_MAX	5.0	/* the probe's backoff stops doubling here */
#define PROBE_ID	"revcheckd-probe"
#define PROBE_SCOPE	"default"

/* One request's keys waiting for a pool thread. */
struct job {
	struct check_settle *st;
	void		(*done)(void *);
	void		*arg;
	struct job	*next;
};

struct upstream {
	char		*url;
	char		*ca_file;	/* lim.ca_file points here */
	struct upstream_limits lim;	/* max_waiting: under mu */
	/* lim's timeout, connect_timeout and retries: SIGHUP changes them. */
	_Atomic int64_t	 a_timeout;
	_Atomic int64_t	 a_connect;
	_Atomic unsigned a_retries;
	struct curl_slist *hdrs;	/* shared, read-only once built */
	pthread_mutex_t	 mu;		/* guards everything below but the atomics */
	pthread_cond_t	 cv;		/* a job queued, or quiescing */
	pthread_cond_t	 idle_cv;	/* a job finished */
	struct job	*head, *tail;
	unsigned	 waiting;	/* requests queued or settling */
	bool		 stopping;	/* quiesced: refuse, abort transfers */
	pthread_t	 th[MAX_THREADS];
	unsigned	 nth;
	char		 last_error[256];
	_Atomic bool	 abort;		/* read by transfers in flight */
	_Atomic uint64_t answered;
	_Atomic uint64_t failed;
	_Atomic uint64_t behind;
	_Atomic uint64_t retries;
	_Atomic uint64_t requests;	/* HTTP requests to the origin */
	_Atomic uint64_t refused_busy;
	_Atomic int	 degraded;	/* 0, 1 unavailable, 2 behind */
	_Atomic bool	 lost;		/* the last call got no answer */
	_Atomic int64_t	 last_log;
	/* The background probe (probe_main), on a thread of its own. */
	_Atomic uint64_t mine;		/* highest filter version asked for */
	_Atomic uint64_t probes;	/* probe requests sent */
	pthread_cond_t	 probe_cv;	/* degraded, or stopping (under mu) */
	pthread_t	 probe_th;
	bool		 probe_running;
	struct curl_slist *probe_hdrs;	/* hdrs and X-Revcheck-Probe */
	struct revkey	 probe_key;
};

/* The reply body, capped at UPSTREAM_MAX_ANSWER. */
struct answer {
	struct sbuf	 b;
	bool		 too_big;
};

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;

	if (len > UPSTREAM_MAX_ANSWER - a->b.len) {
		a->too_big = true;
		return 0;	/* aborts the transfer */
	}
	sbuf_add(&a->b, p, len);
	return sbuf_ok(&a->b) ? len : 0;
}

int
upstream_xfer_abort(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
    curl_off_t un)
{
	_Atomic bool *abort_flag = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(abort_flag) ? 1 : 0;
}

/* A handle with every option that stays the same from one request to the next. */
static CURL *
handle_new(struct upstream *u)
{
	CURL *h;

	if ((h = curl_easy_init()) == NULL)
		return NULL;
	if (curl_easy_setopt(h, CURLOPT_URL, u->url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, u->lim.allow_http ?
	    "http,https" : "https") != CURLE_OK ||
	    (u->lim.ca_file != NULL &&
	    curl_easy_setopt(h, CURLOPT_CAINFO, u->lim.ca_file) !=
	    CURLE_OK) ||
	    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, u->hdrs) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_USERAGENT,
	    "revcheckd/" REVCHECK_VERSION " (edge)") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION,
	    upstream_xfer_abort) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &u->abort) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}

static void
set_error(struct upstream *u, const char *msg)
{
	int64_t now = util_now(), last;

	pthread_mutex_lock(&u->mu);
	snprintf(u->last_error, sizeof(u->last_error), "%s", msg);
	pthread_mutex_unlock(&u->mu);
	if (!atomic_exchange(&u->lost, true)) {
		log_warn("authority lost: upstream check %s: %s (positives "
		    "answer 503)", u->url, msg);
		atomic_store(&u->last_log, now);
		return;
	}
	last = atomic_load(&u->last_log);
	if (now - last >= LOG_EVERY &&
	    atomic_compare_exchange_strong(&u->last_log, &last, now))
		log_warn("upstream check %s: %s (positives answer 503)",
		    u->url, msg);
}

/* true when an id can be asked faithfully as JSON text (UTF-8, no NUL). */
static bool
id_askable(const struct revkey *k, char *idt, size_t *idlen)
{
	*idlen = revkey_id_text(k, idt);
	/*
	 * The origin reads the id as a C string: anything else would ask
	 * about another id, so it is not asked at all.
	 */
	return memchr(idt, '\0', *idlen) == NULL &&
	    util_utf8_valid(idt, *idlen);
}

/*
 * Reads one answer object. It must be about the scope and id asked,
 * carry a known status and the version of the filter it was answered
 * from, and that version must be at least mine: an origin still on an
 * older filter may not know a revocation our filter holds. Returns 0,
 * or -1 with err (r->fail CHECK_FAIL_BEHIND for an older version).
 */
static int
parse_item(const cJSON *obj, const struct revkey *k, const char *idt,
    size_t idlen, uint64_t mine, struct check_result *r, char *err,
    size_t errlen)
{
	const cJSON *st, *sc, *id, *at, *why, *fv;

	r->fail = CHECK_FAIL_UNAVAILABLE;
	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "an answer is not a JSON object");
		return -1;
	}
	if (cJSON_GetObjectItemCaseSensitive(obj, "error") != NULL) {
		snprintf(err, errlen, "the authority could not answer for "
		    "an item");
		return -1;
	}
	st = cJSON_GetObjectItemCaseSensitive(obj, "status");
	sc = cJSON_GetObjectItemCaseSensitive(obj, "scope");
	id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	at = cJSON_GetObjectItemCaseSensitive(obj, "revoked_at");
	why = cJSON_GetObjectItemCaseSensitive(obj, "reason");
	fv = cJSON_GetObjectItemCaseSensitive(obj, "filter_version");
	if (!cJSON_IsString(sc) || !cJSON_IsString(id) ||
	    strcmp(sc->valuestring, k->scope) != 0 ||
	    strlen(id->valuestring) != idlen ||
	    memcmp(id->valuestring, idt, idlen) != 0) {
		snprintf(err, errlen, "the answer is not about the scope and "
		    "id asked");
		return -1;
	}
	if (!cJSON_IsString(st)) {
		snprintf(err, errlen, "the answer has no \"status\"");
		return -1;
	}
	if (!cJSON_IsNumber(fv) || fv->valuedouble < 0 ||
	    fv->valuedouble > 9.0e15 ||
	    fv->valuedouble != (double)(uint64_t)fv->valuedouble) {
		snprintf(err, errlen, "the answer has no \"filter_version\"");
		return -1;
	}
	if ((uint64_t)fv->valuedouble < mine) {
		snprintf(err, errlen, "the authority answered from filter "
		    "version %llu, behind ours (%llu)",
		    (unsigned long long)fv->valuedouble,
		    (unsigned long long)mine);
		r->fail = CHECK_FAIL_BEHIND;
		return -1;
	}
	memset(r, 0, sizeof(*r));
	r->source = CHECK_SRC_AUTHORITATIVE;
	if (strcmp(st->valuestring, "revoked") == 0)
		r->status = CHECK_REVOKED;
	else if (strcmp(st->valuestring, "not_revoked") == 0)
		r->status = CHECK_NOT_REVOKED;
	else if (strcmp(st->valuestring, "not_covered") == 0)
		r->status = CHECK_NOT_COVERED;
	else {
		r->fail = CHECK_FAIL_UNAVAILABLE;
		snprintf(err, errlen, "unknown status in the answer");
		return -1;
	}
	if (r->status == CHECK_REVOKED) {
		if (cJSON_IsString(at) &&
		    util_parse_rfc3339(at->valuestring, &r->revoked_at) == -1)
			r->revoked_at = 0;
		if (cJSON_IsString(why))
			snprintf(r->reason, sizeof(r->reason), "%s",
			    why->valuestring);
	}
	return 0;
}

static void
fail_key(struct check_settle *st, size_t i, enum check_fail f)
{
	memset(&st->res[i], 0, sizeof(st->res[i]));
	st->res[i].fail = f;
	st->rc[i] = -1;
}

/*
 * The batch body for st->keys[from..to): {"items":[{"id":..,"scope":..}]}.
 * A key that cannot be asked by id fails at once; idx[0..*m) are the
 * keys asked, in order. The caller checks q with sbuf_ok().
 */
static void
build_query(struct check_settle *st, size_t from, size_t to, struct sbuf *q,
    size_t *idx, size_t *m)
{
	char idt[REVKEY_ID_TEXT_MAX];
	size_t i, idlen;

	sbuf_adds(q, "{\"items\":[");
	for (i = from; i < to; i++) {
		if (!id_askable(&st->keys[i], idt, &idlen)) {
			fail_key(st, i, CHECK_FAIL_UNAVAILABLE);
			continue;
		}
		sbuf_adds(q, *m > 0 ? ",{\"id\":" : "{\"id\":");
		sbuf_add_jstr(q, idt, idlen);
		sbuf_adds(q, ",\"scope\":");
		sbuf_add_jstr(q, st->keys[i].scope, st->keys[i].scope_len);
		sbuf_adds(q, "}");
		idx[(*m)++] = i;
	}
	sbuf_adds(q, "]}");
}

/*
 * POSTs q to the origin until it answers 200 into a, retrying a transport
 * error or a 5xx while *attempts_left lasts and st->deadline allows.
 * Returns 0, or -1 with msg saying why not (a deadline that passes keeps
 * the last attempt's msg).
 */
static int
post_query(struct upstream *u, CURL *h, const struct check_settle *st,
    const struct sbuf *q, struct answer *a, unsigned *attempts_left,
    char *msg, size_t msglen)
{
	CURLcode cc;
	long code, ms;
	double left, t0;
	bool retry;

	for (;;) {
		left = st->deadline - util_monotime();
		if (left <= 0.001 || atomic_load(&u->abort)) {
			if (msg[0] == '\0')
				snprintf(msg, msglen, "%s", atomic_load(
				    &u->abort) ? "stopping" : "deadline of the "
				    "request passed before the authority "
				    "answered (Timeout)");
			return -1;
		}
		ms = (long)(left * 1000);
		if (ms > (long)atomic_load(&u->a_timeout) * 1000)
			ms = (long)atomic_load(&u->a_timeout) * 1000;
		sbuf_free(&a->b);
		sbuf_init(&a->b, 4096, 0);
		a->too_big = false;
		curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
		    ms < (long)atomic_load(&u->a_connect) * 1000 ? ms :
		    (long)atomic_load(&u->a_connect) * 1000);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)q->len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->p);
		atomic_fetch_add(&u->requests, 1);
		t0 = util_monotime();
		cc = curl_easy_perform(h);
		metrics_observe_authority(util_monotime() - t0);
		code = 0;
		if (cc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		retry = false;
		if (cc != CURLE_OK) {
			if (a->too_big)
				snprintf(msg, msglen, "answer over %d "
				    "bytes", UPSTREAM_MAX_ANSWER);
			else {
				snprintf(msg, msglen, "%s",
				    curl_easy_strerror(cc));
				retry = true;
			}
		} else if (code != 200) {
			snprintf(msg, msglen, "HTTP %ld", code);
			retry = code >= 500;
		} else
			return 0;
		if (!retry || *attempts_left == 0)
			return -1;
		(*attempts_left)--;
		atomic_fetch_add(&u->retries, 1);
	}
}

/*
 * Gives each of the m keys asked (idx) its result from the origin's
 * answer a, or its error. Returns 0, or -1 with msg when a is not one
 * result per key asked (no key is then touched).
 */
static int
apply_answer(struct upstream *u, struct check_settle *st,
    const struct answer *a, const size_t *idx, size_t m, char *msg,
    size_t msglen)
{
	char idt[REVKEY_ID_TEXT_MAX], e[256];
	const cJSON *arr, *it;
	cJSON *root;
	size_t i = 0, idlen;
	int rc = -1;

	root = cJSON_ParseWithLength(a->b.p != NULL ? a->b.p : "", a->b.len);
	arr = cJSON_GetObjectItemCaseSensitive(root, "results");
	if (!cJSON_IsArray(arr) || (size_t)cJSON_GetArraySize(arr) != m) {
		snprintf(msg, msglen, "the answer is not one result per "
		    "item asked");
		goto out;
	}
	cJSON_ArrayForEach(it, arr) {
		size_t k = idx[i++];

		idlen = revkey_id_text(&st->keys[k], idt);
		if (parse_item(it, &st->keys[k], idt, idlen, st->version[k],
		    &st->res[k], e, sizeof(e)) == 0) {
			st->rc[k] = 0;
			atomic_fetch_add(&u->answered, 1);
			continue;
		}
		st->rc[k] = -1;
		if (st->res[k].fail == CHECK_FAIL_BEHIND)
			atomic_fetch_add(&u->behind, 1);
		else
			atomic_fetch_add(&u->failed, 1);
		set_error(u, e);
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/*
 * Asks the origin about st->keys[from..to) in one batch request, with
 * retries, until st->deadline. Every key gets its outcome. Returns true
 * when the origin answered (whatever it said about each key).
 */
static bool
ask_chunk(struct upstream *u, CURL *h, struct check_settle *st, size_t from,
    size_t to, unsigned *attempts_left)
{
	char msg[300] = "";
	size_t idx[UPSTREAM_BATCH], m = 0, i;
	struct answer a;
	struct sbuf q;
	bool answered = false;

	sbuf_init(&q, 64 + (to - from) * 64, 0);
	sbuf_init(&a.b, 4096, 0);
	build_query(st, from, to, &q, idx, &m);
	if (m == 0) {
		answered = true;
		goto out;
	}
	if (!sbuf_ok(&q)) {
		snprintf(msg, sizeof(msg), "out of memory");
		goto fail;
	}
	if (post_query(u, h, st, &q, &a, attempts_left, msg,
	    sizeof(msg)) == -1)
		goto fail;
	answered = true;
	if (apply_answer(u, st, &a, idx, m, msg, sizeof(msg)) == 0)
		goto out;
fail:
	for (i = 0; i < m; i++) {
		fail_key(st, idx[i], CHECK_FAIL_UNAVAILABLE);
		atomic_fetch_add(&u->failed, 1);
	}
	set_error(u, msg);
out:
	sbuf_free(&a.b);
	sbuf_free(&q);
	return answered;
}

/* The probe asks on behalf of the newest filter a request was asked for. */
static void
note_mine(struct upstream *u, uint64_t v)
{
	uint64_t cur = atomic_load(&u->mine);

	while (v > cur && !atomic_compare_exchange_weak(&u->mine, &cur, v))
		;
}

/* Stores the state; a degraded one wakes the probe. */
static void
set_degraded(struct upstream *u, int d)
{
	if (atomic_exchange(&u->degraded, d) == d || d == 0)
		return;
	pthread_mutex_lock(&u->mu);
	pthread_cond_broadcast(&u->probe_cv);
	pthread_mutex_unlock(&u->mu);
}

/* When a request first asked now must have all its answers. */
static double
request_deadline(struct upstream *u)
{
	return util_monotime() + (double)atomic_load(&u->a_timeout) *
	    (atomic_load(&u->a_retries) + 1);
}

/* Settles every key of st without an outcome, in chunks, with h. */
static void
settle_run(struct upstream *u, CURL *h, struct check_settle *st)
{
	unsigned attempts_left = atomic_load(&u->a_retries);
	size_t from, to, first = st->asked, i;
	bool ok = true, behind = false;

	if (st->deadline == 0)
		st->deadline = request_deadline(u);
	for (from = st->asked; from < st->n; from = to) {
		to = st->n - from > UPSTREAM_BATCH ? from + UPSTREAM_BATCH :
		    st->n;
		if (h == NULL) {
			for (; from < to; from++)
				fail_key(st, from, CHECK_FAIL_UNAVAILABLE);
			set_error(u, "cannot set up a request");
			ok = false;
			continue;
		}
		if (!ask_chunk(u, h, st, from, to, &attempts_left))
			ok = false;
	}
	st->asked = st->n;
	for (i = first; i < st->n; i++) {
		if (st->rc[i] == -1 && st->res[i].fail == CHECK_FAIL_BEHIND)
			behind = true;
		note_mine(u, st->version[i]);
	}
	/* Degraded until a request to the origin goes through again. */
	set_degraded(u, !ok ? 1 : behind ? 2 : 0);
	if (ok && atomic_exchange(&u->lost, false))
		log_info("authority back: upstream check %s answers again",
		    u->url);
}

static void *
pool_main(void *arg)
{
	struct upstream *u = arg;
	struct job *j;
	CURL *h = handle_new(u);

	for (;;) {
		pthread_mutex_lock(&u->mu);
		while (u->head == NULL && !(u->stopping && u->nth == 0))
			pthread_cond_wait(&u->cv, &u->mu);
		if ((j = u->head) == NULL) {
			pthread_mutex_unlock(&u->mu);
			break;
		}
		if ((u->head = j->next) == NULL)
			u->tail = NULL;
		pthread_mutex_unlock(&u->mu);
		if (atomic_load(&u->abort))
			check_settle_fail_pending(j->st,
			    CHECK_FAIL_UNAVAILABLE);
		else
			settle_run(u, h, j->st);
		j->done(j->arg);
		free(j);
		pthread_mutex_lock(&u->mu);
		u->waiting--;
		pthread_cond_broadcast(&u->idle_cv);
		pthread_mutex_unlock(&u->mu);
	}
	if (h != NULL)
		curl_easy_cleanup(h);
	return NULL;
}

/*
 * The probe's one question, about a key nobody holds (PROBE_ID in scope
 * PROBE_SCOPE), asked the way a client's positive is (the same URL, body,
 * TLS and timeouts) in one attempt, marked "X-Revcheck-Probe: 1". Returns
 * 0 when the origin answered from a filter at least as new as the newest
 * one a request was asked for, 2 when from an older one, 1 when it gave
 * no clear answer; msg says why for 1 and 2. Counted only as a probe.
 */
static int
probe_ask(struct upstream *u, CURL *h, char *msg, size_t msglen)
{
	static const char body[] = "{\"items\":[{\"id\":\"" PROBE_ID
	    "\",\"scope\":\"" PROBE_SCOPE "\"}]}";
	struct check_result r;
	struct answer a;
	const cJSON *arr;
	cJSON *root = NULL;
	CURLcode cc;
	long code = 0, ms, cms;
	int rc = 1;

	ms = (long)atomic_load(&u->a_timeout) * 1000;
	cms = (long)atomic_load(&u->a_connect) * 1000;
	sbuf_init(&a.b, 4096, 0);
	a.too_big = false;
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, cms < ms ? cms : ms);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(sizeof(body) - 1));
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	atomic_fetch_add(&u->probes, 1);
	cc = curl_easy_perform(h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK) {
		snprintf(msg, msglen, "%s", a.too_big ? "answer too large" :
		    curl_easy_strerror(cc));
		goto out;
	}
	if (code != 200) {
		snprintf(msg, msglen, "HTTP %ld", code);
		goto out;
	}
	root = cJSON_ParseWithLength(a.b.p != NULL ? a.b.p : "", a.b.len);
	arr = cJSON_GetObjectItemCaseSensitive(root, "results");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != 1) {
		snprintf(msg, msglen, "the answer is not one result per item "
		    "asked");
		goto out;
	}
	if (parse_item(cJSON_GetArrayItem(arr, 0), &u->probe_key, PROBE_ID,
	    sizeof(PROBE_ID) - 1, atomic_load(&u->mine), &r, msg,
	    msglen) == 0)
		rc = 0;
	else if (r.fail == CHECK_FAIL_BEHIND)
		rc = 2;
out:
	cJSON_Delete(root);
	sbuf_free(&a.b);
	return rc;
}

/* The state a probe's outcome (probe_ask) leaves, as a request's would. */
static void
probe_result(struct upstream *u, int got, const char *msg)
{
	int behind = 2;

	if (got == 1) {
		/* Behind becomes unavailable; a request that got through
		 * meanwhile (0) is not undone by a probe that did not. */
		(void)atomic_compare_exchange_strong(&u->degraded, &behind, 1);
		set_error(u, msg);
		return;
	}
	if (got == 2) {
		pthread_mutex_lock(&u->mu);
		snprintf(u->last_error, sizeof(u->last_error), "%s", msg);
		pthread_mutex_unlock(&u->mu);
	}
	atomic_store(&u->degraded, got == 2 ? 2 : 0);
	if (atomic_exchange(&u->lost, false))
		log_info("authority back: upstream check %s answers again "
		    "(background probe)%s", u->url, got == 2 ? ", from a "
		    "filter behind ours" : "");
}

static CURL *
probe_handle(struct upstream *u)
{
	CURL *h = handle_new(u);

	if (h != NULL && (curl_easy_setopt(h, CURLOPT_HTTPHEADER,
	    u->probe_hdrs) != CURLE_OK || curl_easy_setopt(h,
	    CURLOPT_USERAGENT, "revcheckd/" REVCHECK_VERSION
	    " (edge probe)") != CURLE_OK)) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	return h;
}

/*
 * While the authority is degraded (unavailable or behind), asks it again
 * in the background: PROBE_FIRST s after it degraded, then with gaps
 * doubling up to PROBE_MAX s, so that the edge is ready again (/readyz)
 * within seconds of the origin answering, with no client request: a load
 * balancer that health-checks /readyz sends it none. Ends once quiescing.
 */
static void *
probe_main(void *arg)
{
	struct upstream *u = arg;
	struct timespec dl;
	double gap = PROBE_FIRST;
	char msg[256];
	CURL *h = NULL;
	int got;

	pthread_mutex_lock(&u->mu);
	while (!u->stopping) {
		if (atomic_load(&u->degraded) == 0) {
			gap = PROBE_FIRST;
			pthread_cond_wait(&u->probe_cv, &u->mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += (time_t)gap;
		dl.tv_nsec += (long)((gap - (double)(time_t)gap) * 1e9);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (!u->stopping && atomic_load(&u->degraded) != 0 &&
		    pthread_cond_timedwait(&u->probe_cv, &u->mu, &dl) == 0)
			;
		if (u->stopping || atomic_load(&u->degraded) == 0)
			continue;
		pthread_mutex_unlock(&u->mu);
		if (h == NULL)
			h = probe_handle(u);
		snprintf(msg, sizeof(msg), "cannot set up a request");
		got = h == NULL ? 1 : probe_ask(u, h, msg, sizeof(msg));
		if (!atomic_load(&u->abort))
			probe_result(u, got, msg);
		pthread_mutex_lock(&u->mu);
		gap = gap * 2 > PROBE_MAX ? PROBE_MAX : gap * 2;
	}
	pthread_mutex_unlock(&u->mu);
	if (h != NULL)
		curl_easy_cleanup(h);
	return NULL;
}

/* The request headers; a probe's say so. 0, or -1 out of memory. */
static int
headers_new(struct curl_slist **out, bool probe)
{
	static const char *const h[] = { "Content-Type: application/json",
	    "Accept: application/json", "X-Revcheck-Probe: 1" };
	struct curl_slist *l = NULL, *n;
	size_t i;

	for (i = 0; i < (probe ? 3u : 2u); i++) {
		if ((n = curl_slist_append(l, h[i])) == NULL) {
			curl_slist_free_all(l);
			return -1;
		}
		l = n;
	}
	*out = l;
	return 0;
}

struct upstream *
upstream_new(const char *url, const struct upstream_limits *lim, char *err,
    size_t errlen)
{
	pthread_condattr_t ca;
	struct upstream *u;
	unsigned i;
	int rc;

	assert(lim != NULL && lim->timeout > 0 && lim->connect_timeout > 0);
	if (strncmp(url, "https://", 8) != 0 &&
	    (!lim->allow_http || strncmp(url, "http://", 7) != 0)) {
		snprintf(err, errlen, "upstream_check: \"%.100s\" is not an "
		    "https:// URL%s", url, lim->allow_http ? " or an http:// "
		    "one" : " (plain http needs upstream_insecure_http)");
		return NULL;
	}
	if ((u = calloc(1, sizeof(*u))) == NULL ||
	    (u->url = strdup(url)) == NULL ||
	    (lim->ca_file != NULL &&
	    (u->ca_file = strdup(lim->ca_file)) == NULL)) {
		if (u != NULL)
			free(u->url);
		free(u);
		snprintf(err, errlen, "upstream_check: out of memory");
		return NULL;
	}
	u->lim = *lim;
	u->lim.ca_file = u->ca_file;
	if (u->lim.concurrency == 0)
		u->lim.concurrency = 1;
	if (u->lim.concurrency > MAX_THREADS)
		u->lim.concurrency = MAX_THREADS;
	if (u->lim.max_waiting == 0)
		u->lim.max_waiting = 1;
	atomic_init(&u->a_timeout, lim->timeout);
	atomic_init(&u->a_connect, lim->connect_timeout);
	atomic_init(&u->a_retries, lim->retries);
	pthread_mutex_init(&u->mu, NULL);
	pthread_cond_init(&u->cv, NULL);
	pthread_cond_init(&u->idle_cv, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->probe_cv, &ca);
	pthread_condattr_destroy(&ca);
	(void)revkey_set(&u->probe_key, PROBE_SCOPE, PROBE_ID,
	    sizeof(PROBE_ID) - 1);
	if (headers_new(&u->hdrs, false) == -1 ||
	    headers_new(&u->probe_hdrs, true) == -1) {
		snprintf(err, errlen, "upstream_check: out of memory");
		upstream_free(u);
		return NULL;
	}
	for (i = 0; i < u->lim.concurrency; i++) {
		if ((rc = pthread_create(&u->th[i], NULL, pool_main, u)) != 0) {
			snprintf(err, errlen, "upstream_check: thread: %s",
			    strerror(rc));
			upstream_free(u);
			return NULL;
		}
		u->nth++;
	}
	if ((rc = pthread_create(&u->probe_th, NULL, probe_main, u)) != 0) {
		snprintf(err, errlen, "upstream_check: probe thread: %s",
		    strerror(rc));
		upstream_free(u);
		return NULL;
	}
	u->probe_running = true;
	return u;
}

void
upstream_quiesce(struct upstream *u)
{
	if (u == NULL)
		return;
	pthread_mutex_lock(&u->mu);
	u->stopping = true;
	atomic_store(&u->abort, true);
	pthread_cond_broadcast(&u->cv);
	pthread_cond_broadcast(&u->probe_cv);
	while (u->waiting > 0)
		pthread_cond_wait(&u->idle_cv, &u->mu);
	pthread_mutex_unlock(&u->mu);
}

void
upstream_free(struct upstream *u)
{
	unsigned i, n;

	if (u == NULL)
		return;
	upstream_quiesce(u);
	pthread_mutex_lock(&u->mu);
	n = u->nth;
	u->nth = 0;		/* the threads' signal to leave */
	pthread_cond_broadcast(&u->cv);
	pthread_mutex_unlock(&u->mu);
	for (i = 0; i < n; i++)
		pthread_join(u->th[i], NULL);
	if (u->probe_running)
		pthread_join(u->probe_th, NULL);
	curl_slist_free_all(u->hdrs);
	curl_slist_free_all(u->probe_hdrs);
	pthread_cond_destroy(&u->probe_cv);
	pthread_cond_destroy(&u->idle_cv);
	pthread_cond_destroy(&u->cv);
	pthread_mutex_destroy(&u->mu);
	free(u->url);
	free(u->ca_file);
	free(u);
}

int
upstream_settle(struct upstream *u, struct check_settle *st,
    void (*done)(void *), void *arg)
{
	struct job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return -1;
	j->st = st;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&u->mu);
	if (u->stopping || u->waiting >= u->lim.max_waiting) {
		pthread_mutex_unlock(&u->mu);
		free(j);
		atomic_fetch_add(&u->refused_busy, 1);
		set_error(u, "too many requests waiting on the authority");
		return -1;
	}
	if (st->deadline == 0)
		st->deadline = request_deadline(u);
	u->waiting++;
	if (u->tail != NULL)
		u->tail->next = j;
	else
		u->head = j;
	u->tail = j;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
	return 0;
}

int
upstream_check(void *arg, const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	struct upstream *u = arg;
	struct check_settle st;
	uint64_t version = s->version;
	int rc = -1;
	CURL *h;

	memset(&st, 0, sizeof(st));
	st.n = st.cap = 1;
	st.keys = (struct revkey *)(uintptr_t)k;
	st.version = &version;
	st.res = r;
	st.rc = &rc;
	h = handle_new(u);
	settle_run(u, h, &st);
	if (h != NULL)
		curl_easy_cleanup(h);
	return rc;
}

void
upstream_set_limits(struct upstream *u, const struct upstream_limits *lim)
{
	if (u == NULL)
		return;
	atomic_store(&u->a_timeout, lim->timeout);
	atomic_store(&u->a_connect, lim->connect_timeout);
	atomic_store(&u->a_retries, lim->retries);
	pthread_mutex_lock(&u->mu);
	u->lim.max_waiting = lim->max_waiting > 0 ? lim->max_waiting : 1;
	pthread_mutex_unlock(&u->mu);
}

const char *
upstream_degraded(struct upstream *u)
{
	bool busy;

	pthread_mutex_lock(&u->mu);
	busy = u->waiting >= u->lim.max_waiting;
	pthread_mutex_unlock(&u->mu);
	if (busy)
		return "authority_busy";
	switch (atomic_load(&u->degraded)) {
	case 1:
		return "authority_unavailable";
	case 2:
		return "authority_behind";
	}
	return NULL;
}

void
upstream_status(struct upstream *u, cJSON *root)
{
	char e[sizeof(u->last_error)];
	const char *deg = upstream_degraded(u);
	cJSON *o = cJSON_AddObjectToObject(root, "authority");
	unsigned waiting;

	pthread_mutex_lock(&u->mu);
	memcpy(e, u->last_error, sizeof(e));
	waiting = u->waiting;
	pthread_mutex_unlock(&u->mu);
	json_add_str(o, "url", u->url);
	json_add_u64(o, "answered", atomic_load(&u->answered));
	json_add_u64(o, "failed", atomic_load(&u->failed));
	json_add_u64(o, "behind", atomic_load(&u->behind));
	json_add_u64(o, "retries", atomic_load(&u->retries));
	json_add_u64(o, "requests", atomic_load(&u->requests));
	json_add_u64(o, "waiting", waiting);
	json_add_u64(o, "refused_busy", atomic_load(&u->refused_busy));
	json_add_u64(o, "probes", atomic_load(&u->probes));
	json_add_opt(o, "degraded", deg);
	json_add_opt(o, "last_error", e);
}

void
upstream_metrics(struct upstream *u, struct sbuf *b)
{
	unsigned waiting;

	pthread_mutex_lock(&u->mu);
	waiting = u->waiting;
	pthread_mutex_unlock(&u->mu);
	sbuf_adds(b, "# HELP revcheckd_upstream_checks_total Filter positives "
	    "sent to the upstream authority, by result.\n"
	    "# TYPE revcheckd_upstream_checks_total counter\n");
	sbuf_addf(b, "revcheckd_upstream_checks_total{result=\"answered\"} "
	    "%llu\nrevcheckd_upstream_checks_total{result=\"failed\"} %llu\n"
	    "revcheckd_upstream_checks_total{result=\"behind\"} %llu\n",
	    (unsigned long long)atomic_load(&u->answered),
	    (unsigned long long)atomic_load(&u->failed),
	    (unsigned long long)atomic_load(&u->behind));
	sbuf_adds(b, "# HELP revcheckd_upstream_retries_total Retried "
	    "upstream requests.\n"
	    "# TYPE revcheckd_upstream_retries_total counter\n"
	    "revcheckd_upstream_retries_total ");
	sbuf_add_u64(b, atomic_load(&u->retries));
	sbuf_adds(b, "\n# HELP revcheckd_upstream_requests_total HTTP "
	    "requests to the upstream authority (one per batch of "
	    "positives, retries included).\n"
	    "# TYPE revcheckd_upstream_requests_total counter\n"
	    "revcheckd_upstream_requests_total ");
	sbuf_add_u64(b, atomic_load(&u->requests));
	sbuf_adds(b, "\n# HELP revcheckd_upstream_refused_busy_total Requests "
	    "refused at once because upstream_max_waiting requests were "
	    "waiting on the authority.\n"
	    "# TYPE revcheckd_upstream_refused_busy_total counter\n"
	    "revcheckd_upstream_refused_busy_total ");
	sbuf_add_u64(b, atomic_load(&u->refused_busy));
	sbuf_adds(b, "\n# HELP revcheckd_upstream_probes_total Background "
	    "probes of the upstream authority while it was degraded.\n"
	    "# TYPE revcheckd_upstream_probes_total counter\n"
	    "revcheckd_upstream_probes_total ");
	sbuf_add_u64(b, atomic_load(&u->probes));
	sbuf_adds(b, "\n# HELP revcheckd_upstream_waiting Requests waiting on "
	    "the upstream authority now.\n"
	    "# TYPE revcheckd_upstream_waiting gauge\n"
	    "revcheckd_upstream_waiting ");
	sbuf_add_u64(b, waiting);
	sbuf_addf(b, "\n# HELP revcheckd_upstream_degraded 1 while the "
	    "upstream authority is degraded, by why (unavailable: it does not "
	    "answer; behind: it answers from an older filter version).\n"
	    "# TYPE revcheckd_upstream_degraded gauge\n"
	    "revcheckd_upstream_degraded{reason=\"unavailable\"} %d\n"
	    "revcheckd_upstream_degraded{reason=\"behind\"} %d\n",
	    atomic_load(&u->degraded) == 1, atomic_load(&u->degraded) == 2);
}
