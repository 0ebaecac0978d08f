/* test_server.c - the per-request state machine of server.c over real libmicrohttpd connections */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../svc/config.h"
#include "../svc/server.h"
#include "../svc/snapshot.h"
#include "log.h"
#include "util.h"

/*
 * The daemon's own server on 127.0.0.1:0 with no filter loaded (checks
 * answer 503 no_filter once their body is read and parsed), fed through
 * server_add_connection: one end of a socketpair is a connection, the
 * other is the client. A request's state lives in its connection and is
 * started afresh for each request on it, so these send several requests
 * down one connection and look at every answer.
 */

static struct config cfg;
static struct snapshot_slot slot;
static struct live_slot lslot;
static struct server_ctx ctx;
static struct server *srv;
static uint64_t setup_body_total;	/* 0: the default max_body_total */

static void
setup(void)
{
	struct live *lv;
	char err[256];

	signal(SIGPIPE, SIG_IGN);
	log_init("test_server", LOG_LVL_ERR);
	config_init(&cfg);
	cfg.listen = strdup("127.0.0.1:0");
	cfg.filter_dir = strdup("/nonexistent");
	cfg.state_dir = strdup("/nonexistent");
	cfg.threads = 1;
	cfg.conn_timeout = 5;
	cfg.max_body = 1024;
	if (setup_body_total != 0)
		cfg.max_body_total = setup_body_total;
	snapshot_slot_init(&slot);
	live_slot_init(&lslot);
	lv = live_new(&cfg, 1, util_now(), err, sizeof(err));
	cr_assert_not_null(lv, "live_new: %s", err);
	live_swap(&lslot, lv);
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = &cfg;
	ctx.slot = &slot;
	ctx.live = &lslot;
	ctx.started_at = util_now();
	srv = server_start(&ctx, err, sizeof(err));
	cr_assert_not_null(srv, "server_start: %s", err);
}

static void
teardown(void)
{
	server_stop(srv, 1000);
	live_slot_free(&lslot);
	snapshot_slot_free(&slot);
	config_free(&cfg);
}

TestSuite(server, .init = setup, .fini = teardown, .timeout = 30);

static double
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Sends req[0..len) on a fresh connection (all of it unless the server
 * hangs up first; then the write side is shut down unless keep_open),
 * reads until the server hangs up or 3 s pass, closes, and waits until no
 * request is in flight (each one's on_completed ran). Returns the bytes
 * read into out (NUL-terminated).
 */
static size_t
exchange(const char *req, size_t len, bool keep_open, char *out, size_t cap)
{
	struct timespec tick = { 0, 1000 * 1000 };
	struct pollfd pfd;
	size_t off = 0, got = 0;
	double deadline = ms_now() + 3000;
	ssize_t n;
	int sv[2], left;
	bool wdone = false;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(server_add_connection(srv, sv[0]), 0);
	while ((left = (int)(deadline - ms_now())) > 0) {
		pfd.fd = sv[1];
		pfd.events = POLLIN | (wdone ? 0 : POLLOUT);
		pfd.revents = 0;
		if (poll(&pfd, 1, left) == -1 && errno != EINTR)
			break;
		if (!wdone && (pfd.revents & POLLOUT)) {
			n = send(sv[1], req + off, len - off, MSG_NOSIGNAL);
			if (n > 0)
				off += (size_t)n;
			if ((n == -1 && errno != EAGAIN) || off == len) {
				if (!keep_open)
					shutdown(sv[1], SHUT_WR);
				wdone = true;
			}
		}
		if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(sv[1], out + got, cap - 1 - got, 0);
			if (n == 0)
				break;
			if (n > 0)
				got += (size_t)n;
			else if (errno != EAGAIN && errno != EINTR)
				break;
			if (got == cap - 1)
				break;
		}
	}
	close(sv[1]);
	out[got] = '\0';
	deadline = ms_now() + 30000;	/* ends as soon as they are done */
	while (server_inflight() != 0 && ms_now() < deadline)
		nanosleep(&tick, NULL);
	cr_assert_eq(server_inflight(), 0, "a request never completed");
	return got;
}

/* The status codes of the replies in buf, in order; returns how many. */
static size_t
statuses(const char *buf, unsigned *st, size_t max)
{
	const char *p = buf;
	size_t n = 0;

	while (n < max && (p = strstr(p, "HTTP/1.1 ")) != NULL) {
		st[n++] = (unsigned)strtoul(p + 9, NULL, 10);
		p += 9;
	}
	return n;
}

#define POST_CHECK(len) "POST /v1/check HTTP/1.1\r\nHost: x\r\n" \
	"Content-Type: application/json\r\nContent-Length: " len "\r\n\r\n"

Test(server, pipelined_requests_each_start_clean)
{
	/*
	 * A GET with a body it does not read, a body read, a HEAD, then a
	 * 404: each answered on its own terms, whatever the request before
	 * it left behind. (A refusal made at the headers closes the
	 * connection, so the 404 comes last.)
	 */
	static const char req[] =
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
	    "hello"
	    POST_CHECK("10") "{\"id\":\"a\"}"
	    "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n";
	static char out[65536];
	unsigned st[8];

	exchange(req, sizeof(req) - 1, false, out, sizeof(out));
	cr_assert_eq(statuses(out, st, 8), 4, "replies: %s", out);
	cr_expect_eq(st[0], 200);
	cr_expect_eq(st[1], 503, "the body was read and parsed: %s", out);
	cr_expect_eq(st[2], 200);
	cr_expect_eq(st[3], 404);
	cr_expect_not_null(strstr(out, "\"error\":\"no_filter\""));
}

Test(server, refusals_before_routing_and_before_the_body)
{
	static const char *const req[] = {
		"GET /v1/check?id=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		POST_CHECK("0"),
		"PUT /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		POST_CHECK("2000") "{}",
	};
	static const unsigned want[] = { 400, 400, 405, 413 };
	static const char *const msg[] = { "malformed percent-encoding",
	    "a JSON body is required", "method_not_allowed",
	    "payload_too_large" };
	static char out[8192];
	unsigned st[4];
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		exchange(req[i], strlen(req[i]), false, out, sizeof(out));
		cr_assert_eq(statuses(out, st, 4), 1, "replies: %s", out);
		cr_expect_eq(st[0], want[i], "%s", out);
		cr_expect_not_null(strstr(out, msg[i]), "%s", out);
	}
}

Test(server, a_body_does_not_leak_into_the_next_request)
{
	/*
	 * Two bodies on one connection: were the first one's bytes kept,
	 * the second would read as trailing data (400), not as a check.
	 */
	static char req[4096], out[65536];
	unsigned st[4];
	size_t n = 0;

	n += (size_t)snprintf(req + n, sizeof(req) - n,
	    POST_CHECK("1000") "{\"id\":\"a\"}%990s", "");
	n += (size_t)snprintf(req + n, sizeof(req) - n,
	    "POST /v1/check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	    "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n"
	    "{\"id\":\"b\"}");
	exchange(req, n, false, out, sizeof(out));
	cr_assert_eq(statuses(out, st, 4), 2, "replies: %s", out);
	cr_expect_eq(st[0], 503, "%s", out);
	cr_expect_eq(st[1], 503, "%s", out);
	cr_expect_null(strstr(out, "trailing data"));
}

Test(server, chunked_body_over_the_cap_is_413_then_closed)
{
	static char req[8192], out[65536];
	unsigned st[4];
	size_t n = 0;
	int i;

	n += (size_t)snprintf(req + n, sizeof(req) - n,
	    "POST /v1/check HTTP/1.1\r\nHost: x\r\n"
	    "Content-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	for (i = 0; i < 5; i++)		/* 5 x 400 bytes, cap 1024 */
		n += (size_t)snprintf(req + n, sizeof(req) - n,
		    "190\r\n%400s\r\n", "");
	n += (size_t)snprintf(req + n, sizeof(req) - n, "0\r\n\r\n"
	    "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	exchange(req, n, false, out, sizeof(out));
	cr_assert_geq(statuses(out, st, 4), 1, "replies: %s", out);
	cr_expect_eq(st[0], 413, "%s", out);
	cr_expect_not_null(strstr(out, "payload_too_large"));
}

/* max_body_total of four bodies of max_body (1024): room for two at once. */
static void
setup_small_total(void)
{
	setup_body_total = 4096;
	setup();
	setup_body_total = 0;
}

TestSuite(server_small, .init = setup_small_total, .fini = teardown,
    .timeout = 30);

/*
 * A chunked body (no length announced) reserves at most max_body + 1 of
 * max_body_total, not a 64 KiB first allocation that a small total could
 * never hold: it is read, and answered (503 no_filter: none is loaded).
 */
Test(server_small, chunked_body_fits_a_small_total)
{
	static const char req[] = "POST /v1/check HTTP/1.1\r\nHost: x\r\n"
	    "Content-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	    "a\r\n{\"id\":\"a\"}\r\n0\r\n\r\n";
	static char out[4096];
	unsigned st[2];

	exchange(req, sizeof(req) - 1, false, out, sizeof(out));
	cr_assert_eq(statuses(out, st, 2), 1, "replies: %s", out);
	cr_expect_null(strstr(out, "overloaded"), "%s", out);
	cr_expect_not_null(strstr(out, "no_filter"), "%s", out);
}

Test(server, client_gone_in_the_middle_of_a_body)
{
	/* exchange() asserts that the request completed all the same. */
	static const char req[] = POST_CHECK("500") "{\"id\":";
	static char out[1024];

	cr_expect_eq(exchange(req, sizeof(req) - 1, false, out, sizeof(out)),
	    0, "no answer to half a body: %s", out);
}

Test(server, many_connections_one_after_another)
{
	/* Each connection's state is its own and starts clean. */
	static const char req[] = POST_CHECK("10") "{\"id\":\"a\"}"
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	static char out[8192];
	unsigned st[4];
	int i;

	for (i = 0; i < 50; i++) {
		exchange(req, sizeof(req) - 1, false, out, sizeof(out));
		cr_assert_eq(statuses(out, st, 4), 2, "replies: %s", out);
		cr_assert_eq(st[0], 503);
		cr_assert_eq(st[1], 200);
	}
}
