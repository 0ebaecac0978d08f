/* fetch.c - filterbuild build: inputs from http(s) URLs, conditional GET over a local cache
 *
 * One cache entry per URL, named by the SHA-256 of the URL, holds a short
 * text header (the URL, the validators, the body's length and SHA-256)
 * and the body. An entry is replaced whole by rename(), so a reader sees
 * the old entry or the new one, never a mix.
 */
#include "fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "publish.h"
#include "util.h"

#define CACHE_MAGIC	"revcheck-crl-cache 1\n"
#define CACHE_HDR_MAX	(2 * FETCH_MAX_VALIDATOR + 8192)

/* One cache entry or one response: body and validators. */
struct entry {
	unsigned char	*body;
	size_t		 len;
	char		 etag[FETCH_MAX_VALIDATOR];
	char		 lastmod[FETCH_MAX_VALIDATOR];
};

/* Transfer state of one request. */
struct xfer {
	struct entry	 e;
	size_t		 cap;
	uint64_t	 max;
	bool		 too_big;
	bool		 bad_header;
	bool		 chunked;	/* the final response's body is chunked */
};

/* An error message into err; a cut message ends in "...". */
static void ferr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
ferr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if ((n < 0 || (size_t)n >= errlen) && errlen > 4)
		memcpy(err + errlen - 4, "...", 4);
}

void
fetch_opts_init(struct fetch_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_size = FETCH_DEFAULT_MAX_SIZE;
	o->timeout = FETCH_DEFAULT_TIMEOUT;
}

bool
fetch_is_url(const char *in)
{
	size_t i = 0;

	if (!((in[0] >= 'a' && in[0] <= 'z') || (in[0] >= 'A' &&
	    in[0] <= 'Z')))
		return false;
	while ((in[i] >= 'a' && in[i] <= 'z') || (in[i] >= 'A' &&
	    in[i] <= 'Z') || (in[i] >= '0' && in[i] <= '9') || in[i] == '+' ||
	    in[i] == '.' || in[i] == '-')
		i++;
	return strncmp(in + i, "://", 3) == 0;
}

static void
entry_free(struct entry *e)
{
	free(e->body);
	memset(e, 0, sizeof(*e));
}

/* A validator we send back in a header: printable ASCII only. */
static bool
validator_ok(const char *v)
{
	for (; *v != '\0'; v++)
		if ((unsigned char)*v < 0x20 || (unsigned char)*v > 0x7e)
			return false;
	return true;
}

/*
 * The cache directory: created 0700 when missing; refused unless it is a
 * directory of this user that no one else may write.
 */
static int
cache_dir(const struct fetch_opts *o, char *out, size_t outlen, char *err,
    size_t errlen)
{
	const char *env, *colon;
	struct stat st;
	size_t n;
	int w;

	if (o->cache_dir != NULL)
		w = snprintf(out, outlen, "%s", o->cache_dir);
	else if ((env = getenv("CACHE_DIRECTORY")) != NULL && env[0] != '\0') {
		/* systemd lists several directories with ':'. */
		colon = strchr(env, ':');
		n = colon != NULL ? (size_t)(colon - env) : strlen(env);
		w = snprintf(out, outlen, "%.*s", (int)(n > INT_MAX ? INT_MAX :
		    n), env);
	} else if ((env = getenv("XDG_CACHE_HOME")) != NULL && env[0] == '/')
		w = snprintf(out, outlen, "%s/revcheck", env);
	else if ((env = getenv("HOME")) != NULL && env[0] == '/')
		w = snprintf(out, outlen, "%s/.cache/revcheck", env);
	else {
		ferr(err, errlen, "no cache directory for URL inputs: give "
		    "--cache-dir (no CACHE_DIRECTORY, XDG_CACHE_HOME or HOME)");
		return -1;
	}
	if (w < 0 || (size_t)w >= outlen) {
		ferr(err, errlen, "cache directory name too long");
		return -1;
	}
	if (mkdir(out, 0700) != 0 && errno != EEXIST) {
		ferr(err, errlen, "%s: cannot create the cache directory: "
		    "%s", out, strerror(errno));
		return -1;
	}
	if (stat(out, &st) != 0) {
		ferr(err, errlen, "%s: %s", out, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		ferr(err, errlen, "%s: the cache directory is not a "
		    "directory", out);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		ferr(err, errlen, "%s: refusing a cache directory that is "
		    "not owned by uid %u or is writable by group or others "
		    "(mode %03o)", out, (unsigned)geteuid(),
		    (unsigned)(st.st_mode & 0777));
		return -1;
	}
	return 0;
}

/* DIR/<sha256 of the URL, hex>.crl */
static int
cache_path(const char *dir, const char *url, char *out, size_t outlen)
{
	unsigned char h[UTIL_SHA256_LEN];
	char hex[2 * UTIL_SHA256_LEN + 1];
	int w;

	if (util_sha256(h, url, strlen(url)) != 0)
		return -1;
	util_hex(hex, h, sizeof(h));
	w = snprintf(out, outlen, "%s/%s.crl", dir, hex);
	return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

/*
 * Parses "NAME VALUE\n" at *p for the expected name into out (cap bytes).
 * Advances *p. -1 when the line is missing, too long or not printable.
 */
static int
hdr_line(const char **p, const char *end, const char *name, char *out,
    size_t cap)
{
	size_t nl = strlen(name), vl;
	const char *eol;

	if ((size_t)(end - *p) <= nl || memcmp(*p, name, nl) != 0 ||
	    (*p)[nl] != ' ')
		return -1;
	*p += nl + 1;
	if ((eol = memchr(*p, '\n', (size_t)(end - *p))) == NULL)
		return -1;
	vl = (size_t)(eol - *p);
	if (vl >= cap)
		return -1;
	memcpy(out, *p, vl);
	out[vl] = '\0';
	*p = eol + 1;
	return validator_ok(out) ? 0 : -1;
}

/*
 * Loads the cache entry of url when it is whole (length and SHA-256 as
 * recorded, the same URL). 0 with e filled, 1 when there is none or it
 * is unusable (e empty), -1 on out of memory.
 */
static int
cache_load(const char *path, const char *url, uint64_t max, struct entry *e)
{
	unsigned char *buf = NULL, h[UTIL_SHA256_LEN], want[UTIL_SHA256_LEN];
	char eurl[4096 + 1], shahex[2 * UTIL_SHA256_LEN + 1], lenbuf[24];
	char err[256];
	const char *p, *end;
	uint64_t blen;
	size_t len;
	int rc = 1;

	memset(e, 0, sizeof(*e));
	if (access(path, F_OK) != 0)
		return 1;
	if (max > SIZE_MAX - CACHE_HDR_MAX)
		max = SIZE_MAX - CACHE_HDR_MAX;
	if (util_read_file(path, (size_t)max + CACHE_HDR_MAX, &buf, &len, err,
	    sizeof(err)) != 0)
		return 1;
	p = (const char *)buf;
	end = p + len;
	if (len < sizeof(CACHE_MAGIC) - 1 || memcmp(p, CACHE_MAGIC,
	    sizeof(CACHE_MAGIC) - 1) != 0)
		goto out;
	p += sizeof(CACHE_MAGIC) - 1;
	if (hdr_line(&p, end, "url", eurl, sizeof(eurl)) != 0 ||
	    strcmp(eurl, url) != 0 ||
	    hdr_line(&p, end, "etag", e->etag, sizeof(e->etag)) != 0 ||
	    hdr_line(&p, end, "last-modified", e->lastmod,
	    sizeof(e->lastmod)) != 0 ||
	    hdr_line(&p, end, "sha256", shahex, sizeof(shahex)) != 0 ||
	    hdr_line(&p, end, "length", lenbuf, sizeof(lenbuf)) != 0 ||
	    p == end || *p != '\n')
		goto out;
	p++;
	if (util_parse_u64(lenbuf, max, &blen) != 0 ||
	    blen != (uint64_t)(end - p) ||
	    util_unhex(want, sizeof(want), shahex, strlen(shahex), false) !=
	    (long)sizeof(want) ||
	    util_sha256(h, p, (size_t)blen) != 0 ||
	    memcmp(h, want, sizeof(h)) != 0)
		goto out;
	if ((e->body = malloc(blen > 0 ? (size_t)blen : 1)) == NULL) {
		rc = -1;
		goto out;
	}
	memcpy(e->body, p, (size_t)blen);
	e->len = (size_t)blen;
	rc = 0;
out:
	if (rc != 0) {
		e->etag[0] = '\0';
		e->lastmod[0] = '\0';
	}
	free(buf);
	return rc;
}

/* Writes the entry as path durably (publish_pathv). */
static int
cache_store(const char *path, const char *url,
    const struct entry *e, char *err, size_t errlen)
{
	unsigned char h[UTIL_SHA256_LEN];
	char hex[2 * UTIL_SHA256_LEN + 1], e2[512], *hdr = NULL;
	struct iovec iov[2];
	int w, rc = -1;
	size_t hlen;

	if (util_sha256(h, e->body, e->len) != 0) {
		ferr(err, errlen, "%s: cannot hash the body", url);
		return -1;
	}
	util_hex(hex, h, sizeof(h));
	hlen = strlen(url) + strlen(e->etag) + strlen(e->lastmod) + 256;
	if ((hdr = malloc(hlen)) == NULL) {
		ferr(err, errlen, "%s: out of memory", url);
		return -1;
	}
	w = snprintf(hdr, hlen, CACHE_MAGIC "url %s\netag %s\nlast-modified "
	    "%s\nsha256 %s\nlength %zu\n\n", url, e->etag, e->lastmod, hex,
	    e->len);
	if (w < 0 || (size_t)w >= hlen) {
		ferr(err, errlen, "%s: cache entry header too long", url);
		goto out;
	}
	iov[0].iov_base = hdr;
	iov[0].iov_len = (size_t)w;
	iov[1].iov_base = e->body;
	iov[1].iov_len = e->len;
	if (publish_pathv(path, iov, 2, 0600, 0, e2, sizeof(e2)) != 0) {
		ferr(err, errlen, "%s: cannot write to the cache: %s", url, e2);
		goto out;
	}
	rc = 0;
out:
	free(hdr);
	return rc;
}

static size_t
on_body(char *data, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm;

	if (util_buf_append(&x->e.body, &x->e.len, &x->cap, data, n,
	    x->max) != 0) {
		if (errno == EFBIG)
			x->too_big = true;
		return 0;	/* aborts the transfer */
	}
	return n;
}

/*
 * Keeps the ETag and Last-Modified of the final response: a status line
 * (each redirect starts one) forgets those of the one before.
 */
static size_t
on_header(char *data, size_t sz, size_t nm, void *arg)
{
	struct xfer *x = arg;
	size_t n = sz * nm, vl;
	const char *v;
	char *dst;

	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		x->e.etag[0] = '\0';
		x->e.lastmod[0] = '\0';
		x->chunked = false;
		return n;
	}
	if (n > 18 && strncasecmp(data, "Transfer-Encoding:", 18) == 0 &&
	    memmem(data + 18, n - 18, "chunked", 7) != NULL) {
		x->chunked = true;
		return n;
	}
	if (n > 5 && strncasecmp(data, "ETag:", 5) == 0) {
		v = data + 5;
		dst = x->e.etag;
	} else if (n > 14 && strncasecmp(data, "Last-Modified:", 14) == 0) {
		v = data + 14;
		dst = x->e.lastmod;
	} else
		return n;
	vl = n - (size_t)(v - data);
	while (vl > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vl--;
	}
	while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n' ||
	    v[vl - 1] == ' ' || v[vl - 1] == '\t'))
		vl--;
	/* An odd validator is not kept: the next request is unconditional. */
	if (vl >= FETCH_MAX_VALIDATOR) {
		x->bad_header = true;
		return n;
	}
	memcpy(dst, v, vl);
	dst[vl] = '\0';
	if (!validator_ok(dst)) {
		dst[0] = '\0';
		x->bad_header = true;
	}
	return n;
}

/* Refuses URLs curl would take but we will not: schemes, credentials. */
static int
url_check(const char *url, char *err, size_t errlen)
{
	CURLU *u;
	char *scheme = NULL, *user = NULL, *host = NULL;
	int rc = -1;

	if ((u = curl_url()) == NULL) {
		ferr(err, errlen, "%s: out of memory", url);
		return -1;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		ferr(err, errlen, "%s: not a valid URL", url);
		goto out;
	}
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		ferr(err, errlen, "%s: scheme %s is refused: only http:// "
		    "and https:// inputs are fetched (give a local file by its "
		    "path)", url, scheme);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		/* Named without them: the message goes to logs too. */
		if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
			host = NULL;
		ferr(err, errlen, "%s://...@%s/...: credentials in a URL are "
		    "refused (they would be written to the cache and to logs)",
		    scheme, host != NULL ? host : "?");
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(user);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

/*
 * One GET of url, conditional on the validators of old when it has any.
 * 0 with *code (200 or 304) and x filled; -1 with err naming the URL.
 */
/*
 * Whether url is https: its redirects may then only lead to https, or a
 * list fetched over TLS would be read from a plain http answer that
 * anyone on the path can write.
 */
static bool
fetch_is_https(const char *url)
{
	return strncasecmp(url, "https://", 8) == 0;
}

static int
http_get(const char *url, const struct fetch_opts *o,
    const struct entry *old, struct xfer *x, long *code, char *err,
    size_t errlen)
{
	char ebuf[CURL_ERROR_SIZE], h1[FETCH_MAX_VALIDATOR + 32];
	char h2[FETCH_MAX_VALIDATOR + 32];
	struct curl_slist *hl = NULL, *t;
	curl_off_t clen = -1;
	CURLcode cc;
	CURL *h;
	long ver = 0;
	int rc = -1;

	if ((h = curl_easy_init()) == NULL) {
		ferr(err, errlen, "%s: cannot start libcurl", url);
		return -1;
	}
	if (old->etag[0] != '\0') {
		snprintf(h1, sizeof(h1), "If-None-Match: %s", old->etag);
		if ((t = curl_slist_append(hl, h1)) == NULL)
			goto nomem;
		hl = t;
	}
	if (old->lastmod[0] != '\0') {
		snprintf(h2, sizeof(h2), "If-Modified-Since: %s", old->lastmod);
		if ((t = curl_slist_append(hl, h2)) == NULL)
			goto nomem;
		hl = t;
	}
	ebuf[0] = '\0';
	if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR,
	    fetch_is_https(url) ? "https" : "http,https") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXREDIRS, (long)FETCH_MAX_REDIRS) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
	    (o->ca_file != NULL &&
	    curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file) != CURLE_OK) ||
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)o->timeout) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)(o->timeout < 15 ?
	    o->timeout : 15)) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)o->max_size) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, x) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) !=
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_HEADERDATA, x) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_USERAGENT,
	    "filterbuild/" REVCHECK_VERSION) != CURLE_OK) {
		ferr(err, errlen, "%s: cannot set up libcurl", url);
		goto out;
	}
	cc = curl_easy_perform(h);
	if (cc == CURLE_FILESIZE_EXCEEDED || x->too_big) {
		ferr(err, errlen, "%s: response larger than the limit of "
		    "%llu bytes (--fetch-max-size)", url,
		    (unsigned long long)o->max_size);
		goto out;
	}
	if (cc == CURLE_UNSUPPORTED_PROTOCOL) {
		ferr(err, errlen, "%s: redirected to a refused scheme (only "
		    "http and https are followed, and from https only https): "
		    "%s", url, ebuf[0] != '\0' ? ebuf : curl_easy_strerror(cc));
		goto out;
	}
	if (cc != CURLE_OK) {
		ferr(err, errlen, "%s: %s", url, ebuf[0] != '\0' ? ebuf :
		    curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
	if (*code == 304 && old->body == NULL) {
		ferr(err, errlen, "%s: HTTP 304 to a request that was not "
		    "conditional", url);
		goto out;
	}
	if (*code != 200 && *code != 304) {
		ferr(err, errlen, "%s: HTTP %ld", url, *code);
		goto out;
	}
	/*
	 * An HTTP/1 body with neither a length nor chunks ends where the
	 * connection closes: cut short, it looks complete to libcurl, and a
	 * token list has no end of its own. The ids after the cut would be
	 * published as not revoked. (HTTP/2 and 3 frame every body.)
	 */
	if (*code == 200 && curl_easy_getinfo(h, CURLINFO_HTTP_VERSION,
	    &ver) == CURLE_OK && (ver == CURL_HTTP_VERSION_1_0 ||
	    ver == CURL_HTTP_VERSION_1_1) && !x->chunked &&
	    (curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
	    &clen) != CURLE_OK || clen < 0)) {
		ferr(err, errlen, "%s: the response has neither "
		    "Content-Length nor chunked encoding, so a connection "
		    "closed early would look like the whole list: refused",
		    url);
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	ferr(err, errlen, "%s: out of memory", url);
out:
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return rc;
}

int
fetch_input(struct input_set *s, const char *url,
    const struct fetch_opts *o, const struct input_opts *io, char *err,
    size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX], serr[512];
	struct input_opts fio = *io;
	struct entry old;
	struct xfer x;
	long code = 0;
	int rc = -1;

	/* A list in the body may not speak for an X.509 scope. */
	fio.fetched = true;
	io = &fio;
	memset(&old, 0, sizeof(old));
	memset(&x, 0, sizeof(x));
	x.max = o->max_size;

	/* 1. Only http and https, without credentials. */
	if (url_check(url, err, errlen) != 0)
		return -1;
	/* 2. The cache entry, when there is a whole one. */
	if (cache_dir(o, dir, sizeof(dir), serr, sizeof(serr)) != 0) {
		ferr(err, errlen, "%s: %s", url, serr);
		return -1;
	}
	if (cache_path(dir, url, path, sizeof(path)) != 0) {
		ferr(err, errlen, "%s: cache entry name too long", url);
		return -1;
	}
	if (cache_load(path, url, o->max_size, &old) < 0) {
		ferr(err, errlen, "%s: out of memory", url);
		return -1;
	}
	if (old.body == NULL || (old.etag[0] == '\0' &&
	    old.lastmod[0] == '\0')) {
		entry_free(&old);
		memset(&old, 0, sizeof(old));
	}
	/* 3. Ask the server; the cache stands in only for a 304. */
	if (http_get(url, o, &old, &x, &code, err, errlen) != 0)
		goto out;
	if (code == 304) {
		if (!o->quiet)
			fprintf(stderr, "filterbuild: %s: not modified (HTTP "
			    "304), %zu bytes from the cache\n", url, old.len);
		rc = input_read_buf(s, url, old.body, old.len, io, err,
		    errlen);
		goto out;
	}
	if (!o->quiet)
		fprintf(stderr, "filterbuild: %s: fetched %zu bytes (HTTP 200)"
		    "\n", url, x.e.len);
	/* 4. Read like a file; only a body that reads is cached. */
	if (input_read_buf(s, url, x.e.body, x.e.len, io, err, errlen) != 0)
		goto out;
	rc = 0;
	if (x.e.etag[0] == '\0' && x.e.lastmod[0] == '\0') {
		/*
		 * Nothing to make a request conditional on; an older entry
		 * must not make the next one conditional either.
		 */
		(void)unlink(path);
		goto out;
	}
	if (x.e.body == NULL && (x.e.body = malloc(1)) == NULL)
		goto out;
	if (cache_store(path, url, &x.e, serr, sizeof(serr)) != 0 &&
	    !o->quiet)
		fprintf(stderr, "filterbuild: warning: %s: not cached: %s\n",
		    url, serr);
out:
	entry_free(&old);
	entry_free(&x.e);
	return rc;
}
