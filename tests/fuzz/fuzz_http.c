/* fuzz_http.c - raw HTTP requests through the real libmicrohttpd connection path into revcheckd's handlers */
/*
 * LLVMFuzzerInitialize starts the daemon's own server (server_start, on
 * 127.0.0.1:0 with two workers) with the committed vector filter loaded
 * by the daemon's own loader, at the time in tests/vectors/now.txt so it
 * is fresh. Each input is written as-is (request line, headers, body;
 * pipelined requests too) into one end of a socketpair whose other end
 * the server took over with server_add_connection(); then the write side
 * is shut down and the reply read until the server hangs up. The request
 * limits are set low (max_body 1024, max_batch 16) so the caps are in
 * reach of small inputs. An input that starts as a single check
 * ("GET /v1/check?") is also sent over TCP to the fast path's port, and
 * its first answer there must be libmicrohttpd's (all but Date): the fast
 * path answers only what libmicrohttpd would answer alike.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "loader.h"
#include "log.h"
#include "server.h"
#include "snapshot.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* How long to wait for the server to answer and hang up, per input. */
#define REPLY_MS	3000
/* How long requests may stay in flight after the client hung up. */
#define DRAIN_WAIT_MS	5000

static struct config cfg;
static struct snapshot_slot slot;
static struct loader loader;
static struct server_ctx ctx;
static struct live_slot live;
static struct server *srv;
static char tmpdir[64];
static char replies[16 * 1024 * 1024];
static char fast_replies[16 * 1024 * 1024];
static bool verbose;		/* FUZZ_HTTP_VERBOSE=1 prints each reply */

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void
teardown(void)
{
	server_stop(srv, 1000);
	srv = NULL;
	snapshot_slot_free(&slot);
	loader_free(&loader);
	live_slot_free(&live);
	config_free(&cfg);
	if (tmpdir[0] != '\0')
		nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *
vec_path(const char *src, const char *name)
{
	char path[4096];
	int n;

	n = snprintf(path, sizeof(path), "%s/tests/vectors/%s", src, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		abort();
	return strdup(path);
}

static void
die(const char *what, const char *err)
{
	fprintf(stderr, "fuzz_http: %s: %s\n", what, err);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *src = getenv("REVCHECK_SRC");
	struct stale_policy pol;
	struct live *lv;
	char err[512], *p, *fp, *tp;
	unsigned char *now;
	size_t len;

	(void)argc;
	(void)argv;
	if (src == NULL)
		src = ".";	/* make runs the fuzzers from the top */
	signal(SIGPIPE, SIG_IGN);
	verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
	log_init("fuzz_http", LOG_LVL_ERR);
	/* The vector filter is fresh at now.txt; util_now() reads this. */
	p = vec_path(src, "now.txt");
	if (util_read_file(p, 64, &now, &len, err, sizeof(err)) != 0)
		die("tests/vectors (set REVCHECK_SRC)", err);
	free(p);
	while (len > 0 && (now[len - 1] == '\n' || now[len - 1] == '\r'))
		len--;
	now[len] = '\0';
	if (setenv("REVCHECK_FAKE_NOW", (char *)now, 1) != 0)
		die("setenv", strerror(errno));
	free(now);

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/revcheck-fuzz-http-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		tmpdir[0] = '\0';
		die("mkdtemp", strerror(errno));
	}
	config_init(&cfg);
	cfg.listen = strdup("127.0.0.1:0");
	cfg.filter_dir = strdup(tmpdir);
	cfg.state_dir = strdup(tmpdir);
	cfg.trusted_keys[cfg.ntrusted++] = vec_path(src, "pub.pem");
	cfg.threads = 1;
	cfg.conn_timeout = 5;
	cfg.max_body = 1024;
	cfg.max_batch = 16;
	cfg.poll_interval = 1;
	cfg.authz_cert_header = strdup("X-SSL-Client-Cert");
	if (config_validate(&cfg, err, sizeof(err)) != 0)
		die("config", err);
	pol.max_age = cfg.max_age;
	pol.clock_skew = cfg.clock_skew;
	pol.max_lag = 0;
	snapshot_slot_init(&slot);
	if (loader_init(&loader, &cfg, &pol, err, sizeof(err)) != 0)
		die("loader", err);
	atexit(teardown);
	fp = vec_path(src, "filter.rcf");
	tp = vec_path(src, "table.rct");
	if (loader_load_files(&loader, &slot, fp, tp) != 0)
		die("load", "tests/vectors/filter.rcf was refused");
	free(fp);
	free(tp);
	/*
	 * Nothing writes the state directory after this first load (no
	 * reload loop runs here), so it goes now: a crashing input, which
	 * skips atexit, leaves nothing behind in /tmp.
	 */
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	tmpdir[0] = '\0';
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = &cfg;
	ctx.slot = &slot;
	ctx.loader = &loader;
	if ((lv = live_new(&cfg, 1, util_now(), err, sizeof(err))) == NULL)
		die("live", err);
	live_slot_init(&live);
	live_swap(&live, lv);
	ctx.live = &live;
	ctx.started_at = util_now();
	if ((srv = server_start(&ctx, err, sizeof(err))) == NULL)
		die("server_start", err);
	return 0;
}

static double
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Every reply starts with a status line the client can parse, and none is
 * a 500: that would be a handler failing on input it should refuse. A
 * status line can only start a line: bodies escape newlines in whatever
 * they echo (JSON), so input reflected in a body cannot fake one.
 */
static void
check_replies(const char *r, size_t len)
{
	size_t off;

	if (len == 0)
		return;
	if (len < 12 || (memcmp(r, "HTTP/1.1 ", 9) != 0 &&
	    memcmp(r, "HTTP/1.0 ", 9) != 0))
		abort();
	for (off = 0; off + 12 <= len; off++)
		if ((off == 0 || r[off - 1] == '\n') &&
		    (memcmp(r + off, "HTTP/1.1 500", 12) == 0 ||
		    memcmp(r + off, "HTTP/1.0 500", 12) == 0))
			abort();
}

/*
 * Writes data into fd (shutting the write side down after it) while
 * reading what comes back into out, until the server hangs up or
 * REPLY_MS pass; closes fd. Returns the bytes read.
 */
static size_t
exchange(int fd, const uint8_t *data, size_t size, char *out, size_t cap)
{
	struct pollfd pfd;
	size_t off = 0, got = 0;
	double deadline = ms_now() + REPLY_MS;
	ssize_t n;
	int left;
	bool wdone = false;

	if (size == 0) {
		shutdown(fd, SHUT_WR);
		wdone = true;
	}
	/* Write and read at once: the server may answer (or hang up) early. */
	for (;;) {
		left = (int)(deadline - ms_now());
		if (left <= 0)
			break;
		pfd.fd = fd;
		pfd.events = POLLIN | (wdone ? 0 : POLLOUT);
		pfd.revents = 0;
		if (poll(&pfd, 1, left) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!wdone && (pfd.revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = send(fd, data + off, size - off, MSG_NOSIGNAL);
			if (n > 0)
				off += (size_t)n;
			if ((n == -1 && errno != EAGAIN && errno != EINTR) ||
			    off == size) {
				shutdown(fd, SHUT_WR);
				wdone = true;
			}
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, out + got, cap - got, 0);
			if (n == 0)
				break;		/* the server hung up */
			if (n > 0) {
				got += (size_t)n;
				if (got == cap)
					break;
			} else if (errno != EAGAIN && errno != EINTR)
				break;
		}
	}
	close(fd);
	return got;
}

/*
 * The first answer in r[0..len) reduced to what must match: its head but
 * the Date line, then its body (Content-Length bytes). 0 when r holds no
 * complete answer.
 */
static size_t
first_answer(const char *r, size_t len, char *out, size_t cap)
{
	const char *end, *line, *eol, *cl;
	size_t o = 0, body = 0, n;

	if ((end = memmem(r, len, "\r\n\r\n", 4)) == NULL)
		return 0;
	for (line = r; line < end + 2; line = eol + 2) {
		eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		if (eol == NULL)
			return 0;
		n = (size_t)(eol - line);
		if (n >= 5 && strncasecmp(line, "Date:", 5) == 0)
			continue;
		if (n >= 15 && strncasecmp(line, "Content-Length:", 15) == 0) {
			cl = line + 15;
			body = (size_t)strtoul(cl, NULL, 10);
		}
		if (o + n + 1 > cap)
			return 0;
		memcpy(out + o, line, n);
		out[o + n] = '\n';
		o += n + 1;
	}
	end += 4;
	if ((size_t)(r + len - end) < body || o + body > cap)
		return 0;
	memcpy(out + o, end, body);
	return o + body;
}

/* The first answer over TCP, through the fast path, against got's. */
static void
check_fast_path(const uint8_t *data, size_t size, size_t got)
{
	static char a[64 * 1024], b[64 * 1024];
	struct sockaddr_in sin;
	size_t fgot, na, nb;
	int fd;

	if (server_fast_port(srv) == 0 || size < 14 ||
	    memcmp(data, "GET /v1/check?", 14) != 0)
		return;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		die("socket", strerror(errno));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)server_fast_port(srv));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS)
		die("connect", strerror(errno));
	fgot = exchange(fd, data, size, fast_replies, sizeof(fast_replies));
	na = first_answer(replies, got, a, sizeof(a));
	nb = first_answer(fast_replies, fgot, b, sizeof(b));
	if (na != nb || memcmp(a, b, na) != 0) {
		fprintf(stderr, "fuzz_http: the fast path answered otherwise\n"
		    "--- libmicrohttpd:\n%.*s\n--- fast path:\n%.*s\n",
		    (int)na, a, (int)nb, b);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timespec tick = { 0, 1000 * 1000 };
	size_t got;
	double deadline;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1)
		die("socketpair", strerror(errno));
	if (server_add_connection(srv, sv[0]) == -1) {
		close(sv[1]);
		die("server_add_connection", strerror(errno));
	}
	got = exchange(sv[1], data, size, replies, sizeof(replies));
	/*
	 * Once the connection is gone, every request on it has completed:
	 * per-request state freed, nothing left for a drain to wait on.
	 */
	deadline = ms_now() + DRAIN_WAIT_MS;
	while (server_inflight() != 0) {
		if (ms_now() > deadline) {
			fprintf(stderr, "fuzz_http: %lu requests still in "
			    "flight %d ms after the client left\n",
			    server_inflight(), DRAIN_WAIT_MS);
			abort();
		}
		nanosleep(&tick, NULL);
	}
	if (verbose)
		fprintf(stderr, "--- %zu bytes in, %zu out\n%.*s\n", size, got,
		    (int)got, replies);
	check_replies(replies, got);
	check_fast_path(data, size, got);
	return 0;
}
