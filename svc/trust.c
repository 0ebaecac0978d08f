/* trust.c - the trusted token issuers: their keys and secrets, token verification */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <xxhash.h>

#include "loader.h"
#include "log.h"
#include "trust.h"
#include "util.h"

#define JWKS_FETCH_TIMEOUT	10	/* seconds for one fetch, all included */
#define JWKS_CONNECT_TIMEOUT	5
#define TRUST_CA_MAX		(16 * 1024 * 1024)	/* bytes of a CA bundle */
#define TRUST_RELOAD_WAIT_MS	2000	/* a SIGHUP's wait for new sets */

int
trust_read_secret(const struct config *c, const char *path, size_t min,
    unsigned char **out, size_t *len, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t n = 0;

	*out = NULL;
	*len = 0;
	if (loader_read_trusted(c, path, TRUST_SECRET_MAX, &buf, &n, err,
	    errlen) == -1)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n < min) {
		snprintf(err, errlen, "%s: secret shorter than %zu bytes", path,
		    min);
		OPENSSL_cleanse(buf, n);
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* A fresh set parsed from buf, or NULL with err. */
static struct jwks *
set_from(const unsigned char *buf, size_t len, const char *origin, char *err,
    size_t errlen)
{
	struct jwks *s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (jwks_parse(s, (const char *)buf, len, origin, err, errlen) == -1) {
		free(s);
		return NULL;
	}
	return s;
}

static void
set_free(struct jwks *s)
{
	jwks_free(s);
	free(s);
}

/* Loads one issuer's JWKS file (not its URI) and secret. */
static int
issuer_load(struct trust_issuer *ti, const struct config *c,
    const struct config_issuer *ci, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	struct stat st;
	size_t len = 0;
	char e[512];
	int rc = -1;

	ti->cfg = ci;
	if (ci->jwks_file != NULL) {
		if (loader_read_trusted(c, ci->jwks_file, JWKS_MAX_LEN, &buf,
		    &len, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "issuer %s: %s", ci->issuer, e);
			return -1;
		}
		if ((ti->keys = set_from(buf, len, ci->jwks_file, e,
		    sizeof(e))) == NULL) {
			snprintf(err, errlen, "issuer %s: %s", ci->issuer, e);
			goto out;
		}
		if (ti->keys->n == 0 && (ci->algs & ~JWA_HS_MASK) != 0)
			log_warn("issuer %s: %s holds no usable key; its "
			    "signed tokens are refused", ci->issuer,
			    ci->jwks_file);
	}
	/*
	 * libcurl opens the CA file on a fetch (on the main thread at start
	 * and on SIGHUP): it must be a regular file now, not a FIFO.
	 */
	if (ci->jwks_ca_file != NULL) {
		free(buf);
		buf = NULL;
		if (util_read_file_st(ci->jwks_ca_file, TRUST_CA_MAX, &buf,
		    &len, &st, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "issuer %s: jwks_ca_file: %s",
			    ci->issuer, e);
			goto out;
		}
		free(buf);
		buf = NULL;
	}
	if (ci->hs_secret_file != NULL && trust_read_secret(c,
	    ci->hs_secret_file, JWT_HS_MIN, &ti->hs, &ti->hs_len, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "issuer %s: hs_secret_file: %s",
		    ci->issuer, e);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

static int
load_clients(struct trust *t, const struct config *c, char *err,
    size_t errlen)
{
	struct trust_client *cl;
	char e[512];
	size_t i;

	if ((t->clients = calloc(c->nclients, sizeof(*t->clients))) == NULL) {
		snprintf(err, errlen, "introspection_clients: out of memory");
		return -1;
	}
	for (i = 0; i < c->nclients; i++) {
		cl = &t->clients[i];
		t->nclients = i + 1;
		cl->id = c->clients[i].id;
		cl->naud = c->clients[i].naud;
		cl->aud = (const char *const *)c->clients[i].audiences;
		if (cl->naud == 0) {
			cl->aud = &cl->id;
			cl->naud = 1;
		}
		if (trust_read_secret(c, c->clients[i].secret_file,
		    TRUST_CLIENT_SECRET_MIN, &cl->secret, &cl->len, e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "introspection client %s: %s",
			    cl->id, e);
			return -1;
		}
	}
	return 0;
}

const struct trust_client *
trust_client_find(const struct trust *t, const char *id, size_t idlen,
    const unsigned char *secret, size_t slen)
{
	const struct trust_client *cl, *found = NULL;
	size_t i;

	for (i = 0; t != NULL && i < t->nclients; i++) {
		cl = &t->clients[i];
		if (id != NULL && (strlen(cl->id) != idlen ||
		    memcmp(cl->id, id, idlen) != 0))
			continue;
		/* Every candidate is compared: the time says nothing. */
		if (cl->len == slen && CRYPTO_memcmp(cl->secret, secret,
		    slen) == 0 && found == NULL)
			found = cl;
	}
	return found;
}

bool
trust_client_ok(const struct trust *t, const char *id, size_t idlen,
    const unsigned char *secret, size_t slen)
{
	return trust_client_find(t, id, idlen, secret, slen) != NULL;
}

int
trust_init(struct trust *t, const struct config *c, char *err,
    size_t errlen)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->revocation_only = c->revocation_only;
	if (c->nclients > 0 && load_clients(t, c, err, errlen) == -1) {
		trust_free(t);
		return -1;
	}
	if (c->nissuers == 0)
		return 0;
	if (pthread_rwlock_init(&t->lock, NULL) != 0 ||
	    pthread_mutex_init(&t->mu, NULL) != 0 ||
	    pthread_cond_init(&t->cv, NULL) != 0) {
		snprintf(err, errlen, "issuers: cannot create locks");
		return -1;
	}
	for (i = 0; i < TRUST_CACHE_LOCKS; i++)
		pthread_mutex_init(&t->cache_mu[i], NULL);
	t->locks = true;
	if (c->token_cache_size > 0) {
		t->cache_size = c->token_cache_size;
		t->cache_max = c->token_cache_max;
		if ((t->cache = calloc(t->cache_size, sizeof(*t->cache))) ==
		    NULL) {
			snprintf(err, errlen, "token_cache_size: out of memory");
			trust_free(t);
			return -1;
		}
		if (RAND_bytes((unsigned char *)&t->cache_seed,
		    sizeof(t->cache_seed)) != 1) {
			snprintf(err, errlen, "token cache: no random seed");
			trust_free(t);
			return -1;
		}
	}
	if ((t->iss = calloc(c->nissuers, sizeof(*t->iss))) == NULL) {
		snprintf(err, errlen, "issuers: out of memory");
		trust_free(t);
		return -1;
	}
	for (i = 0; i < c->nissuers; i++) {
		t->n = i + 1;
		if (issuer_load(&t->iss[i], c, &c->issuers[i], err,
		    errlen) == -1) {
			trust_free(t);
			return -1;
		}
		if (c->issuers[i].jwks_uri != NULL)
			t->has_uri = true;
	}
	return 0;
}

/* ---------------------------------------------------------------- fetching */

struct body {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

static size_t
on_body(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;

	if (size != 0 && n > SIZE_MAX / size)
		return 0;
	if (util_buf_append(&b->p, &b->len, &b->cap, data, size * n,
	    JWKS_MAX_LEN) == -1)
		return 0;	/* over the cap: curl fails the transfer */
	return size * n;
}

/*
 * GETs the issuer's JWKS over https (TLS verified, against jwks_ca_file
 * when set; no redirects, bounded in size and time). Returns the parsed
 * set, or NULL with err.
 */
static struct jwks *
fetch_set(const struct config_issuer *ci, char *err, size_t errlen)
{
	struct body b = { NULL, 0, 0 };
	struct jwks *s = NULL;
	char ebuf[CURL_ERROR_SIZE] = "";
	CURL *h;
	CURLcode cc;
	long code = 0;

	if ((h = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "cannot start libcurl");
		return NULL;
	}
	if (curl_easy_setopt(h, CURLOPT_URL, ci->jwks_uri) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT,
	    (long)JWKS_CONNECT_TIMEOUT) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)JWKS_FETCH_TIMEOUT) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)JWKS_MAX_LEN) != CURLE_OK ||
	    (ci->jwks_ca_file != NULL && curl_easy_setopt(h, CURLOPT_CAINFO,
	    ci->jwks_ca_file) != CURLE_OK) ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_USERAGENT, "revcheckd/"
	    REVCHECK_VERSION) != CURLE_OK) {
		snprintf(err, errlen, "libcurl refused an option");
		goto out;
	}
	if ((cc = curl_easy_perform(h)) != CURLE_OK) {
		snprintf(err, errlen, "%s", ebuf[0] != '\0' ? ebuf :
		    curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		snprintf(err, errlen, "HTTP status %ld", code);
		goto out;
	}
	s = set_from(b.p, b.len, ci->jwks_uri, err, errlen);
out:
	curl_easy_cleanup(h);
	free(b.p);
	return s;
}

void
trust_set_keys(struct trust *t, size_t i, struct jwks *s, int64_t now)
{
	struct trust_issuer *ti = &t->iss[i];
	struct jwks *old;

	pthread_rwlock_wrlock(&t->lock);
	old = ti->keys;
	ti->keys = s;
	ti->keys_at = now;
	ti->gen++;	/* every cached token of the issuer is verified again */
	pthread_rwlock_unlock(&t->lock);
	/* Verifications hold the read lock while they use the set. */
	if (old != NULL)
		set_free(old);
}

/* Fetches one issuer's set and swaps it in; a failure keeps the old. */
static void
refresh(struct trust *t, struct trust_issuer *ti, int64_t now)
{
	struct jwks *s;
	char e[sizeof(ti->last_error)];
	size_t before;
	bool first;

	s = fetch_set(ti->cfg, e, sizeof(e));
	pthread_rwlock_wrlock(&t->lock);
	ti->last_attempt = now;
	atomic_store(&ti->want_refresh, false);
	if (s == NULL) {
		ti->fetches_failed++;
		/* Retry soon, not a whole period later. */
		ti->next_fetch = now + ti->cfg->jwks_min_interval;
		memcpy(ti->last_error, e, sizeof(e));
		pthread_rwlock_unlock(&t->lock);
		log_warn("issuer %s: fetching %s failed: %s; keeping the last "
		    "good set", ti->cfg->issuer, ti->cfg->jwks_uri, e);
		return;
	}
	before = ti->keys != NULL ? ti->keys->n : 0;
	first = ti->keys == NULL;
	ti->fetches_ok++;
	ti->next_fetch = now + ti->cfg->jwks_refresh;
	ti->last_error[0] = '\0';
	pthread_rwlock_unlock(&t->lock);
	trust_set_keys(t, (size_t)(ti - t->iss), s, now);
	if (first || before != s->n)
		log_info("issuer %s: %zu key(s) from %s", ti->cfg->issuer,
		    s->n, ti->cfg->jwks_uri);
}

/* True when ti's set should be fetched at now. Caller holds the lock. */
static bool
due(const struct trust_issuer *ti, int64_t now)
{
	if (ti->cfg->jwks_uri == NULL)
		return false;
	if (now >= ti->next_fetch)
		return true;
	return atomic_load(&ti->want_refresh) &&
	    now - ti->last_attempt >= ti->cfg->jwks_min_interval;
}

static void *
refresh_main(void *arg)
{
	struct trust *t = arg;
	struct timespec ts;
	int64_t now;
	size_t i;
	bool go;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		pthread_mutex_unlock(&t->mu);
		for (i = 0; i < t->n; i++) {
			now = util_now();
			pthread_rwlock_rdlock(&t->lock);
			go = due(&t->iss[i], now);
			pthread_rwlock_unlock(&t->lock);
			if (go)
				refresh(t, &t->iss[i], now);
		}
		pthread_mutex_lock(&t->mu);
		if (t->stop)
			break;
		/* A second at most: schedules are in whole seconds. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		(void)pthread_cond_timedwait(&t->cv, &t->mu, &ts);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* True when a and b fetch the same set the same way. */
static bool
same_source(const struct config_issuer *a, const struct config_issuer *b)
{
	return a->jwks_uri != NULL && b->jwks_uri != NULL &&
	    strcmp(a->issuer, b->issuer) == 0 &&
	    strcmp(a->jwks_uri, b->jwks_uri) == 0 &&
	    (a->jwks_ca_file == NULL) == (b->jwks_ca_file == NULL) &&
	    (a->jwks_ca_file == NULL ||
	    strcmp(a->jwks_ca_file, b->jwks_ca_file) == 0);
}

void
trust_inherit(struct trust *t, struct trust *prev)
{
	struct trust_issuer *ti;
	const struct trust_issuer *pi;
	struct jwks *s;
	size_t i, j;

	t->reload = prev != NULL;
	if (prev == NULL || prev->n == 0)
		return;
	pthread_rwlock_rdlock(&prev->lock);
	for (i = 0; i < t->n; i++) {
		ti = &t->iss[i];
		for (j = 0; j < prev->n; j++) {
			pi = &prev->iss[j];
			if (!same_source(ti->cfg, pi->cfg) || pi->keys == NULL)
				continue;
			if ((s = calloc(1, sizeof(*s))) == NULL)
				break;
			if (jwks_copy(s, pi->keys) == -1) {
				free(s);
				break;	/* fetched by trust_start instead */
			}
			ti->keys = s;
			ti->keys_at = pi->keys_at;	/* its age goes on */
			ti->fetches_ok = pi->fetches_ok;
			ti->fetches_failed = pi->fetches_failed;
			memcpy(ti->last_error, pi->last_error,
			    sizeof(ti->last_error));
			ti->next_fetch = 0;	/* fetched again at once */
			break;
		}
	}
	pthread_rwlock_unlock(&prev->lock);
}

void
trust_log(const struct trust *t)
{
	const struct config_issuer *ci;
	size_t i;

	for (i = 0; i < t->n; i++) {
		ci = t->iss[i].cfg;
		log_info("issuer %s: keys from %s%s", ci->issuer,
		    ci->jwks_file != NULL ? ci->jwks_file : ci->jwks_uri,
		    t->iss[i].hs != NULL ? ", and an HS secret" : "");
	}
	if (t->nclients > 0)
		log_info("introspection: %zu client(s)", t->nclients);
	for (i = 0; i < t->nclients; i++)
		if (t->clients[i].aud == &t->clients[i].id)
			log_warn("introspection client %s: no \"audiences\": "
			    "answered active only for tokens whose \"aud\" "
			    "names \"%s\" (its id)", t->clients[i].id,
			    t->clients[i].id);
}

/* True while some jwks_uri issuer has neither a set nor a fetch tried. */
static bool
first_fetches_pending(struct trust *t)
{
	const struct trust_issuer *ti;
	bool pending = false;
	size_t i;

	pthread_rwlock_rdlock(&t->lock);
	for (i = 0; i < t->n && !pending; i++) {
		ti = &t->iss[i];
		pending = ti->cfg->jwks_uri != NULL && ti->keys == NULL &&
		    ti->last_attempt == 0;
	}
	pthread_rwlock_unlock(&t->lock);
	return pending;
}

/*
 * A SIGHUP's wait for the refresh thread's first fetches: in the common
 * case the new issuers' tokens verify as soon as the reload is in force;
 * a URL that hangs costs the main thread (filter reloads, the watchdog)
 * TRUST_RELOAD_WAIT_MS, not JWKS_FETCH_TIMEOUT per issuer.
 */
static void
wait_first_fetches(struct trust *t)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	const struct trust_issuer *ti;
	unsigned waited;
	size_t i;

	for (waited = 0; waited < TRUST_RELOAD_WAIT_MS; waited += 20) {
		if (!first_fetches_pending(t))
			return;
		nanosleep(&ts, NULL);
	}
	pthread_rwlock_rdlock(&t->lock);
	for (i = 0; i < t->n; i++) {
		ti = &t->iss[i];
		if (ti->cfg->jwks_uri != NULL && ti->keys == NULL &&
		    ti->last_attempt == 0)
			log_warn("issuer %s: %s not fetched within %u ms of the "
			    "SIGHUP; the fetch goes on in the background and "
			    "the issuer's tokens are refused until it succeeds",
			    ti->cfg->issuer, ti->cfg->jwks_uri,
			    TRUST_RELOAD_WAIT_MS);
	}
	pthread_rwlock_unlock(&t->lock);
}

int
trust_start(struct trust *t, char *err, size_t errlen)
{
	int64_t now = util_now();
	size_t i;
	int e;

	if (!t->has_uri)
		return 0;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "issuers: libcurl did not initialise");
		return -1;
	}
	t->curl_init = true;
	/*
	 * At start, the first fetches before serving. On a SIGHUP the thread
	 * makes them (a carried-over set is due at once too), so that a URL
	 * that hangs does not hold the main thread for a fetch timeout.
	 */
	for (i = 0; !t->reload && i < t->n; i++)
		if (t->iss[i].cfg->jwks_uri != NULL && t->iss[i].keys == NULL)
			refresh(t, &t->iss[i], now);
	t->stop = false;
	if ((e = pthread_create(&t->thread, NULL, refresh_main, t)) != 0) {
		snprintf(err, errlen, "issuers: cannot start the JWKS refresh "
		    "thread: %s", strerror(e));
		return -1;
	}
	t->running = true;
	if (t->reload)
		wait_first_fetches(t);
	return 0;
}

void
trust_stop(struct trust *t)
{
	if (t == NULL)
		return;
	if (t->running) {
		pthread_mutex_lock(&t->mu);
		t->stop = true;
		pthread_cond_signal(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
		t->running = false;
	}
	if (t->curl_init) {
		curl_global_cleanup();
		t->curl_init = false;
	}
}

void
trust_free(struct trust *t)
{
	size_t i;

	if (t == NULL)
		return;
	trust_stop(t);
	for (i = 0; i < t->n; i++) {
		if (t->iss[i].keys != NULL)
			set_free(t->iss[i].keys);
		if (t->iss[i].hs != NULL)
			OPENSSL_cleanse(t->iss[i].hs, t->iss[i].hs_len);
		free(t->iss[i].hs);
	}
	free(t->iss);
	for (i = 0; i < t->nclients; i++) {
		if (t->clients[i].secret != NULL)
			OPENSSL_cleanse(t->clients[i].secret,
			    t->clients[i].len);
		free(t->clients[i].secret);
	}
	free(t->clients);
	for (i = 0; t->cache != NULL && i < t->cache_size; i++)
		free(t->cache[i].buf);
	free(t->cache);
	if (t->locks) {
		for (i = 0; i < TRUST_CACHE_LOCKS; i++)
			pthread_mutex_destroy(&t->cache_mu[i]);
		pthread_rwlock_destroy(&t->lock);
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
	}
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------- verification */

/*
 * Asks the refresh thread for a fetch of ti's set (an unknown kid). A
 * flood of such tokens wakes it once: the flag is already set.
 */
static void
ask_refresh(struct trust *t, struct trust_issuer *ti)
{
	if (atomic_exchange(&ti->want_refresh, true))
		return;
	pthread_mutex_lock(&t->mu);
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* The slot of a token's hash. */
static size_t
cache_slot(const struct trust *t, uint64_t h)
{
	return (size_t)(h % t->cache_size);
}

/*
 * The values of a token that its keys are formed from: its issuer's
 * scope (iss), jti, and the sub, sid and iat its cutoffs need.
 */
struct tok_values {
	const char	*iss;
	const char	*jti;
	size_t		 jti_len;
	const char	*sub;		/* NULL: none (or not a string) */
	size_t		 sub_len;
	const char	*sid;
	size_t		 sid_len;
	bool		 has_iat;
	int64_t		 iat;
};

/* One cutoff key (claim name, value v of len bytes; none when NULL). */
static int
cutoff_key(struct revkey *k, bool *has, const char *prefix,
    const char *name, const char *scope, const char *v, size_t len,
    char *err, size_t errlen)
{
	if (v == NULL)
		return 0;
	if (revkey_cutoff(k, prefix, scope, v, len) == -1) {
		snprintf(err, errlen, "\"%s\" cannot be checked against "
		    "cutoffs (empty or too long)", name);
		return -1;
	}
	*has = true;
	return 0;
}

/* The cutoff keys of a token of scope from its values, or -1 with err. */
static int
cutoff_values(const char *scope, const struct tok_values *v,
    struct trust_cutoffs *cut, char *err, size_t errlen)
{
	memset(cut, 0, sizeof(*cut));
	cut->has_iat = v->has_iat;
	cut->iat = v->has_iat ? v->iat : 0;
	if (cutoff_key(&cut->sub, &cut->has_sub, REVKEY_SUB_PREFIX, "sub",
	    scope, v->sub, v->sub_len, err, errlen) == -1)
		return -1;
	return cutoff_key(&cut->sid, &cut->has_sid, REVKEY_SID_PREFIX, "sid",
	    scope, v->sid, v->sid_len, err, errlen);
}

/* A token's jti key into k and (cut not NULL) its cutoff keys. */
static int
keys_of(const struct tok_values *v, struct revkey *k,
    struct trust_cutoffs *cut, char *err, size_t errlen)
{
	if (jwt_key_values(k, v->iss, v->jti, v->jti_len, err, errlen) == -1)
		return -1;
	/* Verified: its iat shows it in an exact scope's issued set. */
	k->has_issued = v->has_iat;
	k->issued_at = v->has_iat ? v->iat : 0;
	return cut != NULL ? cutoff_values(k->scope, v, cut, err, errlen) : 0;
}

/* Empties slot e (under its lock); what it held is freed by the caller. */
static char *
cache_drop(struct trust_cached *e)
{
	char *old = e->buf;

	e->buf = NULL;
	e->until = 0;
	return old;
}

/*
 * The token tok of len bytes, if it was verified before, is still within
 * its time and its issuer's keys have not changed since: its keys into k
 * and cut, and 1. An entry of tok found past its time or made under
 * older keys is dropped. 0 when tok must be verified; -1 (err) when its
 * keys cannot be formed, which a verified token's always could.
 */
static int
cache_find(struct trust *t, const char *tok, size_t len, uint64_t h,
    int64_t now, struct revkey *k, struct trust_cutoffs *cut, char *err,
    size_t errlen)
{
	struct trust_cached *e;
	struct tok_values v;
	size_t slot = cache_slot(t, h);
	pthread_mutex_t *mu = &t->cache_mu[slot % TRUST_CACHE_LOCKS];
	_Atomic uint64_t *evict = NULL;
	char *old = NULL;
	int rc = 0;

	pthread_mutex_lock(mu);
	e = &t->cache[slot];
	if (e->buf == NULL || e->hash != h || e->len != len ||
	    memcmp(e->buf, tok, len) != 0) {
		pthread_mutex_unlock(mu);
		return 0;
	}
	if (e->gen != atomic_load_explicit(&t->iss[e->issuer].gen,
	    memory_order_acquire))
		evict = &t->cache_evict_keys;
	else if (e->until <= now)
		evict = &t->cache_evict_expired;
	if (evict != NULL) {
		old = cache_drop(e);
	} else {
		v.iss = t->iss[e->issuer].cfg->issuer;
		v.jti = e->buf + e->len;
		v.jti_len = e->jti_len;
		v.sub = e->has_sub ? v.jti + e->jti_len : NULL;
		v.sub_len = e->sub_len;
		v.sid = e->has_sid ? v.jti + e->jti_len + e->sub_len : NULL;
		v.sid_len = e->sid_len;
		v.has_iat = e->has_iat;
		v.iat = e->iat;
		rc = keys_of(&v, k, cut, err, errlen) == 0 ? 1 : -1;
	}
	pthread_mutex_unlock(mu);
	if (evict != NULL) {
		free(old);
		atomic_fetch_add_explicit(evict, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&t->cache_entries, 1,
		    memory_order_relaxed);
	}
	if (rc == 1)
		atomic_fetch_add_explicit(&t->cache_hits, 1,
		    memory_order_relaxed);
	return rc;
}

/*
 * What a verification tells the cache: the generation of the issuer's
 * keys it used, and until when that set may be relied on (its maximum
 * age, for fetched keys; INT64_MAX otherwise), both read under the lock
 * the verification held, so that keys replaced meanwhile make the entry
 * stale at once.
 */
struct verified_by {
	uint64_t	 gen;
	int64_t		 keys_until;
};

/*
 * Remembers token tok with values v, verified at now for issuer idx
 * under keys vb: until its exp (with the leeway the verification
 * allowed), token_cache_max, or the set's maximum age, whichever comes
 * first.
 */
static void
cache_put(struct trust *t, const char *tok, size_t len, uint64_t h,
    size_t idx, const struct jwt *j, const struct tok_values *v,
    const struct verified_by *vb, int64_t now)
{
	const struct trust_issuer *ti = &t->iss[idx];
	struct trust_cached *e;
	size_t slot = cache_slot(t, h), vlen;
	pthread_mutex_t *mu = &t->cache_mu[slot % TRUST_CACHE_LOCKS];
	int64_t exp, until = now + t->cache_max;
	char *buf, *old;
	bool replaced;

	if (len > TRUST_CACHE_TOKEN_MAX ||
	    jwt_claim_time(j, "exp", &exp) == -1)
		return;
	if (exp <= INT64_MAX - ti->cfg->leeway &&
	    exp + ti->cfg->leeway < until)
		until = exp + ti->cfg->leeway;
	if (vb->keys_until < until)
		until = vb->keys_until;
	if (until <= now)
		return;
	vlen = v->jti_len + (v->sub != NULL ? v->sub_len : 0) +
	    (v->sid != NULL ? v->sid_len : 0);
	if ((buf = malloc(len + vlen)) == NULL)
		return;		/* verified every time, then */
	memcpy(buf, tok, len);
	memcpy(buf + len, v->jti, v->jti_len);
	if (v->sub != NULL)
		memcpy(buf + len + v->jti_len, v->sub, v->sub_len);
	if (v->sid != NULL)
		memcpy(buf + len + v->jti_len + (v->sub != NULL ?
		    v->sub_len : 0), v->sid, v->sid_len);
	pthread_mutex_lock(mu);
	e = &t->cache[slot];
	replaced = e->buf != NULL && (e->hash != h || e->len != len ||
	    memcmp(e->buf, tok, len) != 0);
	old = cache_drop(e);
	e->buf = buf;
	e->hash = h;
	e->len = len;
	e->jti_len = v->jti_len;
	e->has_sub = v->sub != NULL;
	e->sub_len = e->has_sub ? v->sub_len : 0;
	e->has_sid = v->sid != NULL;
	e->sid_len = e->has_sid ? v->sid_len : 0;
	e->has_iat = v->has_iat;
	e->iat = v->iat;
	e->until = until;
	e->gen = vb->gen;
	e->issuer = idx;
	pthread_mutex_unlock(mu);
	free(old);
	if (old == NULL)
		atomic_fetch_add_explicit(&t->cache_entries, 1,
		    memory_order_relaxed);
	if (replaced)
		atomic_fetch_add_explicit(&t->cache_evict_replaced, 1,
		    memory_order_relaxed);
}

/*
 * Verifies j against ti at now, under the read lock; on success vb says
 * which keys proved it.
 */
static int
verify_with(struct trust *t, struct trust_issuer *ti, const struct jwt *j,
    int64_t now, struct verified_by *vb, enum jwt_verdict *why, char *err,
    size_t errlen)
{
	const struct config_issuer *ci = ti->cfg;
	struct jwt_issuer ji;
	bool stale;
	int rc;

	pthread_rwlock_rdlock(&t->lock);
	/* A fetched set past its maximum age proves nothing any more. */
	stale = ci->jwks_uri != NULL && ti->keys != NULL &&
	    now - ti->keys_at > ci->jwks_max_age;
	ji.issuer = ci->issuer;
	ji.keys = stale ? NULL : ti->keys;
	ji.audiences = (const char *const *)ci->audiences;
	ji.naud = ci->naud;
	ji.algs = ci->algs;
	ji.leeway = ci->leeway;
	ji.hs_secret = ti->hs;
	ji.hs_len = ti->hs_len;
	rc = jwt_verify(j, &ji, now, why, err, errlen);
	vb->gen = atomic_load_explicit(&ti->gen, memory_order_relaxed);
	vb->keys_until = INT64_MAX;
	if (ci->jwks_uri != NULL &&
	    ti->keys_at <= INT64_MAX - ci->jwks_max_age - 1)
		vb->keys_until = ti->keys_at + ci->jwks_max_age + 1;
	pthread_rwlock_unlock(&t->lock);
	if (rc == -1 && *why == JWT_KEYS_UNAVAILABLE && stale)
		snprintf(err, errlen, "the issuer's keys are older than "
		    "jwks_max_age (%llds): %s cannot be fetched",
		    (long long)ci->jwks_max_age, ci->jwks_uri);
	if (rc == -1 && ci->jwks_uri != NULL &&
	    (*why == JWT_UNKNOWN_KEY || *why == JWT_KEYS_UNAVAILABLE))
		ask_refresh(t, ti);
	return rc;
}

int
trust_token(struct trust *t, const char *tok, size_t len, int64_t now,
    struct revkey *k, enum jwt_verdict *why, char *err, size_t errlen)
{
	return trust_token_claims(t, tok, len, now, k, NULL, why, err,
	    errlen);
}

int
trust_token_claims(struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, cJSON **claims, enum jwt_verdict *why,
    char *err, size_t errlen)
{
	return trust_token_cut(t, tok, len, now, k, NULL, claims, why, err,
	    errlen);
}

/*
 * The values of parsed token j that its keys come from, or -1 with err
 * (no string jti: what jwt_key says). Borrowed from j. A sub or sid that
 * is there but not a string (a number, an array) is refused like such a
 * jti: the subject and session cutoffs are keyed on the string, and a
 * token whose subject they cannot name would pass them unseen.
 */
static int
values_of(const struct jwt *j, struct tok_values *v, char *err,
    size_t errlen)
{
	static const char *const opt[] = { "sub", "sid" };
	const char *jti = jwt_claim_str(j, "jti");
	size_t i;

	memset(v, 0, sizeof(*v));
	if (jti == NULL) {
		snprintf(err, errlen,
		    cJSON_GetObjectItemCaseSensitive(j->claims, "jti") == NULL ?
		    "no \"jti\" claim" : "\"jti\" is not a string");
		return -1;
	}
	for (i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
		if (cJSON_GetObjectItemCaseSensitive(j->claims, opt[i]) !=
		    NULL && jwt_claim_str(j, opt[i]) == NULL) {
			snprintf(err, errlen, "\"%s\" is not a string "
			    "(subject and session cutoffs could not apply)",
			    opt[i]);
			return -1;
		}
	}
	v->iss = j->iss;
	v->jti = jti;
	v->jti_len = strlen(jti);
	if ((v->sub = jwt_claim_str(j, "sub")) != NULL)
		v->sub_len = strlen(v->sub);
	if ((v->sid = jwt_claim_str(j, "sid")) != NULL)
		v->sid_len = strlen(v->sid);
	v->has_iat = jwt_claim_time(j, "iat", &v->iat) == 0;
	return 0;
}

/* The trusted issuer named by j's iss, or NULL with err and *why. */
static struct trust_issuer *
issuer_of(struct trust *t, const struct jwt *j, enum jwt_verdict *why,
    char *err, size_t errlen)
{
	size_t i;

	*why = JWT_UNTRUSTED_ISSUER;
	if (t == NULL || t->n == 0) {
		snprintf(err, errlen, "no trusted issuer is configured, and "
		    "token_verification is not revocation-only");
		return NULL;
	}
	for (i = 0; j->iss != NULL && i < t->n; i++)
		if (strcmp(t->iss[i].cfg->issuer, j->iss) == 0)
			return &t->iss[i];
	snprintf(err, errlen, j->iss == NULL ? "the token has no \"iss\"" :
	    "\"iss\" is not a trusted issuer");
	return NULL;
}

/* The claims of token tok (a cache hit: verified before) into *claims. */
static int
claims_again(const char *tok, size_t len, cJSON **claims, char *err,
    size_t errlen)
{
	struct jwt j;

	memset(&j, 0, sizeof(j));
	if (jwt_parse_claims(&j, tok, len, err, errlen) == -1)
		return -1;
	*claims = j.claims;
	j.claims = NULL;
	jwt_free(&j);
	return 0;
}

/*
 * Tokens refused, by verdict, for the whole process: kept outside struct
 * trust so that a SIGHUP (a new trust) does not reset the counters.
 */
static _Atomic uint64_t token_refused[JWT_VERDICT_COUNT];

static int token_cut(struct trust *t, const char *tok, size_t len,
    int64_t now, struct revkey *k, struct trust_cutoffs *cut, cJSON **claims,
    enum jwt_verdict *why, char *err, size_t errlen);

int
trust_token_cut(struct trust *t, const char *tok, size_t len, int64_t now,
    struct revkey *k, struct trust_cutoffs *cut, cJSON **claims,
    enum jwt_verdict *why, char *err, size_t errlen)
{
	int rc;

	rc = token_cut(t, tok, len, now, k, cut, claims, why, err, errlen);
	if (rc != 0 && *why > JWT_VALID && *why < JWT_VERDICT_COUNT)
		atomic_fetch_add_explicit(&token_refused[*why], 1,
		    memory_order_relaxed);
	return rc;
}

static int
token_cut(struct trust *t, const char *tok, size_t len, int64_t now,
    struct revkey *k, struct trust_cutoffs *cut, cJSON **claims,
    enum jwt_verdict *why, char *err, size_t errlen)
{
	struct trust_issuer *ti;
	struct tok_values v;
	struct verified_by vb;
	struct jwt j;
	uint64_t h = 0;
	bool cache;
	int rc = -1;

	*why = JWT_MALFORMED;
	memset(&j, 0, sizeof(j));
	/*
	 * A token verified before is not verified again, nor parsed: the
	 * cache holds its exact bytes and the values its keys are formed
	 * from.
	 */
	cache = t != NULL && !t->revocation_only && t->n > 0 &&
	    t->cache != NULL;
	if (cache) {
		h = XXH3_64bits_withSeed(tok, len, t->cache_seed);
		switch (cache_find(t, tok, len, h, now, k, cut, err, errlen)) {
		case -1:
			return -1;
		case 1:
			if (claims != NULL &&
			    claims_again(tok, len, claims, err, errlen) == -1)
				return -1;
			*why = JWT_VALID;
			return 0;
		}
	}
	if (jwt_parse(&j, tok, len, err, errlen) == -1)
		return -1;
	if (values_of(&j, &v, err, errlen) == -1 ||
	    keys_of(&v, k, cut, err, errlen) == -1)
		goto out;
	if (t != NULL && t->revocation_only) {
		if (claims != NULL) {
			/* Nothing was verified: nothing to vouch for. */
			*why = JWT_UNTRUSTED_ISSUER;
			snprintf(err, errlen, "token_verification is "
			    "revocation-only: no token is verified");
			goto out;
		}
		/* Unverified: its iat shows nothing (exact scopes). */
		k->has_issued = false;
		k->issued_at = 0;
		*why = JWT_VALID;
		rc = 0;
		goto out;
	}
	if ((ti = issuer_of(t, &j, why, err, errlen)) == NULL)
		goto out;
	if (cache)
		atomic_fetch_add_explicit(&t->cache_misses, 1,
		    memory_order_relaxed);
	rc = verify_with(t, ti, &j, now, &vb, why, err, errlen);
	if (rc == 0 && cache)
		cache_put(t, tok, len, h, (size_t)(ti - t->iss), &j, &v, &vb,
		    now);
	if (rc == 0 && claims != NULL &&
	    (*claims = cJSON_Duplicate(j.claims, 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		*why = JWT_MALFORMED;
		rc = -1;
	}
out:
	jwt_free(&j);
	return rc;
}

/* One sample "NAME{issuer=ISS} V" of a per-issuer series. */
static void
issuer_sample(struct sbuf *b, const char *name, const char *iss, double v)
{
	sbuf_addf(b, "%s{issuer=", name);
	sbuf_add_label(b, iss, strlen(iss));
	sbuf_addf(b, "} %.17g\n", v);
}

void
trust_metrics(struct sbuf *b, struct trust *t)
{
	static const char *const reasons[3] = { "replaced", "expired",
	    "keys_changed" };
	static const struct {
		const char *name, *type, *help;
	} fam[4] = {
		{ "revcheckd_jwks_keys", "gauge", "Usable keys in each "
		    "issuer's set in service." },
		{ "revcheckd_jwks_refreshes_total", "counter", "Successful "
		    "fetches of each issuer's jwks_uri." },
		{ "revcheckd_jwks_refresh_failures_total", "counter", "Failed "
		    "fetches of each issuer's jwks_uri (the last good set is "
		    "kept up to jwks_max_age)." },
		{ "revcheckd_jwks_age_seconds", "gauge", "Seconds since each "
		    "jwks_uri issuer's set in service was fetched (absent "
		    "before the first good fetch)." },
	};
	const struct trust_issuer *ti;
	uint64_t ev[3] = { 0, 0, 0 };
	int64_t now = util_now();
	size_t i;
	int f;

	if (t != NULL) {
		ev[0] = atomic_load(&t->cache_evict_replaced);
		ev[1] = atomic_load(&t->cache_evict_expired);
		ev[2] = atomic_load(&t->cache_evict_keys);
	}
	sbuf_addf(b, "# HELP revcheckd_token_cache_hits_total Tokens answered "
	    "from the verified-token cache.\n"
	    "# TYPE revcheckd_token_cache_hits_total counter\n"
	    "revcheckd_token_cache_hits_total %llu\n"
	    "# HELP revcheckd_token_cache_misses_total Tokens of a trusted "
	    "issuer not in the cache (verified).\n"
	    "# TYPE revcheckd_token_cache_misses_total counter\n"
	    "revcheckd_token_cache_misses_total %llu\n"
	    "# HELP revcheckd_token_cache_entries Cache slots holding a "
	    "verified token.\n"
	    "# TYPE revcheckd_token_cache_entries gauge\n"
	    "revcheckd_token_cache_entries %llu\n"
	    "# HELP revcheckd_token_cache_size Slots of the cache "
	    "(token_cache_size).\n"
	    "# TYPE revcheckd_token_cache_size gauge\n"
	    "revcheckd_token_cache_size %llu\n"
	    "# HELP revcheckd_token_cache_evictions_total Entries dropped: "
	    "replaced by another token, past their time, or made under keys "
	    "since replaced.\n"
	    "# TYPE revcheckd_token_cache_evictions_total counter\n",
	    (unsigned long long)(t != NULL ? atomic_load(&t->cache_hits) : 0),
	    (unsigned long long)(t != NULL ? atomic_load(&t->cache_misses) :
	    0),
	    (unsigned long long)(t != NULL ? atomic_load(&t->cache_entries) :
	    0),
	    (unsigned long long)(t != NULL ? t->cache_size : 0));
	for (f = 0; f < 3; f++)
		sbuf_addf(b, "revcheckd_token_cache_evictions_total{reason="
		    "\"%s\"} %llu\n", reasons[f], (unsigned long long)ev[f]);
	sbuf_adds(b, "# HELP revcheckd_token_verification_failures_total "
	    "Tokens refused, by reason (the error word of the answer).\n"
	    "# TYPE revcheckd_token_verification_failures_total counter\n");
	for (f = JWT_VALID + 1; f < JWT_VERDICT_COUNT; f++)
		sbuf_addf(b, "revcheckd_token_verification_failures_total{"
		    "reason=\"%s\"} %llu\n", jwt_verdict_str((enum jwt_verdict)f),
		    (unsigned long long)atomic_load(&token_refused[f]));
	if (t != NULL && t->n > 0)
		pthread_rwlock_rdlock(&t->lock);
	for (f = 0; f < 4; f++) {
		sbuf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", fam[f].name,
		    fam[f].help, fam[f].name, fam[f].type);
		for (i = 0; t != NULL && i < t->n; i++) {
			ti = &t->iss[i];
			if (f == 0)
				issuer_sample(b, fam[f].name, ti->cfg->issuer,
				    ti->keys != NULL ? (double)ti->keys->n : 0);
			else if (ti->cfg->jwks_uri == NULL)
				continue;
			else if (f == 1)
				issuer_sample(b, fam[f].name, ti->cfg->issuer,
				    (double)ti->fetches_ok);
			else if (f == 2)
				issuer_sample(b, fam[f].name, ti->cfg->issuer,
				    (double)ti->fetches_failed);
			else if (ti->keys != NULL)
				issuer_sample(b, fam[f].name, ti->cfg->issuer,
				    (double)(now - ti->keys_at));
		}
	}
	if (t != NULL && t->n > 0)
		pthread_rwlock_unlock(&t->lock);
}

void
trust_status_json(cJSON *root, struct trust *t)
{
	const struct trust_issuer *ti;
	int64_t now = util_now();
	cJSON *tv, *arr, *o, *algs;
	size_t i;
	int a;

	tv = cJSON_AddObjectToObject(root, "token_verification");
	cJSON_AddStringToObject(tv, "mode", t == NULL || !t->revocation_only ?
	    "required" : "revocation-only");
	arr = cJSON_AddArrayToObject(tv, "issuers");
	if (t != NULL && t->n > 0)
		pthread_rwlock_rdlock(&t->lock);
	for (i = 0; t != NULL && i < t->n; i++) {
		ti = &t->iss[i];
		if ((o = json_add(arr, NULL, cJSON_CreateObject())) == NULL)
			break;
		json_add_str(o, "issuer", ti->cfg->issuer);
		json_add_u64(o, "keys", ti->keys != NULL ? ti->keys->n : 0);
		algs = cJSON_AddArrayToObject(o, "algorithms");
		for (a = JWA_INVALID + 1; a < JWA_COUNT; a++)
			if ((ti->cfg->algs & JWA_BIT(a)) != 0)
				json_add(algs, NULL, cJSON_CreateString(
				    jwa_name((enum jwa)a)));
		if (ti->cfg->jwks_uri == NULL)
			continue;
		json_add_str(o, "jwks_uri", ti->cfg->jwks_uri);
		if (ti->keys != NULL)
			json_add_i64(o, "keys_age_seconds", now - ti->keys_at);
		else
			cJSON_AddNullToObject(o, "keys_age_seconds");
		cJSON_AddBoolToObject(o, "keys_expired", ti->keys == NULL ||
		    now - ti->keys_at > ti->cfg->jwks_max_age);
		json_add_u64(o, "fetches_ok", ti->fetches_ok);
		json_add_u64(o, "fetches_failed", ti->fetches_failed);
		json_add_opt(o, "last_error", ti->last_error);
	}
	if (t != NULL && t->n > 0)
		pthread_rwlock_unlock(&t->lock);
	o = cJSON_AddObjectToObject(tv, "cache");
	json_add_u64(o, "size", t != NULL ? t->cache_size : 0);
	json_add_u64(o, "hits", t != NULL ? atomic_load(&t->cache_hits) : 0);
	json_add_u64(o, "misses", t != NULL ? atomic_load(&t->cache_misses) :
	    0);
}
