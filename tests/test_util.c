/* test_util.c - hex, times, durations, numbers and whole-file reads */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

Test(util, hex_round_trip)
{
	unsigned char b[8];
	char h[17];

	cr_assert_eq(util_unhex(b, sizeof(b), "DEADbeef", 8, false), 4);
	util_hex(h, b, 4);
	cr_assert_str_eq(h, "deadbeef");
	cr_assert_eq(util_unhex(b, sizeof(b), "de:ad:be:ef", 11, true), 4);
	cr_assert_eq(util_unhex(b, sizeof(b), "de:ad", 5, false), -1);
	cr_assert_eq(util_unhex(b, sizeof(b), "abc", 3, false), 2);
	cr_assert_eq(b[0], 0x0a);
	cr_assert_eq(b[1], 0xbc);
	cr_assert_eq(util_unhex(b, sizeof(b), "g0", 2, false), -1);
	cr_assert_eq(util_unhex(b, sizeof(b), "", 0, false), -1);
	cr_assert_eq(util_unhex(b, 2, "aabbcc", 6, false), -1);
	cr_assert_eq(util_unhex(b, sizeof(b), ":ab", 3, true), -1);
}

/*
 * With colons every group of digits but the first has an even count, so
 * that the colons fall between bytes: "12:3" could be 12 03 or 01 23 (it
 * was read as 01 23), and a serial read the wrong way revokes one
 * certificate in place of another.
 */
Test(util, unhex_colon_groups)
{
	static const struct { const char *in; long n; unsigned char b0, b1; }
	    cases[] = {
		{ "a:0b", 2, 0x0a, 0x0b }, { "0a:0b", 2, 0x0a, 0x0b },
		{ "ab", 1, 0xab, 0 }, { "abc", 2, 0x0a, 0xbc },
		{ "dead:beef", 4, 0xde, 0xad }, { "123:45", 3, 0x01, 0x23 },
		{ "12:3", -1, 0, 0 }, { "1:2", -1, 0, 0 },
		{ "12:345", -1, 0, 0 }, { "12:3:45", -1, 0, 0 },
		{ "12::34", -1, 0, 0 },
		{ "12:", -1, 0, 0 }, { ":12", -1, 0, 0 },
	};
	unsigned char b[8];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(util_unhex(b, sizeof(b), cases[i].in,
		    strlen(cases[i].in), true), cases[i].n, "\"%s\"",
		    cases[i].in);
		if (cases[i].n > 0)
			cr_assert(b[0] == cases[i].b0 && (cases[i].n < 2 ||
			    b[1] == cases[i].b1), "\"%s\": %02x %02x",
			    cases[i].in, b[0], b[1]);
	}
}

/* Every byte: a hex digit of either case has its value, nothing else. */
Test(util, hexval_every_byte)
{
	static const char digits[] = "0123456789abcdef";
	int c, want;

	for (c = 0; c < 256; c++) {
		const char *p = c != 0 ? strchr(digits,
		    c >= 'A' && c <= 'F' ? c + 32 : c) : NULL;

		want = p != NULL ? (int)(p - digits) : -1;
		cr_assert_eq(util_hexval(c), want, "byte 0x%02x", c);
	}
}

Test(util, rfc3339)
{
	char buf[UTIL_RFC3339_LEN];
	int64_t t;

	util_rfc3339(buf, 0);
	cr_assert_str_eq(buf, "1970-01-01T00:00:00Z");
	cr_assert_eq(util_parse_rfc3339("2026-11-30T05:49:15Z", &t), 0);
	util_rfc3339(buf, t);
	cr_assert_str_eq(buf, "2026-11-30T05:49:15Z");
	cr_assert_eq(t, 1796017755);
	cr_assert_eq(util_parse_rfc3339("2026-11-30T06:49:15.123+01:00", &t), 0);
	cr_assert_eq(t, 1796017755);
	cr_assert_eq(util_parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
	cr_assert_eq(util_parse_rfc3339("2023-02-29T00:00:00Z", &t), -1);
	cr_assert_eq(util_parse_rfc3339("2026-13-01T00:00:00Z", &t), -1);
	cr_assert_eq(util_parse_rfc3339("2026-11-30T05:49:15", &t), -1);
	cr_assert_eq(util_parse_rfc3339("2026-11-30T05:49:15Zjunk", &t), -1);
	cr_assert_eq(util_parse_rfc3339("yesterday", &t), -1);
}

Test(util, durations_and_numbers)
{
	int64_t d;
	uint64_t u;
	double x;

	cr_assert_eq(util_parse_duration("90", &d), 0);
	cr_assert_eq(d, 90);
	cr_assert_eq(util_parse_duration("15m", &d), 0);
	cr_assert_eq(d, 900);
	cr_assert_eq(util_parse_duration("1h", &d), 0);
	cr_assert_eq(d, 3600);
	cr_assert_eq(util_parse_duration("7d", &d), 0);
	cr_assert_eq(d, 604800);
	cr_assert_eq(util_parse_duration("0s", &d), -1);
	cr_assert_eq(util_parse_duration("1w", &d), -1);
	cr_assert_eq(util_parse_duration("-5m", &d), -1);
	cr_assert_eq(util_parse_duration("99999999999d", &d), -1);
	cr_assert_eq(util_parse_duration("", &d), -1);

	cr_assert_eq(util_parse_u64("18446744073709551615", UINT64_MAX, &u), 0);
	cr_assert_eq(u, UINT64_MAX);
	cr_assert_eq(util_parse_u64("18446744073709551616", UINT64_MAX, &u), -1);
	cr_assert_eq(util_parse_u64("12x", 100, &u), -1);
	cr_assert_eq(util_parse_u64("101", 100, &u), -1);
	cr_assert_eq(util_parse_u64("-1", 100, &u), -1);
	cr_assert_eq(util_parse_double("0.001", &x), 0);
	cr_assert_float_eq(x, 0.001, 1e-12);
	cr_assert_eq(util_parse_double("nan", &x), -1);
	cr_assert_eq(util_parse_double("1e999", &x), -1);
}

Test(util, little_endian_is_fixed)
{
	unsigned char b[8];

	util_put_le64(b, UINT64_C(0x0102030405060708));
	cr_assert_eq(b[0], 8);
	cr_assert_eq(b[7], 1);
	cr_assert_eq(util_get_le64(b), UINT64_C(0x0102030405060708));
	util_put_le32(b, 0xa1b2c3d4);
	cr_assert_eq(b[0], 0xd4);
	cr_assert_eq(util_get_le32(b), 0xa1b2c3d4);
	util_put_le16(b, 0xbeef);
	cr_assert_eq(b[0], 0xef);
	cr_assert_eq(util_get_le16(b), 0xbeef);
}

Test(util, read_file_caps_and_errors)
{
	char path[] = "/tmp/util-test-XXXXXX", err[256];
	unsigned char *buf;
	size_t len;
	int fd;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(util_write_all(fd, "hello\n", 6), 0);
	close(fd);
	cr_assert_eq(util_read_file(path, 100, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(len, 6);
	cr_assert_str_eq((char *)buf, "hello\n");
	free(buf);
	cr_assert_eq(util_read_file(path, 5, &buf, &len, err, sizeof(err)), -1);
	cr_assert_null(buf);
	cr_assert(strstr(err, path) != NULL && strstr(err, "limit") != NULL);
	unlink(path);
	cr_assert_eq(util_read_file(path, 100, &buf, &len, err, sizeof(err)), -1);
	cr_assert(strstr(err, "No such file") != NULL);
	cr_assert_eq(util_read_file("/tmp", 100, &buf, &len, err, sizeof(err)),
	    -1);
}

/*
 * A regular file is read into a buffer of its fstat size with room for
 * the read that finds its end (not doubled then); a file whose size fstat
 * does not know (/proc reports 0) and a pipe grow the buffer as they go.
 * Sizes on both sides of the 4096-byte first buffer and of the populate
 * step.
 */
Test(util, read_file_every_size_and_growing_files)
{
	static const size_t sizes[] = { 0, 1, 4094, 4095, 4096, 4097,
	    UTIL_POPULATE_STEP - 1, UTIL_POPULATE_STEP + 4097 };
	char path[] = "/tmp/util-size-XXXXXX", err[256];
	unsigned char *want, *buf;
	size_t i, j, len;
	ssize_t n;
	int fd, p[2], saved;
	pid_t pid;

	want = malloc(UTIL_POPULATE_STEP + 4097);
	cr_assert_not_null(want);
	for (j = 0; j < UTIL_POPULATE_STEP + 4097; j++)
		want[j] = (unsigned char)('a' + (j * 7 + j / 4096) % 26);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fd = mkstemp(path);
		cr_assert_geq(fd, 0);
		cr_assert_eq(util_write_all(fd, want, sizes[i]), 0);
		close(fd);
		cr_assert_eq(util_read_file(path, sizes[i] + 1, &buf, &len,
		    err, sizeof(err)), 0, "%zu bytes: %s", sizes[i], err);
		cr_assert_eq(len, sizes[i]);
		cr_assert(memcmp(buf, want, len) == 0, "%zu bytes differ",
		    sizes[i]);
		cr_assert_eq(buf[len], '\0');
		free(buf);
		/* Exactly at the limit reads; one byte over does not. */
		cr_assert_eq(util_read_file(path, sizes[i], &buf, &len, err,
		    sizeof(err)), 0, "%zu bytes at the limit: %s", sizes[i], err);
		free(buf);
		if (sizes[i] > 0) {
			cr_assert_eq(util_read_file(path, sizes[i] - 1, &buf,
			    &len, err, sizeof(err)), -1);
			cr_assert(strstr(err, "limit") != NULL, "%s", err);
		}
		unlink(path);
		memcpy(path, "/tmp/util-size-XXXXXX", sizeof(path));
	}
	/*
	 * /proc/kallsyms: regular, st_size 0, megabytes long and the same
	 * from one read to the next: every byte, across every doubling of
	 * the buffer, must match a plain read of it.
	 */
	cr_assert_eq(util_read_file("/proc/kallsyms", 1 << 28, &buf, &len,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(len, 4096);
	free(want);
	want = malloc(len + 1);
	cr_assert_not_null(want);
	fd = open("/proc/kallsyms", O_RDONLY);
	cr_assert_geq(fd, 0);
	for (j = 0; j <= len; j += (size_t)n) {
		n = read(fd, want + j, len + 1 - j);
		cr_assert_geq(n, 0);
		if (n == 0)
			break;
	}
	close(fd);
	cr_assert_eq(j, len);
	cr_assert(memcmp(buf, want, len) == 0);
	free(buf);
	free(want);
	want = malloc(3 * 4096 + 5);
	cr_assert_not_null(want);
	for (j = 0; j < 3 * 4096 + 5; j++)
		want[j] = (unsigned char)('a' + j % 26);
	/* A pipe on standard input, written by a child: 3 x 4096 + 5. */
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		_exit(util_write_all(p[1], want, 3 * 4096 + 5) == 0 ? 0 : 1);
	}
	close(p[1]);
	saved = dup(STDIN_FILENO);
	cr_assert_eq(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
	close(p[0]);
	cr_assert_eq(util_read_file("-", 1 << 20, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	dup2(saved, STDIN_FILENO);
	close(saved);
	cr_assert_eq(len, 3 * 4096 + 5);
	cr_assert(memcmp(buf, want, len) == 0);
	free(buf);
	free(want);
}

/*
 * A file a configuration names is read with util_read_file_st: a FIFO
 * (which nothing writes, so a plain open would wait forever) and a device
 * are refused at once, a regular file is read with its fstat.
 */
Test(util, read_file_st_refuses_fifos_and_devices_without_blocking,
    .timeout = 5)
{
	char dir[] = "/tmp/util-fifo-XXXXXX", path[64], err[256];
	unsigned char *buf = NULL;
	struct timespec t0, t1;
	struct stat st;
	size_t len;
	FILE *fp;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/key.pem", dir);
	cr_assert_eq(mkfifo(path, 0600), 0, "%s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(util_read_file_st(path, 100, &buf, &len, &st, err,
	    sizeof(err)), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_null(buf);
	cr_assert(strstr(err, "not a regular file") != NULL, "%s", err);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 2, "the FIFO blocked the read");
	cr_assert_eq(util_read_file_st("/dev/zero", 100, &buf, &len, &st, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "not a regular file") != NULL, "%s", err);
	unlink(path);
	cr_assert_not_null(fp = fopen(path, "w"));
	fputs("abc", fp);
	fclose(fp);
	cr_assert_eq(util_read_file_st(path, 100, &buf, &len, &st, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(len, 3);
	cr_assert(S_ISREG(st.st_mode));
	free(buf);
	unlink(path);
	rmdir(dir);
}

Test(util, buf_append_grows_and_stops_at_the_cap)
{
	unsigned char *p = NULL, chunk[1000];
	size_t len = 0, cap = 0, i;

	memset(chunk, 'a', sizeof(chunk));
	for (i = 0; i < 100; i++)
		cr_assert_eq(util_buf_append(&p, &len, &cap, chunk,
		    sizeof(chunk), 100000), 0);
	cr_assert_eq(len, 100000);
	cr_assert(cap >= len && cap <= 100000, "never allocated past the cap");
	errno = 0;
	cr_assert_eq(util_buf_append(&p, &len, &cap, chunk, 1, 100000), -1);
	cr_assert_eq(errno, EFBIG);
	cr_assert_eq(len, 100000, "nothing appended on refusal");
	cr_assert_eq(util_buf_append(&p, &len, &cap, chunk, 0, 100000), 0);
	errno = 0;
	cr_assert_eq(util_buf_append(&p, &len, &cap, chunk, SIZE_MAX, 100000),
	    -1, "a huge chunk does not wrap");
	cr_assert_eq(errno, EFBIG);
	cr_assert(p[99999] == 'a');
	free(p);
}

Test(util, utf8_validation)
{
	cr_assert(util_utf8_valid("plain", 5));
	cr_assert(util_utf8_valid("\xf0\x9f\x98\x80", 4));
	cr_assert(!util_utf8_valid("\xf0\x9f\x98", 3));
	cr_assert(!util_utf8_valid("\xc0\x80", 2));
	cr_assert(!util_utf8_valid("\xed\xb0\x80", 3));
	cr_assert(!util_utf8_valid("\xf4\x90\x80\x80", 4));
}

/*
 * The direct writer gives a file of exactly the bytes written, in any
 * pieces, at any length around its block and buffer sizes, through
 * O_DIRECT (on a file system that takes it, as /tmp's ext4 does here:
 * asserted, so that a change that silently stays buffered fails) and
 * through the page cache.
 */
static void
dw_round_trip(const char *dir, bool direct, size_t total)
{
	static const size_t piece[] = { 1, 7, 4096, UTIL_DW_BUF + 3, 4095, 513 };
	char path[256], err[256];
	struct util_dwriter w;
	unsigned char *src, *back;
	size_t i, at, n, len;
	int fd;

	src = malloc(total + 1);
	cr_assert_not_null(src);
	for (i = 0; i < total; i++)
		src[i] = (unsigned char)(i * 131 + (i >> 12));
	(void)snprintf(path, sizeof(path), "%s/dw-test-XXXXXX", dir);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(util_dw_open(&w, fd, direct), 0);
	if (direct && strcmp(dir, "/tmp") == 0)
		cr_assert(w.direct, "O_DIRECT not taken on %s", dir);
	for (at = 0, i = 0; at < total; at += n, i++) {
		n = piece[i % 6];
		if (n > total - at)
			n = total - at;
		cr_assert_eq(util_dw_write(&w, src + at, n), 0, "%s",
		    strerror(errno));
	}
	cr_assert_eq(util_dw_close(&w), 0, "%s", strerror(errno));
	cr_assert_null(w.buf);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(util_read_file(path, total + 1, &back, &len, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(len, total, "%s: %zu bytes, wrote %zu (direct %d)", path,
	    len, total, direct);
	cr_assert(total == 0 || memcmp(back, src, total) == 0,
	    "%s: bytes differ (direct %d, %zu bytes)", path, direct, total);
	free(back);
	free(src);
	unlink(path);
}

Test(util, direct_writer_writes_exactly_the_bytes)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097,
	    UTIL_DW_BUF - 1, UTIL_DW_BUF, UTIL_DW_BUF + 1,
	    2 * UTIL_DW_BUF + 4097 };
	static const char *dirs[] = { "/tmp", "/dev/shm" };
	size_t i, d;
	struct stat st;

	for (d = 0; d < 2; d++) {
		if (stat(dirs[d], &st) != 0)
			continue;
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			dw_round_trip(dirs[d], true, sizes[i]);
			dw_round_trip(dirs[d], false, sizes[i]);
		}
	}
}

struct prio_probe {
	int	 delta;
	int	 before;
	int	 ret;
	int	 after;
	int	 err;
};

static void *
prio_thread(void *arg)
{
	struct prio_probe *p = arg;

	errno = 0;
	p->before = getpriority(PRIO_PROCESS, (id_t)gettid());
	p->ret = util_lower_thread_priority(p->delta);
	p->err = errno;
	p->after = getpriority(PRIO_PROCESS, (id_t)gettid());
	return NULL;
}

static void
run_prio(struct prio_probe *p)
{
	pthread_t th;

	cr_assert_eq(pthread_create(&th, NULL, prio_thread, p), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
}

/*
 * The calling thread's nice value only: raised by delta, at most 19; the
 * rest of the process keeps its own; 0 or less is refused.
 */
Test(util, lower_thread_priority_is_per_thread_and_capped)
{
	struct prio_probe p;
	int mine = getpriority(PRIO_PROCESS, (id_t)gettid());

	memset(&p, 0, sizeof(p));
	p.delta = 5;
	run_prio(&p);
	cr_assert_eq(p.ret, p.before + 5 > 19 ? 19 : p.before + 5, "%d %d",
	    p.ret, p.before);
	cr_assert_eq(p.after, p.ret);
	cr_assert_eq(getpriority(PRIO_PROCESS, (id_t)gettid()), mine,
	    "the calling thread only");
	p.delta = 40;
	run_prio(&p);
	cr_assert_eq(p.ret, 19);
	cr_assert_eq(p.after, 19);
	p.delta = 0;
	run_prio(&p);
	cr_assert_eq(p.ret, -1);
	cr_assert_eq(p.err, EINVAL);
	cr_assert_eq(p.after, p.before, "nothing changed");
}

/*
 * util_now() never runs back: the wall clock stepped back (an operator,
 * NTP, NTP spoofed to an edge) would make an expired filter fresh again.
 */
/* util_clock_floor() of clocks given as seconds and milliseconds. */
static int64_t
floor_at(int64_t ws, long wms, int64_t w0s, long w0ms, int64_t bs, long bms,
    int64_t b0s, long b0ms)
{
	struct timespec w = { ws, wms * 1000000 }, w0 = { w0s, w0ms * 1000000 };
	struct timespec b = { bs, bms * 1000000 }, b0 = { b0s, b0ms * 1000000 };

	return util_clock_floor(&w, &w0, &b, &b0);
}

Test(util, clock_floor_never_runs_back)
{
	/* Forward with the wall clock. */
	cr_assert_eq(floor_at(1000, 0, 1000, 0, 50, 0, 50, 0), 1000);
	cr_assert_eq(floor_at(1100, 0, 1000, 0, 150, 0, 50, 0), 1100);
	cr_assert_eq(floor_at(5000, 0, 1000, 0, 60, 0, 50, 0), 5000);
	/* Stepped back two minutes, 200 s after the first call. */
	cr_assert_eq(floor_at(1080, 0, 1000, 0, 250, 0, 50, 0), 1200);
	/* Put right after running ahead: stays ahead (older, never newer). */
	cr_assert_eq(floor_at(900, 0, 1000, 0, 50, 0, 50, 0), 1000);
	/*
	 * Seconds that tick at different instants: first read at wall 100.1
	 * and boot 50.9, then at 100.2 and 51.0 (0.1 s later). Still second
	 * 100: whole seconds (100 + 51 - 50) read 101, a second ahead.
	 */
	cr_assert_eq(floor_at(100, 200, 100, 100, 51, 0, 50, 900), 100);
	cr_assert_eq(floor_at(100, 999, 100, 100, 51, 799, 50, 900), 100);
	cr_assert_eq(floor_at(101, 0, 100, 100, 51, 800, 50, 900), 101);
	/* The real clocks: neither before nor after the wall clock, monotone. */
	{
		int64_t a = util_now(), b = util_now(), t;
		struct timespec ts;

		/* Not time(NULL): it reads a coarser clock, a tick behind. */
		cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
		t = (int64_t)ts.tv_sec;

		cr_assert_geq(a, t - 1);
		cr_assert_leq(b, t, "util_now() %lld ahead of time() %lld",
		    (long long)b, (long long)t);
		cr_assert_geq(b, a);
	}
}

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN	1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* A new file of n bytes from seed; path gets its name, *out its bytes. */
static void
copy_file(char *path, size_t n, unsigned seed, unsigned char **out)
{
	unsigned char *b;
	size_t i;
	int fd;

	b = malloc(n);
	cr_assert_not_null(b);
	for (i = 0; i < n; i++)
		b[i] = (unsigned char)((i * 2654435761u + seed) >> 7);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, b, n), 0);
	close(fd);
	*out = b;
}

static void *
copy_of(const char *path, size_t *len)
{
	char err[256];
	void *m;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(util_copy_fd(fd, path, 1, UINT64_MAX, &m, len, err,
	    sizeof(err)), 0, "%s", err);
	close(fd);
	return m;
}

/*
 * The spare buffer: a released copy is where the next one of a like size
 * is read (the same address), never one still held; the bytes are the new
 * file's, zeros after them to the end of the page, and under ASan the
 * spare is poisoned while it waits. Through O_DIRECT (over 1 MiB, sizes
 * off and on the page size) and through the page cache (small).
 */
Test(util, copy_fd_reuses_only_released_copies)
{
	char px[] = "/tmp/revcheck-test-cx-XXXXXX";
	char py[] = "/tmp/revcheck-test-cy-XXXXXX";
	char pz[] = "/tmp/revcheck-test-cz-XXXXXX";
	char pw[] = "/tmp/revcheck-test-cw-XXXXXX";
	unsigned char *bx, *by, *bz, *bw, *m1, *m2, *m3, *m4;
	size_t n = (2u << 20) + 123, lx, ly, lz, lw, i;

	util_copy_keep(true);
	copy_file(px, n, 1, &bx);
	copy_file(py, n, 2, &by);
	copy_file(pz, 2u << 20, 3, &bz);
	copy_file(pw, 100, 4, &bw);

	m1 = copy_of(px, &lx);
	cr_assert(lx == n && memcmp(m1, bx, n) == 0);
	util_copy_free(m1, lx);
#ifdef TEST_ASAN
	cr_assert(__asan_address_is_poisoned(m1));
	cr_assert(__asan_address_is_poisoned(m1 + n - 1));
#endif
	m2 = copy_of(py, &ly);
	cr_assert_eq(m2, m1, "the released copy was not reused");
	cr_assert(ly == n && memcmp(m2, by, n) == 0);
	for (i = n; i % 4096 != 0; i++)
		cr_assert_eq(m2[i], 0);
	/* m2 held: the next copy is fresh memory. */
	m3 = copy_of(px, &lx);
	cr_assert_neq(m3, m2);
	cr_assert(memcmp(m3, bx, n) == 0 && memcmp(m2, by, n) == 0);
	util_copy_free(m3, lx);
	util_copy_free(m2, ly);		/* of two alike, one is kept */
	m4 = copy_of(pz, &lz);		/* one page less: resized */
	cr_assert(m4 == m2 || m4 == m3);
	cr_assert(lz == 2u << 20 && memcmp(m4, bz, lz) == 0);
	util_copy_free(m4, lz);
	/* Parked a moment ago: kept for an hour, gone at an idle of 0. */
	cr_assert_eq(util_copy_trim(3600), 0);
	cr_assert_geq(util_copy_spare(), lz);
	m2 = copy_of(pz, &lz);
	cr_assert_eq(m2, m4, "a spare within its idle time was not reused");
	cr_assert_eq(util_copy_spare(), 0, "the spare is handed out once");
	util_copy_free(m2, lz);
	cr_assert_geq(util_copy_trim(0), lz);
	cr_assert_eq(util_copy_spare(), 0);
	cr_assert_eq(util_copy_trim(0), 0);
	m4 = copy_of(pz, &lz);
	cr_assert(memcmp(m4, bz, lz) == 0);
	util_copy_free(m4, lz);
	/* Under half its size: the spare is unmapped, fresh memory read. */
	m1 = copy_of(pw, &lw);
	cr_assert(lw == 100 && memcmp(m1, bw, 100) == 0);
	util_copy_free(m1, lw);
	util_copy_keep(false);
	unlink(px);
	unlink(py);
	unlink(pz);
	unlink(pw);
	free(bx);
	free(by);
	free(bz);
	free(bw);
}

/*
 * util_populate only maps pages: what was written stays, byte for byte,
 * at any alignment, and a range inside one page is left alone.
 */
Test(util, populate_keeps_contents)
{
	size_t n = 3 * UTIL_POPULATE_STEP / 2, i;
	unsigned char *p = malloc(n);

	cr_assert_not_null(p);
	for (i = 0; i < n / 2; i++)
		p[i] = (unsigned char)(i * 31 + 7);
	util_populate(p + 3, n - 5);
	util_populate(p + 1, 10);
	util_populate(NULL, n);
	for (i = 0; i < n / 2; i++)
		cr_assert_eq(p[i], (unsigned char)(i * 31 + 7), "byte %zu", i);
	memset(p + n / 2, 0x5a, n - n / 2);
	for (i = n / 2; i < n; i++)
		cr_assert_eq(p[i], 0x5a);
	free(p);
}

/*
 * A prefault thread and its writer: the writer writes 40-byte records
 * front to back, asking only when it reaches what the last answer
 * allowed; every answer covers what it asked for and stays inside the
 * buffer; bytes written before the thread started and past where the
 * writer stops are never changed; every record written is read back.
 */
Test(util, prefault_hands_over_without_changing_bytes)
{
	size_t n = 7 * UTIL_POPULATE_STEP / 2 + 123, stop = n - 40 * 1000;
	size_t off, ok = 0, asks = 0, i;
	unsigned char *p = malloc(n);
	struct util_prefault *pf;
	unsigned char rec[40];

	cr_assert_not_null(p);
	memset(p + stop, 0xa5, n - stop);	/* the writer never gets here */
	pf = util_prefault_start(p, n);
	cr_assert_not_null(pf);
	for (off = 0; off + 40 <= stop; off += 40) {
		if (off + 40 > ok) {
			ok = util_prefault_need(pf, off + 40);
			asks++;
			cr_assert_geq(ok, off + 40);
			cr_assert_leq(ok, n);
		}
		for (i = 0; i < 40; i++)
			rec[i] = (unsigned char)(off / 40 + i);
		memcpy(p + off, rec, 40);
	}
	util_prefault_stop(pf);
	cr_assert_lt(asks, 64, "%zu asks: one per step or so", asks);
	for (off = 0; off + 40 <= stop; off += 40)
		for (i = 0; i < 40; i++)
			cr_assert_eq(p[off + i], (unsigned char)(off / 40 + i),
			    "byte %zu", off + i);
	for (i = stop; i < n; i++)
		cr_assert_eq(p[i], 0xa5, "byte %zu past the writer", i);
	free(p);

	/* Small buffers get no thread; a NULL handle lets anything through. */
	cr_assert_null(util_prefault_start(rec, sizeof(rec)));
	cr_assert_null(util_prefault_start(NULL, 4 * UTIL_POPULATE_STEP));
	cr_assert_eq(util_prefault_need(NULL, 12345), SIZE_MAX);
	util_prefault_stop(NULL);
}

/*
 * A thread that gives way hashes a stretch at a time and yields after
 * each (the loader, so that a woken HTTP worker does not wait out its
 * time slice): the digest is the one of a single pass at every length
 * around the stretch, the yields are counted on that thread only.
 */
struct gw_probe {
	size_t		 every;
	size_t		 len;
	const unsigned char *buf;
	unsigned char	 sha[UTIL_SHA256_LEN];
	uint64_t	 yields;
	int		 rc;
};

static void *
gw_thread(void *arg)
{
	struct gw_probe *p = arg;
	uint64_t before;

	util_give_way(p->every);
	before = util_give_way_count();
	p->rc = util_sha256(p->sha, p->buf, p->len);
	p->yields = util_give_way_count() - before;
	return NULL;
}

Test(util, give_way_keeps_the_digest_and_yields_on_its_thread_only)
{
	static const size_t lens[] = { 0, 1, 4095, 4096, 4097, 12288, 40000 };
	unsigned char *buf = malloc(40000), want[UTIL_SHA256_LEN];
	uint64_t mine = util_give_way_count();
	struct gw_probe p;
	pthread_t th;
	size_t i;

	cr_assert_not_null(buf);
	for (i = 0; i < 40000; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 8));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		cr_assert_eq(util_sha256(want, buf, lens[i]), 0);
		memset(&p, 0, sizeof(p));
		p.every = 4096;
		p.len = lens[i];
		p.buf = buf;
		cr_assert_eq(pthread_create(&th, NULL, gw_thread, &p), 0);
		cr_assert_eq(pthread_join(th, NULL), 0);
		cr_assert_eq(p.rc, 0);
		cr_assert_arr_eq(p.sha, want, UTIL_SHA256_LEN, "length %zu",
		    lens[i]);
		cr_assert_eq(p.yields, lens[i] / 4096, "length %zu: %llu yields",
		    lens[i], (unsigned long long)p.yields);
	}
	/* A thread that never asked to give way does not. */
	cr_assert_eq(util_sha256(want, buf, 40000), 0);
	cr_assert_eq(util_give_way_count(), mine);
	util_give_way_point(1 << 30);
	cr_assert_eq(util_give_way_count(), mine);
	/* Points add up across calls; 0 turns it off again. */
	util_give_way(100);
	util_give_way_point(60);
	cr_assert_eq(util_give_way_count(), mine);
	util_give_way_point(40);
	cr_assert_eq(util_give_way_count(), mine + 1);
	util_give_way(0);
	util_give_way_point(1000);
	cr_assert_eq(util_give_way_count(), mine + 1);
	free(buf);
}
