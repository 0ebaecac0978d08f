/* test_fasthead.c - which request heads the fast path takes, and what it reads from them */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../svc/fasthead.h"

static char dec[FASTHEAD_MAX];

static enum fasthead_kind
parse(const char *s, struct fasthead *h)
{
	return fasthead_parse(s, strlen(s), h, dec, sizeof(dec));
}

Test(fasthead, takes_plain_checks_and_decodes_them)
{
	static const char pipelined[] = "GET /v1/check?id=a%2Bb%00c HTTP/1.1\r\n"
	    "Host: h\r\nUser-Agent: t\r\nConnection: Keep-Alive\r\n\r\n"
	    "GET /healthz HTTP/1.1\r\n\r\n";
	struct fasthead h;

	cr_assert_eq(parse("GET /v1/check?id=tok-1 HTTP/1.1\r\nHost: x\r\n\r\n",
	    &h), FH_CHECK);
	cr_assert_eq(h.id_len, 5);
	cr_assert_eq(memcmp(h.id, "tok-1", 5), 0);
	cr_assert_null(h.scope);
	cr_assert_eq(h.head_len, strlen("GET /v1/check?id=tok-1 HTTP/1.1\r\n"
	    "Host: x\r\n\r\n"));

	cr_assert_eq(parse("GET /v1/check?scope=crl%3Aab&id=%30%31 HTTP/1.1\r\n"
	    "host:x\r\n\r\n", &h), FH_CHECK);
	cr_assert_eq(h.id_len, 2);
	cr_assert_eq(memcmp(h.id, "01", 2), 0);
	cr_assert_eq(h.scope_len, 6);
	cr_assert_str_eq(h.scope, "crl:ab");	/* ends in a NUL */

	/*
	 * A longer value decoded before into the same buffer leaves nothing
	 * behind a shorter one (revkey_from_text reads the scope as a C
	 * string: "default" after "defaultxyz" once read "defaultxyz").
	 */
	cr_assert_eq(parse("GET /v1/check?id=abcdefghijklmnop&scope=defaultxyz "
	    "HTTP/1.1\r\nHost: x\r\n\r\n", &h), FH_CHECK);
	cr_assert_eq(parse("GET /v1/check?scope=default&id=k HTTP/1.1\r\n"
	    "Host: x\r\n\r\n", &h), FH_CHECK);
	cr_assert_str_eq(h.scope, "default");
	cr_assert_eq(h.id_len, 1);
	cr_assert_eq(h.id[1], '\0');

	/* Only the first request's head; the id keeps its NUL. */
	cr_assert_eq(fasthead_parse(pipelined, sizeof(pipelined) - 1, &h, dec,
	    sizeof(dec)), FH_CHECK);
	cr_assert_eq(h.head_len, strstr(pipelined, "GET /healthz") - pipelined);
	cr_assert_eq(h.id_len, 5);
	cr_assert_eq(memcmp(h.id, "a+b\0c", 5), 0);
}

Test(fasthead, waits_for_the_rest_of_a_head)
{
	static const char full[] = "GET /v1/check?id=x HTTP/1.1\r\nHost: x\r\n\r\n";
	struct fasthead h;
	size_t n;

	for (n = 0; n < sizeof(full) - 1; n++)
		cr_assert_eq(fasthead_parse(full, n, &h, dec, sizeof(dec)),
		    FH_MORE, "after %zu bytes", n);
	cr_assert_eq(fasthead_parse(full, n, &h, dec, sizeof(dec)), FH_CHECK);
	/* Another request is known not to be one from its first bytes. */
	cr_assert_eq(fasthead_parse("POST", 4, &h, dec, sizeof(dec)), FH_OTHER);
	cr_assert_eq(fasthead_parse("GET /v1/st", 10, &h, dec, sizeof(dec)),
	    FH_OTHER);
	/* And a head whose lines so far cannot make one: not waited for. */
	cr_assert_eq(parse("GET /v1/check?id=a+b HTTP/1.1\r\n", &h), FH_OTHER);
	cr_assert_eq(parse("GET /v1/check?id=a HTTP/1.1\n", &h), FH_OTHER);
	cr_assert_eq(parse("GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 5\r\n", &h), FH_OTHER);
	cr_assert_eq(parse("GET /v1/check?id=a HTTP/1.1\r\nHost: x\n", &h),
	    FH_OTHER);
	cr_assert_eq(parse("GET /v1/check?id=a HTTP/1.1\r\nHost: x\rY", &h),
	    FH_OTHER);
	cr_assert_eq(parse("GET /v1/check?id=a HTTP/1.1\r\nHost: x\r", &h),
	    FH_MORE);
}

/*
 * Every head here is one libmicrohttpd and server.c must judge, and is
 * known for one from its bytes (never FH_MORE: the fast path would wait
 * for a head that cannot complete as a plain check): a
 * refusal, another reading of the bytes than the fast path's, or a
 * request that is not a plain GET check.
 */
Test(fasthead, leaves_everything_else_to_libmicrohttpd)
{
	static const char *const other[] = {
		"POST /v1/check?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /v1/check?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.0\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1 \r\nHost: x\r\n\r\n",
		"GET /v1/checkx?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/ch%65ck?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check? HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a+b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a#b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a=b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a\tb HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=%zz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=%4 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a% HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id= HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a&id=b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a&scope=x&scope=y HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a&scope= HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a&scope=x%00y HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?scope=x HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a&x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a& HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?&id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?ID=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?i%64=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nX-A 1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\n: 1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\nHost: x\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nX-A: \x01\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\nX-A: \xff\r\n\r\n",
		"GET /v1/check?id=a HTTP/1.1\r\nHost: x\r\n\n",
		"GET  /v1/check?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"get /v1/check?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
	};
	struct fasthead h;
	size_t i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		cr_expect_eq(parse(other[i], &h), FH_OTHER, "taken or "
		    "waited for: %s", other[i]);
}

/* A head past FASTHEAD_MAX is libmicrohttpd's, complete or not. */
Test(fasthead, long_heads_are_not_taken)
{
	size_t cap = FASTHEAD_MAX * 2, n;
	char *b = malloc(cap + 1);
	struct fasthead h;

	cr_assert_not_null(b);
	n = (size_t)snprintf(b, cap, "GET /v1/check?id=x HTTP/1.1\r\nHost: x\r\n"
	    "X-Pad: ");
	memset(b + n, 'p', FASTHEAD_MAX);
	memcpy(b + n + FASTHEAD_MAX, "\r\n\r\n", 4);
	cr_assert_eq(fasthead_parse(b, n + FASTHEAD_MAX + 4, &h, dec,
	    sizeof(dec)), FH_OTHER);
	cr_assert_eq(fasthead_parse(b, FASTHEAD_MAX, &h, dec, sizeof(dec)),
	    FH_OTHER);
	cr_assert_eq(fasthead_parse(b, FASTHEAD_MAX - 1, &h, dec,
	    sizeof(dec)), FH_MORE);
	/* Too small a buffer for what it decodes: never taken. */
	cr_assert_eq(fasthead_parse("GET /v1/check?id=x HTTP/1.1\r\nHost: x"
	    "\r\n\r\n", 40, &h, dec, 16), FH_OTHER);
	free(b);
}

/*
 * Hostile bytes: taken heads, cut anywhere and with any byte changed,
 * never read past what was given (ASan), and whatever is taken has its
 * id and scope inside dec and a head that ends in a blank line.
 */
Test(fasthead, mutated_heads_stay_in_bounds)
{
	static const char seed[] = "GET /v1/check?id=t%41k&scope=s HTTP/1.1\r\n"
	    "Host: x\r\nConnection: keep-alive\r\n\r\n";
	unsigned st = 12345;
	struct fasthead h;
	char *b;
	size_t n, i, k;

	for (i = 0; i < 200000; i++) {
		n = sizeof(seed) - 1;
		b = malloc(n);
		cr_assert_not_null(b);
		memcpy(b, seed, n);
		for (k = 0; k < 1 + i % 3; k++) {
			st = st * 1103515245u + 12345u;
			b[(st >> 8) % n] = (char)(st >> 20);
		}
		st = st * 1103515245u + 12345u;
		n -= (st >> 8) % 8 == 0 ? (st >> 12) % n : 0;
		if (fasthead_parse(b, n, &h, dec, sizeof(dec)) == FH_CHECK) {
			cr_assert_leq(h.head_len, n);
			cr_assert_eq(memcmp(b + h.head_len - 4, "\r\n\r\n", 4), 0);
			cr_assert(h.id >= dec && h.id + h.id_len <= dec +
			    sizeof(dec));
			cr_assert(h.scope == NULL || (h.scope >= dec &&
			    h.scope + h.scope_len < dec + sizeof(dec)));
			cr_assert(h.scope == NULL ||
			    strlen(h.scope) == h.scope_len);
			cr_assert_gt(h.id_len, 0);
		}
		free(b);
	}
}

static enum fasthead_verdict
judge(const char *s, const char **why)
{
	return fasthead_judge(s, strlen(s), why);
}

/*
 * The heads that frame a request two ways are refused, whatever their
 * method or path (RFC 9112 5.1, 5.2, 3.2, 6.1), each with its reason.
 */
Test(fasthead, judge_refuses_heads_that_frame_two_ways)
{
	static const struct {
		const char *head;
		const char *why;
	} bad[] = {
		{ "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
		    "Transfer-Encoding : chunked\r\n\r\n", FASTHEAD_FOLD_MSG },
		{ "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
		    "Transfer-Encoding\t: chunked\r\n\r\n", FASTHEAD_FOLD_MSG },
		{ "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
		    "X-A: b\r\n Transfer-Encoding: chunked\r\n\r\n",
		    FASTHEAD_FOLD_MSG },
		{ "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n"
		    "Transfer-Encoding:\r\n\tchunked: x\r\n\r\n",
		    FASTHEAD_FOLD_MSG },
		{ "GET /healthz HTTP/1.1\r\n X-A: b\r\nHost: x\r\n\r\n",
		    FASTHEAD_FOLD_MSG },
		{ "GET /v1/check?id=a HTTP/1.1\r\nHost : x\r\n\r\n",
		    FASTHEAD_FOLD_MSG },
		{ "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
		    "transfer-encoding: chunked\r\n\r\n", FASTHEAD_CLTE_MSG },
		{ "GET /healthz HTTP/1.1\r\nHost: x\r\nhost: y\r\n\r\n",
		    FASTHEAD_HOST2_MSG },
		{ "GET /healthz HTTP/1.0\r\nHost: x\r\nHost: y\r\n\r\n",
		    FASTHEAD_HOST2_MSG },
		{ "GET /healthz HTTP/1.1\r\n\r\n", FASTHEAD_NOHOST_MSG },
		{ "GET /v1/check?id=a HTTP/1.1\r\nX-Host: x\r\n\r\n",
		    FASTHEAD_NOHOST_MSG },
	};
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(judge(bad[i].head, &why), FJ_BAD, "not refused: "
		    "%s", bad[i].head);
		cr_expect(why != NULL && strcmp(why, bad[i].why) == 0,
		    "%s: %s", bad[i].head, why != NULL ? why : "(null)");
	}
}

/*
 * Plain heads pass; a head not all in is waited for; and a head
 * libmicrohttpd would read otherwise (a bare LF, a line without a colon,
 * another version) is left to it (server.c judges what it parsed).
 */
Test(fasthead, judge_passes_plain_heads_and_leaves_odd_ones)
{
	static const char *const ok[] = {
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /healthz HTTP/1.0\r\n\r\n",
		"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
		    "X-A: b c\t d\r\n\r\n{\"a\"}GET / HTTP/1.1\r\n\r\n",
		"POST /v1/check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
		    "chunked\r\n\r\n",
		/* Not judged here: libmicrohttpd's, then fields_refused's. */
		"GET /healthz HTTP/1.1\nHost : x\n\n",
		"GET /healthz HTTP/1.1\r\nX-A: b\r\n c\r\n\r\n",
		"GET /healthz HTTP/2.0\r\n\r\n",
		"GET /healthz\r\n\r\n",
		"GET /he\x01z HTTP/1.1\r\n\r\n",
	};
	static const char nul[] = "GET /healthz HTTP/1.1\r\nX-A\0 : b\r\n\r\n";
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_expect_eq(judge(ok[i], &why), FJ_OK, "not passed: %s",
		    ok[i]);
		cr_expect_null(why);
	}
	cr_expect_eq(fasthead_judge(nul, sizeof(nul) - 1, &why), FJ_OK);
	cr_expect_eq(judge("GET /healthz HTTP/1.1\r\nHost : x\r\n", &why),
	    FJ_MORE);
	cr_expect_eq(judge("GET /healthz HTTP/1.1\r\nHost: x\r\n\r", &why),
	    FJ_MORE);
	cr_expect_eq(judge("", &why), FJ_MORE);
	/* A head longer than FASTHEAD_MAX is not judged here. */
	{
		char *b = malloc(FASTHEAD_MAX + 64);
		size_t n;

		cr_assert_not_null(b);
		n = (size_t)snprintf(b, 64, "GET / HTTP/1.1\r\nX-Pad: ");
		memset(b + n, 'p', FASTHEAD_MAX);
		memcpy(b + n + FASTHEAD_MAX, "\r\nA : b\r\n\r\n", 11);
		cr_expect_eq(fasthead_judge(b, n + FASTHEAD_MAX + 11, &why),
		    FJ_MORE);
		free(b);
	}
}

/* Hostile bytes: judged heads, cut and changed anywhere, stay in bounds. */
Test(fasthead, judge_mutated_heads_stay_in_bounds)
{
	static const char seed[] = "POST /v1/check HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 3\r\nX-A : b\r\n c\r\n\r\nabc";
	unsigned st = 777;
	const char *why;
	enum fasthead_verdict v;
	char *b;
	size_t n, i, k;

	for (i = 0; i < 200000; i++) {
		n = sizeof(seed) - 1;
		b = malloc(n);
		cr_assert_not_null(b);
		memcpy(b, seed, n);
		for (k = 0; k < 1 + i % 3; k++) {
			st = st * 1103515245u + 12345u;
			b[(st >> 8) % n] = (char)(st >> 20);
		}
		st = st * 1103515245u + 12345u;
		n -= (st >> 8) % 8 == 0 ? (st >> 12) % n : 0;
		v = fasthead_judge(b, n, &why);
		cr_assert((v == FJ_BAD) == (why != NULL));
		free(b);
	}
}
