/* test_xfcc.c - tests of the x-forwarded-client-cert parser */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xfcc.h"

static struct xfcc x;
static char err[256];

static int
parse(const char *s)
{
	err[0] = '\0';
	return xfcc_parse(&x, s, strlen(s), err, sizeof(err));
}

static void
teardown(void)
{
	xfcc_free(&x);
}

TestSuite(xfcc, .fini = teardown);

/* Envoy's documented example: By, Hash, a quoted Subject, URI. */
Test(xfcc, envoy_example)
{
	cr_assert_eq(parse("By=http://frontend.lyft.com;Hash=468ed33be74eee6556d90c0149c1309e9ba61d6425303443c0748a02dd8de688;"
	    "Subject=\"/C=US/ST=CA/L=San Francisco/OU=Lyft/CN=Test Client\";URI=http://testclient.lyft.com"), 0, "%s", err);
	cr_assert_eq(x.n, 1);
	cr_assert_str_eq(x.elem[0].v[XFCC_BY].s, "http://frontend.lyft.com");
	cr_assert_eq(x.elem[0].v[XFCC_HASH].len, 64);
	cr_assert_str_eq(x.elem[0].v[XFCC_SUBJECT].s,
	    "/C=US/ST=CA/L=San Francisco/OU=Lyft/CN=Test Client");
	cr_assert_str_eq(x.elem[0].v[XFCC_URI].s, "http://testclient.lyft.com");
	cr_assert_null(x.elem[0].v[XFCC_CERT].s);
}

/* Cert and Chain are URL-decoded; '+' stays '+'; other values are not. */
Test(xfcc, cert_decoded)
{
	cr_assert_eq(parse("Hash=ab%20;Cert=\"-----BEGIN%20CERTIFICATE-----%0aMII+/x==%0a\";"
	    "Chain=-----BEGIN%20X"), 0, "%s", err);
	cr_assert_str_eq(x.elem[0].v[XFCC_CERT].s,
	    "-----BEGIN CERTIFICATE-----\nMII+/x==\n");
	cr_assert_eq(x.elem[0].v[XFCC_CERT].len, 37);
	cr_assert_str_eq(x.elem[0].v[XFCC_CHAIN].s, "-----BEGIN X");
	cr_assert_str_eq(x.elem[0].v[XFCC_HASH].s, "ab%20");
}

/* Elements in header order, the last one added by the nearest proxy. */
Test(xfcc, several_elements)
{
	cr_assert_eq(parse("By=spiffe://a;Cert=\"A\" , By=spiffe://b;Cert=B,Hash=cc"),
	    0, "%s", err);
	cr_assert_eq(x.n, 3);
	cr_assert_str_eq(x.elem[0].v[XFCC_CERT].s, "A");
	cr_assert_str_eq(x.elem[1].v[XFCC_CERT].s, "B");
	cr_assert_str_eq(x.elem[1].v[XFCC_BY].s, "spiffe://b");
	cr_assert_null(x.elem[2].v[XFCC_CERT].s);
	cr_assert_str_eq(x.elem[2].v[XFCC_HASH].s, "cc");
}

/* Keys in any case; repeatable keys counted, the first value kept. */
Test(xfcc, keys_and_repeats)
{
	cr_assert_eq(parse("dns=a.example;DNS=b.example;cErT=c;uri=u;Other=\"x;y\""),
	    0, "%s", err);
	cr_assert_eq(x.elem[0].count[XFCC_DNS], 2);
	cr_assert_str_eq(x.elem[0].v[XFCC_DNS].s, "a.example");
	cr_assert_str_eq(x.elem[0].v[XFCC_CERT].s, "c");
	cr_assert_str_eq(x.elem[0].v[XFCC_URI].s, "u");
	cr_assert_str_eq(xfcc_key_name(XFCC_CHAIN), "Chain");
}

/* \" and \\ unescape; any other backslash pair is kept whole. */
Test(xfcc, quoted_escapes)
{
	cr_assert_eq(parse("Subject=\"CN=a\\\"b\\\\c\\,d, e;f=g\""), 0, "%s", err);
	cr_assert_str_eq(x.elem[0].v[XFCC_SUBJECT].s, "CN=a\"b\\c\\,d, e;f=g");
	teardown();
	cr_assert_eq(parse("Subject=\"\""), 0, "%s", err);
	cr_assert_eq(x.elem[0].v[XFCC_SUBJECT].len, 0);
}

/* The input need not be NUL-terminated. */
Test(xfcc, not_nul_terminated)
{
	char buf[8];

	memcpy(buf, "Cert=abX", 8);
	cr_assert_eq(xfcc_parse(&x, buf, 7, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(x.elem[0].v[XFCC_CERT].s, "ab");
}

static void
refused(const char *s, const char *why)
{
	cr_assert_eq(parse(s), -1, "accepted: %s", s);
	cr_assert_neq(err[0], '\0');
	cr_assert(strstr(err, why) != NULL, "%s: %s", s, err);
	cr_assert_null(x.buf);
	cr_assert_eq(x.n, 0);
}

Test(xfcc, refuses_syntax)
{
	refused("", "empty");
	refused(" ", "empty element");
	refused(",Cert=a", "empty element");
	refused("Cert=a,", "empty element");
	refused("Cert=a,,Cert=b", "empty element");
	refused("Cert=a;;Hash=b", "empty element");
	refused("Cert", "without '='");
	refused("Cert =a", "without '='");
	refused("Ce.rt=a", "without '='");
	refused(".rt=a", "letters, digits");
	refused("Cert=\"abc", "unterminated");
	refused("Cert=\"abc\\", "unterminated");
	refused("Cert=\"a\"b", "bytes after a value");
	refused("Cert=a b", "bytes after a value");
	refused("Cert=a=b", "must be quoted");
	refused("Cert=a\"b", "must be quoted");
	refused("Subject=caf\xc3\xa9", "must be quoted");
	refused("Subject=\"a\rb\"", "control byte");
	refused("Subject=\"a\\\nb\"", "control byte");
	refused("Cert=a\nb", "must be quoted");
	refused("Cert=a;Cert=b", "Cert twice");
	refused("Hash=a;hash=b", "Hash twice");
}

/* Strict URL-decoding of Cert and Chain. */
Test(xfcc, refuses_bad_escapes)
{
	refused("Cert=%zz", "bad %-escape");
	refused("Cert=ab%2", "truncated");
	refused("Cert=ab%", "truncated");
	refused("Chain=a%00b", "%00");
	refused("Cert=\"a b\"", "URL-encoded");
	refused("Cert=\"caf\xc3\xa9\"", "URL-encoded");
}

Test(xfcc, refuses_over_caps)
{
	char *s = malloc(XFCC_MAX_LEN + 16);
	size_t i, o = 0;

	cr_assert_not_null(s);
	memset(s, 'a', XFCC_MAX_LEN + 1);
	memcpy(s, "Cert=", 5);
	s[XFCC_MAX_LEN + 1] = '\0';
	refused(s, "longer than");
	s[XFCC_MAX_LEN] = '\0';
	cr_assert_eq(parse(s), 0, "%s", err);	/* exactly the cap */
	teardown();
	for (i = 0; i <= XFCC_MAX_ELEMS; i++)
		o += (size_t)snprintf(s + o, 16, "%sCert=a", i > 0 ? "," : "");
	refused(s, "more than 8 elements");
	s[o - 7] = '\0';
	cr_assert_eq(parse(s), 0, "%s", err);
	cr_assert_eq(x.n, XFCC_MAX_ELEMS);
	teardown();
	for (i = 0, o = 0; i <= XFCC_MAX_PAIRS; i++)
		o += (size_t)snprintf(s + o, 16, "%sDNS=a", i > 0 ? ";" : "");
	refused(s, "more than 64 pairs");
	free(s);
}
