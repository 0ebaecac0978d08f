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

struct upstream {
	char		*url;
	char		*ca_file;	/* lim.ca_file points here */
	struct upstream_limits lim;
	struct curl_slist *hdrs;	/* shared, read-only once built */
	pthread_mutex_t	 mu;		/* guards idle, nidle, last_error */
	CURL		*idle[UPSTREAM_POOL_MAX];
	size_t		 nidle;
	char		 last_error[256];
	_Atomic uint64_t answered;
	_Atomic uint64_t failed;
	_Atomic uint64_t behind;
	_Atomic uint64_t retries;
	_Atomic int64_t	 last_log;
	_Atomic bool	 lost;		/* the last call got no answer */
};

/* The reply body, capped at UPSTREAM_MAX_ANSWER. */
struct answer {
	char	buf[UPSTREAM_MAX_ANSWER + 1];
	size_t	len;
	bool	too_big;
};

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n;

	if (len > UPSTREAM_MAX_ANSWER - a->len) {
		a->too_big = true;
		return 0;	/* aborts the transfer */
	}
	memcpy(a->buf + a->len, p, len);
	a->len += len;
	return len;
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
	    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
	    (long)u->lim.connect_timeout) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)u->lim.timeout) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, u->hdrs) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_USERAGENT,
	    "revcheckd/" REVCHECK_VERSION " (edge)") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}

static CURL *
handle_take(struct upstream *u)
{
	CURL *h = NULL;

	pthread_mutex_lock(&u->mu);
	if (u->nidle > 0)
		h = u->idle[--u->nidle];
	pthread_mutex_unlock(&u->mu);
	return h != NULL ? h : handle_new(u);
}

/* Back to the pool; a handle that failed is dropped with its connection. */
static void
handle_give(struct upstream *u, CURL *h, bool healthy)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&u->mu);
	if (healthy && u->nidle < UPSTREAM_POOL_MAX) {
		u->idle[u->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&u->mu);
	if (h != NULL)
		curl_easy_cleanup(h);
}

struct upstream *
upstream_new(const char *url, const struct upstream_limits *lim, char *err,
    size_t errlen)
{
	struct upstream *u;
	struct curl_slist *l;

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
	pthread_mutex_init(&u->mu, NULL);
	l = curl_slist_append(NULL, "Content-Type: application/json");
	if (l != NULL)
		u->hdrs = l;
	if (l == NULL || (l = curl_slist_append(u->hdrs,
	    "Accept: application/json")) == NULL) {
		snprintf(err, errlen, "upstream_check: out of memory");
		upstream_free(u);
		return NULL;
	}
	return u;
}

void
upstream_free(struct upstream *u)
{
	size_t i;

	if (u == NULL)
		return;
	for (i = 0; i < u->nidle; i++)
		curl_easy_cleanup(u->idle[i]);
	curl_slist_free_all(u->hdrs);
	pthread_mutex_destroy(&u->mu);
	free(u->url);
	free(u->ca_file);
	free(u);
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
		    "answer 503 authority_unavailable)", u->url, msg);
		atomic_store(&u->last_log, now);
		return;
	}
	last = atomic_load(&u->last_log);
	if (now - last >= LOG_EVERY &&
	    atomic_compare_exchange_strong(&u->last_log, &last, now))
		log_warn("upstream check %s: %s (positives answer 503 "
		    "authority_unavailable)", u->url, msg);
}

/* The question: {"id": <id as text>, "scope": <scope>}. -1 when it cannot be asked faithfully. */
static int
question(const struct revkey *k, struct sbuf *q, char *idt, size_t *idlen)
{
	*idlen = revkey_id_text(k, idt);
	/*
	 * A JSON string carries an id exactly only when it is valid UTF-8
	 * without NUL (the origin reads it as a C string): anything else
	 * would ask about another id, so it is not asked at all.
	 */
	if (memchr(idt, '\0', *idlen) != NULL ||
	    !sbuf_utf8_valid(idt, *idlen))
		return -1;
	sbuf_adds(q, "{\"id\":");
	sbuf_add_jstr(q, idt, *idlen);
	sbuf_adds(q, ",\"scope\":");
	sbuf_add_jstr(q, k->scope, k->scope_len);
	sbuf_adds(q, "}");
	return sbuf_ok(q) ? 0 : -1;
}

/*
 * Reads the origin's answer. It must be about the scope and id asked,
 * carry a known status and the version of the filter it was answered
 * from, and that version must be at least ours (mine): an origin still
 * on an older filter may not know a revocation our filter holds.
 * Returns 0, or -1 with err (r->fail CHECK_FAIL_BEHIND for an older
 * version).
 */
static int
parse_answer(const struct answer *a, const struct revkey *k,
    const char *idt, size_t idlen, uint64_t mine, struct check_result *r,
    char *err, size_t errlen)
{
	const cJSON *st, *sc, *id, *at, *why, *fv;
	cJSON *root;
	int rc = -1;

	if ((root = cJSON_ParseWithLength(a->buf, a->len)) == NULL ||
	    !cJSON_IsObject(root)) {
		snprintf(err, errlen, "the answer is not a JSON object");
		goto out;
	}
	st = cJSON_GetObjectItemCaseSensitive(root, "status");
	sc = cJSON_GetObjectItemCaseSensitive(root, "scope");
	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	at = cJSON_GetObjectItemCaseSensitive(root, "revoked_at");
	why = cJSON_GetObjectItemCaseSensitive(root, "reason");
	if (!cJSON_IsString(sc) || !cJSON_IsString(id) ||
	    strcmp(sc->valuestring, k->scope) != 0 ||
	    strlen(id->valuestring) != idlen ||
	    memcmp(id->valuestring, idt, idlen) != 0) {
		snprintf(err, errlen, "the answer is not about the scope and "
		    "id asked");
		goto out;
	}
	if (!cJSON_IsString(st)) {
		snprintf(err, errlen, "the answer has no \"status\"");
		goto out;
	}
	fv = cJSON_GetObjectItemCaseSensitive(root, "filter_version");
	if (!cJSON_IsNumber(fv) || fv->valuedouble < 0 ||
	    fv->valuedouble > 9.0e15 ||
	    fv->valuedouble != (double)(uint64_t)fv->valuedouble) {
		snprintf(err, errlen, "the answer has no \"filter_version\"");
		goto out;
	}
	if ((uint64_t)fv->valuedouble < mine) {
		snprintf(err, errlen, "the authority answered from filter "
		    "version %llu, behind ours (%llu)",
		    (unsigned long long)fv->valuedouble,
		    (unsigned long long)mine);
		r->fail = CHECK_FAIL_BEHIND;
		goto out;
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
		snprintf(err, errlen, "unknown status in the answer");
		goto out;
	}
	if (r->status == CHECK_REVOKED) {
		if (cJSON_IsString(at) &&
		    util_parse_rfc3339(at->valuestring, &r->revoked_at) == -1)
			r->revoked_at = 0;
		if (cJSON_IsString(why))
			snprintf(r->reason, sizeof(r->reason), "%s",
			    why->valuestring);
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

int
upstream_check(void *arg, const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	struct upstream *u = arg;
	struct answer *a = NULL;
	struct sbuf q;
	char idt[REVKEY_ID_TEXT_MAX], e[256], msg[300] = "";
	size_t idlen;
	CURL *h = NULL;
	CURLcode cc;
	long code = 0;
	unsigned attempt;
	double t0;
	int rc = -1;
	bool retry;

	r->fail = CHECK_FAIL_UNAVAILABLE;
	sbuf_init(&q, 256, 0);
	if (question(k, &q, idt, &idlen) == -1) {
		set_error(u, "an id that cannot be sent as JSON text");
		goto out;
	}
	if ((a = malloc(sizeof(*a))) == NULL) {
		set_error(u, "out of memory");
		goto out;
	}
	for (attempt = 0; attempt <= u->lim.retries; attempt++) {
		if (attempt > 0) {
			struct timespec ts = { 0, 20L * 1000 * 1000 * attempt };

			atomic_fetch_add(&u->retries, 1);
			nanosleep(&ts, NULL);
		}
		if ((h = handle_take(u)) == NULL) {
			snprintf(msg, sizeof(msg), "cannot set up a request");
			break;
		}
		a->len = 0;
		a->too_big = false;
		curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)q.len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q.p);
		t0 = util_monotime();
		cc = curl_easy_perform(h);
		metrics_observe_authority(util_monotime() - t0);
		code = 0;
		if (cc == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		retry = false;
		if (cc != CURLE_OK) {
			if (a->too_big)
				snprintf(msg, sizeof(msg), "answer over %d "
				    "bytes", UPSTREAM_MAX_ANSWER);
			else {
				snprintf(msg, sizeof(msg), "%s",
				    curl_easy_strerror(cc));
				retry = true;
			}
		} else if (code != 200) {
			snprintf(msg, sizeof(msg), "HTTP %ld", code);
			retry = code >= 500;
		} else {
			a->buf[a->len] = '\0';
			if (parse_answer(a, k, idt, idlen, s->version, r, e,
			    sizeof(e)) == 0) {
				handle_give(u, h, true);
				h = NULL;
				rc = 0;
				break;
			}
			snprintf(msg, sizeof(msg), "%s", e);
		}
		handle_give(u, h, cc == CURLE_OK);
		h = NULL;
		if (!retry)
			break;
	}
	if (rc == 0) {
		atomic_fetch_add(&u->answered, 1);
		if (atomic_exchange(&u->lost, false))
			log_info("authority back: upstream check %s answers "
			    "again", u->url);
	} else
		set_error(u, msg);
out:
	if (rc == -1)
		atomic_fetch_add(r->fail == CHECK_FAIL_BEHIND ? &u->behind :
		    &u->failed, 1);
	free(a);
	sbuf_free(&q);
	return rc;
}

void
upstream_status(struct upstream *u, struct sbuf *b)
{
	char e[sizeof(u->last_error)];

	pthread_mutex_lock(&u->mu);
	memcpy(e, u->last_error, sizeof(e));
	pthread_mutex_unlock(&u->mu);
	sbuf_adds(b, ",\"authority\":{\"url\":");
	sbuf_add_jstrs(b, u->url);
	sbuf_adds(b, ",\"answered\":");
	sbuf_add_u64(b, atomic_load(&u->answered));
	sbuf_adds(b, ",\"failed\":");
	sbuf_add_u64(b, atomic_load(&u->failed));
	sbuf_adds(b, ",\"behind\":");
	sbuf_add_u64(b, atomic_load(&u->behind));
	sbuf_adds(b, ",\"retries\":");
	sbuf_add_u64(b, atomic_load(&u->retries));
	sbuf_adds(b, ",\"last_error\":");
	if (e[0] != '\0')
		sbuf_add_jstrs(b, e);
	else
		sbuf_adds(b, "null");
	sbuf_adds(b, "}");
}

void
upstream_metrics(struct upstream *u, struct sbuf *b)
{
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
	sbuf_adds(b, "\n");
}
