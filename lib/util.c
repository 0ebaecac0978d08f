/* util.c - small shared helpers: hex, SHA-256, time, numbers, whole-file reads */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

static const char hexdig[] = "0123456789abcdef";

void
util_hex(char *out, const unsigned char *in, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hexdig[in[i] >> 4];
		out[2 * i + 1] = hexdig[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

void
util_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int
util_path_join(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int
util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long
util_unhex(unsigned char *out, size_t cap, const char *in, size_t len,
    bool allow_colons)
{
	size_t i, ndig = 0, o = 0, group = 0, groups = 0;
	int v;
	bool high;

	/*
	 * Count digits first so an odd count gets its leading zero nibble.
	 * With colons, every group but the first has an even number of
	 * digits, so that the colons fall between bytes: "12:3" could mean
	 * 12 03 or 01 23, and a serial read the wrong way revokes, or
	 * clears, another certificate.
	 */
	for (i = 0; i < len; i++) {
		if (in[i] == ':' && allow_colons) {
			if (group == 0 || (groups > 0 && group % 2 != 0))
				return -1;
			groups++;
			group = 0;
			continue;
		}
		if (util_hexval((unsigned char)in[i]) < 0)
			return -1;
		ndig++;
		group++;
	}
	if (groups > 0 && (group == 0 || group % 2 != 0))
		return -1;
	if (ndig == 0 || (ndig + 1) / 2 > cap || (ndig + 1) / 2 > LONG_MAX)
		return -1;
	high = (ndig % 2) == 0;
	if (!high)
		out[o] = 0;
	for (i = 0; i < len; i++) {
		if (in[i] == ':')
			continue;
		v = util_hexval((unsigned char)in[i]);
		if (high)
			out[o] = (unsigned char)(v << 4);
		else
			out[o++] |= (unsigned char)v;
		high = !high;
	}
	return (long)o;
}

/* The calling thread's give-way stretch (0: never), its work and yields. */
static _Thread_local size_t	gw_every;
static _Thread_local size_t	gw_done;
static _Thread_local uint64_t	gw_count;

void
util_give_way(size_t bytes)
{
	gw_every = bytes;
	gw_done = 0;
}

void
util_give_way_point(size_t bytes)
{
	if (gw_every == 0)
		return;
	gw_done += bytes;
	if (gw_done >= gw_every) {
		gw_done = 0;
		gw_count++;
		(void)sched_yield();
	}
}

uint64_t
util_give_way_count(void)
{
	return gw_count;
}

int
util_sha256(unsigned char out[UTIL_SHA256_LEN], const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned int olen = 0;
	EVP_MD_CTX *ctx;
	size_t n;
	int rc = -1;

	if (gw_every == 0 || len <= gw_every) {
		if (EVP_Digest(buf, len, out, &olen, EVP_sha256(), NULL) != 1 ||
		    olen != UTIL_SHA256_LEN)
			return -1;
		util_give_way_point(len);
		return 0;
	}
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while (len > 0) {
		n = len < gw_every ? len : gw_every;
		if (EVP_DigestUpdate(ctx, p, n) != 1)
			goto out;
		util_give_way_point(n);
		p += n;
		len -= n;
	}
	if (EVP_DigestFinal_ex(ctx, out, &olen) == 1 &&
	    olen == UTIL_SHA256_LEN)
		rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

int
util_sha256_file(const char *path, unsigned char out[UTIL_SHA256_LEN],
    char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	unsigned int olen = 0;
	EVP_MD_CTX *ctx = NULL;
	ssize_t n;
	int fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if ((buf = malloc(1 << 20)) == NULL ||
	    (ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	for (;;) {
		n = read(fd, buf, 1 << 20);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: read: %s", path,
			    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1) {
			snprintf(err, errlen, "%s: SHA-256 failed", path);
			goto out;
		}
	}
	if (EVP_DigestFinal_ex(ctx, out, &olen) != 1 ||
	    olen != UTIL_SHA256_LEN) {
		snprintf(err, errlen, "%s: SHA-256 failed", path);
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	close(fd);
	return rc;
}

void
util_rfc3339(char out[UTIL_RFC3339_LEN], int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, UTIL_RFC3339_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, UTIL_RFC3339_LEN, "%s", "invalid-time");
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int
digits(const char *s, int n, int *out)
{
	int i, v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

int
util_parse_rfc3339(const char *s, int64_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	int y, mo, d, h, mi, se, oh, om;
	const char *p;
	int64_t t;

	if (strlen(s) < 20)
		return -1;
	if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
	    s[7] != '-' || digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) ||
	    s[16] != ':' || digits(s + 17, 2, &se))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || se > 60)
		return -1;
	if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) ||
	    y % 400 == 0))
		return -1;
	p = s + 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -1;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + (se == 60 ? 59 : se);
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		if (digits(p + 1, 2, &oh) || p[3] != ':' ||
		    digits(p + 4, 2, &om) || oh > 23 || om > 59)
			return -1;
		t += (*p == '+' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
		p += 6;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	*out = t;
	return 0;
}

int
util_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

int
util_parse_double(const char *s, double *out)
{
	double v;
	char *end;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int
util_parse_duration(const char *s, int64_t *out)
{
	char num[32];
	size_t len;
	uint64_t v, mul = 1;

	len = strlen(s);
	if (len == 0 || len >= sizeof(num))
		return -1;
	switch (s[len - 1]) {
	case 's': mul = 1; len--; break;
	case 'm': mul = 60; len--; break;
	case 'h': mul = 3600; len--; break;
	case 'd': mul = 86400; len--; break;
	default: break;
	}
	memcpy(num, s, len);
	num[len] = '\0';
	if (util_parse_u64(num, UINT64_C(100) * 366 * 86400, &v) != 0 || v == 0)
		return -1;
	if (v > UINT64_C(100) * 366 * 86400 / mul)
		return -1;
	*out = (int64_t)(v * mul);
	return 0;
}

static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static int64_t fake_now = -1;		/* -1: REVCHECK_FAKE_NOW not set */
static struct timespec wall0, boot0;	/* the clocks at the first call */

static void
clock_init(void)
{
	const char *fake = getenv("REVCHECK_FAKE_NOW");
	uint64_t v;

	if (fake != NULL && util_parse_u64(fake, INT64_MAX, &v) == 0)
		fake_now = (int64_t)v;
	(void)clock_gettime(CLOCK_REALTIME, &wall0);
	/* CLOCK_BOOTTIME: never stepped, and counts suspend too. */
	(void)clock_gettime(CLOCK_BOOTTIME, &boot0);
}

static int64_t
ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/*
 * In nanoseconds, not whole seconds: the two clocks' seconds tick at
 * different instants, and whole seconds put the floor a second ahead of
 * the wall clock for part of every second (deltas were stamped a second
 * in the future, their ages read -1).
 */
int64_t
util_clock_floor(const struct timespec *wall, const struct timespec *wall_first,
    const struct timespec *boot, const struct timespec *boot_first)
{
	int64_t w = ts_ns(wall);
	int64_t floor = ts_ns(wall_first) + (ts_ns(boot) - ts_ns(boot_first));

	return (w > floor ? w : floor) / 1000000000;
}

int64_t
util_now(void)
{
	struct timespec wall = { 0, 0 }, boot = { 0, 0 };

	(void)pthread_once(&clock_once, clock_init);
	if (fake_now >= 0)
		return fake_now;
	/* Neither fails on Linux; if one did, the other would decide. */
	(void)clock_gettime(CLOCK_REALTIME, &wall);
	(void)clock_gettime(CLOCK_BOOTTIME, &boot);
	return util_clock_floor(&wall, &wall0, &boot, &boot0);
}

double
util_monotime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
util_lower_thread_priority(int delta)
{
	id_t tid = (id_t)gettid();
	int cur, want;

	if (delta <= 0) {
		errno = EINVAL;
		return -1;
	}
	/* -1 is also a valid nice value: errno tells them apart. */
	errno = 0;
	cur = getpriority(PRIO_PROCESS, tid);
	if (cur == -1 && errno != 0)
		return -1;
	want = cur > 19 - delta ? 19 : cur + delta;
	if (setpriority(PRIO_PROCESS, tid, want) == -1)
		return -1;
	return want;
}

int
util_read_file(const char *path, size_t max, unsigned char **out,
    size_t *outlen, char *err, size_t errlen)
{
	return util_read_file_st(path, max, out, outlen, NULL, err, errlen);
}

int
util_read_file_st(const char *path, size_t max, unsigned char **out,
    size_t *outlen, struct stat *stp, char *err, size_t errlen)
{
	unsigned char *buf = NULL, *nbuf;
	size_t len = 0, cap = 0;
	ssize_t n;
	struct stat st;
	int fd;
	bool is_stdin = strcmp(path, "-") == 0;

	*out = NULL;
	*outlen = 0;
	if (is_stdin) {
		fd = STDIN_FILENO;
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    (stp != NULL ? O_NONBLOCK : 0))) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0) {
		if (stp != NULL) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
	} else if (stp != NULL && !S_ISREG(st.st_mode)) {
		/* A FIFO or device named in a config must not hang a read. */
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	} else if (S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > max) {
			snprintf(err, errlen, "%s: file is %lld bytes, over the "
			    "limit of %zu", path, (long long)st.st_size, max);
			goto fail;
		}
		/*
		 * Its length, a byte more and the NUL: the read that finds
		 * the end then has room, and the buffer is doubled (copied
		 * into fresh memory: 2 GB for a 10^8-id list) only if the
		 * file grew since fstat.
		 */
		cap = (size_t)st.st_size + 2;
		/* Opened without blocking only for the open itself. */
		if (stp != NULL && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) &
		    ~O_NONBLOCK) == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto fail;
		}
	} else if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		goto fail;
	}
	if (cap < 4096)
		cap = 4096;
	if ((buf = malloc(cap)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	/* A regular file's size is known: its pages all get written. */
	if (cap >= UTIL_POPULATE_STEP)
		util_populate(buf, cap);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap > max) {
				snprintf(err, errlen, "%s: input over the limit "
				    "of %zu bytes", path, max);
				goto fail;
			}
			cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
			if ((nbuf = realloc(buf, cap)) == NULL) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto fail;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: read: %s", path,
			    strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			snprintf(err, errlen, "%s: input over the limit of %zu "
			    "bytes", path, max);
			goto fail;
		}
	}
	buf[len] = '\0';
	if (!is_stdin)
		close(fd);
	if (stp != NULL)
		*stp = st;
	*out = buf;
	*outlen = len;
	return 0;
fail:
	free(buf);
	if (!is_stdin)
		close(fd);
	return -1;
}

/*
 * The spare buffer of util_copy_keep: one private copy released by
 * util_copy_free, kept for the next util_copy_fd. Its pages are faulted
 * in and charged already, so a copy into it skips the page faults, the
 * zeroing and the unmapping that fresh anonymous memory costs (about 40 %
 * of a reload's CPU: docs/BENCHMARKS.md). Only util_copy_free puts a
 * buffer here, and its caller no longer uses it (table_close, reached
 * from snapshot_release once no reader can see the table); the spare is
 * read-only and, under AddressSanitizer, poisoned until handed out again.
 */
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static void *spare_map;
static size_t spare_cap;	/* bytes mapped: a multiple of the page size */
static double spare_at;		/* util_monotime() when it was parked */
static bool spare_keep;

#if defined(__SANITIZE_ADDRESS__)
#define UTIL_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UTIL_ASAN	1
#endif
#endif
#ifdef UTIL_ASAN
#include <sanitizer/asan_interface.h>
#define spare_poison(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define spare_unpoison(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define spare_poison(p, n)	((void)(p), (void)(n))
#define spare_unpoison(p, n)	((void)(p), (void)(n))
#endif

static size_t
page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return n > SIZE_MAX - (pg - 1) ? 0 : (n + pg - 1) / pg * pg;
}

void
util_populate(void *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p, e;

	if (p == NULL || len < pg || a > UINTPTR_MAX - len)
		return;
	e = (a + len) / pg * pg;
	a = (a + pg - 1) / pg * pg;
#ifdef MADV_HUGEPAGE
	/* In 2 MB pages where the kernel has them (see util.h). */
	if (e - a >= UTIL_HUGE_MIN)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#endif
	if (e > a)
		(void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)len;
#endif
}

struct util_prefault {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	pthread_t	 tid;
	unsigned char	*base;
	size_t		 len;
	size_t		 writer;	/* [0, writer): the writer's alone */
	size_t		 done;		/* [writer, done): prepared */
	size_t		 busy_from;	/* the step being prepared, */
	size_t		 busy_to;	/* empty when equal */
	bool		 stop;
};

#define PREFAULT_AHEAD	(2 * UTIL_POPULATE_STEP)

static void *
prefault_main(void *arg)
{
	struct util_prefault *pf = arg;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), from, to, i;
	volatile unsigned char sink = 0;

	pthread_mutex_lock(&pf->mu);
	for (;;) {
		from = pf->done > pf->writer ? pf->done : pf->writer;
		if (pf->stop || from >= pf->len)
			break;
		if (from >= pf->writer + PREFAULT_AHEAD) {
			pthread_cond_wait(&pf->cv, &pf->mu);
			continue;
		}
		to = pf->len - from > UTIL_POPULATE_STEP ?
		    from + UTIL_POPULATE_STEP : pf->len;
		pf->busy_from = from;
		pf->busy_to = to;
		pthread_mutex_unlock(&pf->mu);
		util_populate(pf->base + from, to - from);
		for (i = from; i < to; i += pg)
			sink += ((volatile unsigned char *)pf->base)[i];
		pthread_mutex_lock(&pf->mu);
		pf->busy_from = pf->busy_to = 0;
		pf->done = to;
		pthread_cond_broadcast(&pf->cv);
	}
	pthread_mutex_unlock(&pf->mu);
	(void)sink;
	return NULL;
}

struct util_prefault *
util_prefault_start(void *base, size_t len)
{
	struct util_prefault *pf;

	if (base == NULL || len < 2 * UTIL_POPULATE_STEP ||
	    (pf = calloc(1, sizeof(*pf))) == NULL)
		return NULL;
	pf->base = base;
	pf->len = len;
	if (pthread_mutex_init(&pf->mu, NULL) != 0) {
		free(pf);
		return NULL;
	}
	if (pthread_cond_init(&pf->cv, NULL) != 0) {
		pthread_mutex_destroy(&pf->mu);
		free(pf);
		return NULL;
	}
	if (pthread_create(&pf->tid, NULL, prefault_main, pf) != 0) {
		pthread_cond_destroy(&pf->cv);
		pthread_mutex_destroy(&pf->mu);
		free(pf);
		return NULL;
	}
	return pf;
}

size_t
util_prefault_need(struct util_prefault *pf, size_t upto)
{
	size_t w, ok;

	if (pf == NULL)
		return SIZE_MAX;
	pthread_mutex_lock(&pf->mu);
	while (pf->busy_from < pf->busy_to && pf->busy_from < upto)
		pthread_cond_wait(&pf->cv, &pf->mu);
	/*
	 * Whole steps: the thread's start on multiples of one, so a step it
	 * is in at or past upto lies at or past w.
	 */
	w = upto >= pf->len ? pf->len : (upto + UTIL_POPULATE_STEP - 1) /
	    UTIL_POPULATE_STEP * UTIL_POPULATE_STEP;
	if (w > pf->len)
		w = pf->len;
	if (w > pf->writer)
		pf->writer = w;
	ok = pf->done > pf->writer ? pf->done : pf->writer;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	return ok;
}

void
util_prefault_stop(struct util_prefault *pf)
{
	if (pf == NULL)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->stop = true;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	(void)pthread_join(pf->tid, NULL);
	pthread_cond_destroy(&pf->cv);
	pthread_mutex_destroy(&pf->mu);
	free(pf);
}

/* Takes the spare away; NULL when there is none. */
static void *
spare_take(size_t *cap)
{
	void *p;

	pthread_mutex_lock(&spare_mu);
	p = spare_map;
	*cap = spare_cap;
	spare_map = NULL;
	spare_cap = 0;
	pthread_mutex_unlock(&spare_mu);
	if (p != NULL)
		spare_unpoison(p, *cap);
	return p;
}

/*
 * A writable private mapping of cap bytes (page-rounded): the spare when
 * there is one of a size within a factor of two (resized to cap), else
 * fresh memory. MAP_FAILED with errno on failure.
 */
static unsigned char *
copy_buf(size_t cap)
{
	unsigned char *m;
	void *sp;
	size_t scap;

	if ((sp = spare_take(&scap)) != NULL) {
		m = sp;
		if (scap / 2 > cap || cap / 2 > scap) {
			(void)munmap(sp, scap);
			m = MAP_FAILED;
		} else if (scap != cap &&
		    (m = mremap(sp, scap, cap, MREMAP_MAYMOVE)) == MAP_FAILED)
			(void)munmap(sp, scap);
		if (m != MAP_FAILED &&
		    mprotect(m, cap, PROT_READ | PROT_WRITE) == 0)
			return m;
		if (m != MAP_FAILED)
			(void)munmap(m, cap);
	}
	m = mmap(NULL, cap, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/*
	 * In 2 MB pages where the kernel has them: a 48 MB table is then
	 * 24 page-table entries instead of 12,000, and the mprotect calls
	 * of each reload (writable to read into, read-only once verified)
	 * hold the process's memory map 0.4-0.7 ms instead of 2-12 ms (the
	 * AMD EPYC VM), while the workers answer from the same process. A
	 * hint: refused, the copy is in small pages as before.
	 */
#ifdef MADV_HUGEPAGE
	if (m != MAP_FAILED && cap >= ((size_t)2 << 20))
		(void)madvise(m, cap, MADV_HUGEPAGE);
#endif
	/*
	 * Fresh memory is zeroed by the kernel on first touch, in the read
	 * below, in one system call that does not give the CPU back (13 ms
	 * for 48 MB seen on the AMD EPYC VM). On a thread that gives way it
	 * is faulted in ahead, a stretch at a time, with a yield after each.
	 */
	if (m != MAP_FAILED && gw_every != 0) {
		size_t off, n;

		for (off = 0; off < cap; off += n) {
			n = cap - off < gw_every ? cap - off : gw_every;
			util_populate(m + off, n);
			util_give_way_point(n);
		}
	}
	return m;
}

void
util_copy_keep(bool on)
{
	void *p;
	size_t cap;

	pthread_mutex_lock(&spare_mu);
	spare_keep = on;
	pthread_mutex_unlock(&spare_mu);
	if (!on && (p = spare_take(&cap)) != NULL)
		(void)munmap(p, cap);
}

size_t
util_copy_trim(double max_idle)
{
	void *p = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&spare_mu);
	if (spare_map != NULL && util_monotime() - spare_at >= max_idle) {
		p = spare_map;
		cap = spare_cap;
		spare_map = NULL;
		spare_cap = 0;
	}
	pthread_mutex_unlock(&spare_mu);
	if (p != NULL) {
		spare_unpoison(p, cap);
		(void)munmap(p, cap);
	}
	return cap;
}

size_t
util_copy_spare(void)
{
	size_t cap;

	pthread_mutex_lock(&spare_mu);
	cap = spare_cap;
	pthread_mutex_unlock(&spare_mu);
	return cap;
}

void
util_copy_free(void *map, size_t len)
{
	void *old = NULL;
	size_t cap, ocap = 0;

	if (map == NULL)
		return;
	cap = page_round(len);
	pthread_mutex_lock(&spare_mu);
	/* Of two, the larger is kept: a small file's copy never evicts it. */
	if (spare_keep && cap != 0 && cap >= spare_cap &&
	    mprotect(map, cap, PROT_READ) == 0) {
		spare_poison(map, cap);
		old = spare_map;
		ocap = spare_cap;
		spare_map = map;
		spare_cap = cap;
		spare_at = util_monotime();
		map = NULL;
	}
	pthread_mutex_unlock(&spare_mu);
	if (old != NULL) {
		spare_unpoison(old, ocap);
		(void)munmap(old, ocap);
	}
	if (map != NULL)
		(void)munmap(map, len);
}

/*
 * Reads fd from offset 0 into m (cap bytes, page-aligned, a multiple of
 * UTIL_DW_ALIGN) with O_DIRECT: the file's blocks go straight into the
 * copy instead of into page-cache pages first and then through a second
 * copy (copy_to_user), and no page cache is left behind (a table that
 * filterbuild wrote with O_DIRECT is not cached anyway). Each read asks
 * for the rest of cap, so a file grown past size shows as more than size
 * bytes read. 0 with *got set (0 when O_DIRECT is refused here or a read
 * came back short of the end and unaligned: the caller then reads
 * through the page cache from the start), or -1 with errno. fd's flags
 * are as they were on return.
 */
static int
copy_direct(int fd, unsigned char *m, size_t size, size_t cap, size_t *got)
{
	ssize_t n = 0;
	int fl, rc = 0, saved;

	*got = 0;
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_DIRECT) == -1)
		return 0;
	while (*got < size) {
		n = pread(fd, m + *got, cap - *got, (off_t)*got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno != EINVAL)
			rc = -1;
		if (n <= 0 || (*got + (size_t)n < size &&
		    (size_t)n % UTIL_DW_ALIGN != 0))
			break;
		*got += (size_t)n;
	}
	saved = errno;
	(void)fcntl(fd, F_SETFL, fl);
	errno = saved;
	if (rc == 0 && *got < size)
		*got = 0;
	return rc;
}

int
util_copy_fd(int fd, const char *name, uint64_t min, uint64_t max,
    void **map, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	unsigned char *m, extra;
	size_t size, cap, got = 0;
	ssize_t n;

	*map = NULL;
	*len = 0;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", name);
		return -1;
	}
	if ((uint64_t)st.st_size < min || (uint64_t)st.st_size > max ||
	    (uint64_t)st.st_size > SIZE_MAX || st.st_size == 0 ||
	    page_round((size_t)st.st_size) == 0) {
		snprintf(err, errlen, "%s: offset 0: file size %lld is out of "
		    "range", name, (long long)st.st_size);
		return -1;
	}
	size = (size_t)st.st_size;
	cap = page_round(size);
	if ((m = copy_buf(cap)) == MAP_FAILED) {
		snprintf(err, errlen, "%s: cannot allocate %zu bytes: %s", name,
		    size, strerror(errno));
		return -1;
	}
	/* A recycled buffer holds an older copy past size: zero it. */
	memset(m + size, 0, cap - size);
	if (size >= UTIL_COPY_DIRECT_MIN && cap % UTIL_DW_ALIGN == 0) {
		if (copy_direct(fd, m, size, cap, &got) == -1) {
			snprintf(err, errlen, "%s: offset %zu: %s", name, got,
			    strerror(errno));
			goto fail;
		}
		if (got > size) {
			snprintf(err, errlen, "%s: offset %zu: the file grew "
			    "while it was read", name, size);
			goto fail;
		}
	}
	while (got < size) {
		n = pread(fd, m + got, size - got, (off_t)got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "%s: offset %zu: %s", name, got,
			    n == 0 ? "the file shrank while it was read" :
			    strerror(errno));
			goto fail;
		}
		got += (size_t)n;
	}
	while ((n = pread(fd, &extra, 1, (off_t)size)) == -1 && errno == EINTR)
		;
	if (n != 0) {
		snprintf(err, errlen, "%s: offset %zu: %s", name, size,
		    n > 0 ? "the file grew while it was read" :
		    strerror(errno));
		goto fail;
	}
	if (mprotect(m, size, PROT_READ) != 0) {
		snprintf(err, errlen, "%s: mprotect: %s", name,
		    strerror(errno));
		goto fail;
	}
	*map = m;
	*len = size;
	return 0;
fail:
	util_copy_free(m, size);
	return -1;
}

int
util_buf_append(unsigned char **p, size_t *len, size_t *cap,
    const void *data, size_t n, uint64_t max)
{
	unsigned char *np;
	size_t ncap;

	if (n > max || *len > max - n) {
		errno = EFBIG;
		return -1;
	}
	if (*len + n > *cap) {
		ncap = *cap < 65536 ? 65536 : *cap;
		while (ncap < *len + n && ncap <= SIZE_MAX / 2)
			ncap *= 2;
		if (ncap < *len + n)
			ncap = *len + n;
		if (ncap > max)
			ncap = (size_t)max;
		if ((np = realloc(*p, ncap)) == NULL) {
			errno = ENOMEM;
			return -1;
		}
		*p = np;
		*cap = ncap;
	}
	if (n > 0)
		memcpy(*p + *len, data, n);
	*len += n;
	return 0;
}

int
util_write_all(int fd, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

const char *
util_json_refused(const char *p, size_t len)
{
	size_t i;
	bool instr = false;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)p[i];
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			return "a raw control byte";
		if (!instr) {
			instr = c == '"';
			continue;
		}
		if (c == '"')
			instr = false;
		else if (c == '\\' && i + 1 < len) {
			if (p[i + 1] == 'u' && len - i >= 6 &&
			    memcmp(p + i + 2, "0000", 4) == 0)
				return "\\u0000 in a string";
			i++;	/* the escaped byte */
		}
	}
	return NULL;
}

size_t
util_utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

bool
util_utf8_valid(const void *p, size_t n)
{
	const unsigned char *s = p;
	size_t i = 0, l;

	while (i < n) {
		if ((l = util_utf8_len(s + i, n - i)) == 0)
			return false;
		i += l;
	}
	return true;
}

int
util_b64_value(unsigned char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

long
util_b64url_decode(unsigned char *out, const char *in, size_t len, size_t *bad)
{
	uint32_t acc = 0;
	size_t i, o = 0;
	int v, bits = 0;

	if (len % 4 == 1) {
		*bad = len - 1;
		return -1;
	}
	for (i = 0; i < len; i++) {
		if ((v = util_b64_value((unsigned char)in[i], true)) < 0) {
			*bad = i;
			return -1;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) {
		*bad = len - 1;
		return -1;
	}
	return (long)o;
}

/* Turns O_DIRECT on or off for w->fd; w->direct says which holds. */
static int
dw_direct(struct util_dwriter *w, bool on)
{
	int fl = fcntl(w->fd, F_GETFL);

	if (fl == -1)
		return -1;
	fl = on ? fl | O_DIRECT : fl & ~O_DIRECT;
	if (fcntl(w->fd, F_SETFL, fl) == -1)
		return on ? 0 : -1;	/* refused: stay buffered */
	w->direct = on;
	return 0;
}

/*
 * Writes n bytes at w->off, by pwrite so that a direct write refused
 * half way (EINVAL) is written again, buffered, at the same place.
 */
static int
dw_put(struct util_dwriter *w, const unsigned char *p, size_t n)
{
	size_t done = 0;
	ssize_t r;

	while (done < n) {
		r = pwrite(w->fd, p + done, n - done, (off_t)(w->off + done));
		if (r == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EINVAL && w->direct) {
				if (dw_direct(w, false) != 0)
					return -1;
				continue;
			}
			return -1;
		}
		done += (size_t)r;
	}
	w->off += n;
	return 0;
}

int
util_dw_open(struct util_dwriter *w, int fd, bool direct)
{
	void *buf;

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	if (posix_memalign(&buf, UTIL_DW_ALIGN, UTIL_DW_BUF) != 0) {
		errno = ENOMEM;
		return -1;
	}
	w->buf = buf;
	if (direct && dw_direct(w, true) != 0) {
		util_dw_abort(w);
		return -1;
	}
	return 0;
}

int
util_dw_write(struct util_dwriter *w, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t c;

	while (n > 0) {
		if (!w->direct && w->len == 0 && n >= UTIL_DW_BUF)
			return dw_put(w, p, n);
		c = UTIL_DW_BUF - w->len;
		if (c > n)
			c = n;
		memcpy(w->buf + w->len, p, c);
		w->len += c;
		p += c;
		n -= c;
		if (w->len == UTIL_DW_BUF) {
			if (dw_put(w, w->buf, w->len) != 0)
				return -1;
			w->len = 0;
		}
	}
	return 0;
}

int
util_dw_close(struct util_dwriter *w)
{
	uint64_t end = w->off + w->len;
	size_t pad = 0;
	int rc = 0;

	if (w->len > 0) {
		/* A direct write is whole blocks: pad, then cut back. */
		if (w->direct && w->len % UTIL_DW_ALIGN != 0) {
			pad = UTIL_DW_ALIGN - w->len % UTIL_DW_ALIGN;
			memset(w->buf + w->len, 0, pad);
		}
		rc = dw_put(w, w->buf, w->len + pad);
		if (rc == 0 && pad > 0 && ftruncate(w->fd, (off_t)end) != 0)
			rc = -1;
	}
	if (rc == 0 && w->direct)
		rc = dw_direct(w, false);
	util_dw_abort(w);
	return rc;
}

void
util_dw_abort(struct util_dwriter *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = 0;
}

int
util_file_trusted(const char *path, const struct stat *st, uid_t owner,
    bool owner_set, bool secret, const char *who, char *err, size_t errlen)
{
	uid_t self = geteuid();

	if (st->st_uid != 0 && st->st_uid != self &&
	    !(owner_set && st->st_uid == owner)) {
		if (owner_set)
			util_errf(err, errlen, "%.400s: owned by uid %lu, "
			    "expected root (0), %s uid %lu or filter_owner uid "
			    "%lu", path, (unsigned long)st->st_uid, who,
			    (unsigned long)self, (unsigned long)owner);
		else
			util_errf(err, errlen, "%.400s: owned by uid %lu, "
			    "expected root (0) or %s uid %lu%s", path,
			    (unsigned long)st->st_uid, who, (unsigned long)self,
			    secret ? "" : " (set filter_owner to allow another)");
		return -1;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		util_errf(err, errlen, "%.400s: writable by group or others "
		    "(mode %03o)", path, (unsigned)(st->st_mode & 0777));
		return -1;
	}
	if (secret && (st->st_mode & (S_IRGRP | S_IROTH)) != 0) {
		util_errf(err, errlen, "%.400s: a secret readable by group or "
		    "others (mode %03o); chmod 600 it", path,
		    (unsigned)(st->st_mode & 0777));
		return -1;
	}
	return 0;
}

int
util_pct_decode(char *s, size_t *len)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < *len; i++) {
		if (s[i] != '%') {
			s[o++] = s[i];
			continue;
		}
		if (i + 2 >= *len)
			return -1;
		hi = util_hexval((unsigned char)s[i + 1]);
		lo = util_hexval((unsigned char)s[i + 2]);
		if (hi < 0 || lo < 0)
			return -1;
		s[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	*len = o;
	return 0;
}

