/* test_sbuf.c - response buffer and JSON string escaping of hostile bytes */
#include <stdio.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "../svc/sbuf.h"
#include "util.h"

static char *
esc(const void *p, size_t n)
{
	struct sbuf b;
	size_t len;

	sbuf_init(&b, 0, 0);
	sbuf_add_jstr(&b, p, n);
	return sbuf_take(&b, &len);
}

Test(sbuf, escapes_quotes_controls_and_html)
{
	char *s = esc("a\"b\\c\n\x01<&>\x7f", 11);

	cr_assert_str_eq(s, "\"a\\\"b\\\\c\\u000a\\u0001\\u003c\\u0026"
	    "\\u003e\\u007f\"");
	free(s);
}

/* Each byte alone: kept as it is exactly when it is printable and harmless. */
Test(sbuf, every_byte_alone_is_kept_or_escaped_by_the_rule)
{
	unsigned char c;
	char *s;
	int i;
	bool kept, want;

	for (i = 0; i < 256; i++) {
		c = (unsigned char)i;
		s = esc(&c, 1);
		kept = strlen(s) == 3 && (unsigned char)s[1] == c;
		want = c >= 0x20 && c < 0x7f && strchr("\"\\<>&", c) == NULL;
		cr_assert_eq(kept, want, "byte 0x%02x: %s", i, s);
		free(s);
	}
}

Test(sbuf, keeps_valid_utf8_and_replaces_invalid)
{
	char *s = esc("\xc3\xa9\xe2\x82\xac", 5);

	cr_assert_str_eq(s, "\"\xc3\xa9\xe2\x82\xac\"");
	free(s);
	s = esc("\xff\xc3(\xed\xa0\x80\xc0\xaf", 8);
	cr_assert_str_eq(s, "\"\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\\ufffd"
	    "\\ufffd\"");
	free(s);
}

Test(sbuf, every_byte_string_is_valid_json)
{
	unsigned char in[256];
	cJSON *j;
	char *s;
	size_t i;

	for (i = 0; i < 256; i++)
		in[i] = (unsigned char)i;
	s = esc(in, sizeof(in));
	cr_assert(util_utf8_valid(s, strlen(s)));
	j = cJSON_Parse(s);
	cr_assert_not_null(j);
	cr_assert(cJSON_IsString(j));
	cJSON_Delete(j);
	free(s);
	s = esc("a\0b", 3);
	cr_assert_str_eq(s, "\"a\\u0000b\"");
	free(s);
}

/* u64_dec: what printf's %llu gives, NUL-terminated, and its length. */
Test(sbuf, u64_dec_is_printf)
{
	static const uint64_t v[] = { 0, 1, 9, 10, 99, 100, 4294967295u,
	    4294967296u, UINT64_C(9999999999999999999),
	    UINT64_C(10000000000000000000), UINT64_MAX };
	char got[U64_DEC_MAX + 8], want[32];
	size_t i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		memset(got, 'x', sizeof(got));
		n = u64_dec(got, v[i]);
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v[i]);
		cr_assert_str_eq(got, want);
		cr_assert_eq(n, strlen(want));
		cr_assert_eq(got[U64_DEC_MAX], 'x', "wrote past U64_DEC_MAX");
	}
}

Test(sbuf, numbers_and_growth)
{
	struct sbuf b;
	size_t len, i;
	char *s;

	sbuf_init(&b, 1, 0);
	sbuf_add_u64(&b, 0);
	sbuf_adds(&b, " ");
	sbuf_add_u64(&b, UINT64_MAX);
	sbuf_adds(&b, " ");
	sbuf_add_i64(&b, INT64_MIN);
	for (i = 0; i < 1000; i++)
		sbuf_addf(&b, "%s", "0123456789");
	cr_assert(sbuf_ok(&b));
	s = sbuf_take(&b, &len);
	cr_assert_eq(len, strlen(s));
	cr_assert(strncmp(s, "0 18446744073709551615 -9223372036854775808012",
	    46) == 0, "%.50s", s);
	cr_assert_eq(len, 43 + 10000);
	free(s);
}

Test(sbuf, cap_sets_oom_once)
{
	struct sbuf b;
	size_t len;

	sbuf_init(&b, 0, 16);
	sbuf_adds(&b, "0123456789");
	cr_assert(sbuf_ok(&b));
	sbuf_adds(&b, "0123456789");
	cr_assert(!sbuf_ok(&b));
	cr_assert_null(sbuf_take(&b, &len));
}

/*
 * The word-at-a-time scan for plain bytes decides as the byte rule does:
 * every byte value at every position of a 20-byte string of plain bytes
 * renders as the plain bytes around that byte rendered alone.
 */
Test(sbuf, every_byte_at_every_position_of_a_run)
{
	char in[20], want[64], *alone, *got;
	struct sbuf b;
	size_t len, alen, pos;
	unsigned c;

	for (c = 0; c < 256; c++) {
		sbuf_init(&b, 0, 0);
		sbuf_add_jstr(&b, &(unsigned char){ (unsigned char)c }, 1);
		alone = sbuf_take(&b, &alen);
		cr_assert(alen >= 3 && alen < 20);
		for (pos = 0; pos < sizeof(in); pos++) {
			memset(in, 'a' + (int)(pos % 26), sizeof(in));
			in[pos] = (char)c;
			snprintf(want, sizeof(want), "\"%.*s%.*s%.*s\"",
			    (int)pos, in, (int)(alen - 2), alone + 1,
			    (int)(sizeof(in) - pos - 1), in + pos + 1);
			sbuf_init(&b, 0, 0);
			sbuf_add_jstr(&b, in, sizeof(in));
			got = sbuf_take(&b, &len);
			cr_assert_str_eq(got, want, "byte 0x%02x at %zu", c, pos);
			free(got);
		}
		free(alone);
	}
}

/*
 * sbuf_add's inline path keeps the slow path's rules: it fills a buffer
 * to max and no further, appends nothing after an oom (even what would
 * fit), and grows exactly when len + n + 1 passes cap.
 */
Test(sbuf, inline_appends_keep_the_rules)
{
	char big[200], *s;
	struct sbuf b;
	size_t len, i;

	sbuf_init(&b, 0, 16);
	cr_assert_eq(b.cap, 16, "cap is clamped to max");
	sbuf_add(&b, "0123456789abcde", 15);	/* 15 + NUL: exactly max */
	cr_assert(sbuf_ok(&b));
	sbuf_add(&b, "x", 1);
	cr_assert(!sbuf_ok(&b));
	cr_assert_eq(b.len, 15);
	cr_assert_null(sbuf_take(&b, &len));

	memset(big, 'b', sizeof(big));
	sbuf_init(&b, 0, 64);
	sbuf_add(&b, "0123456789", 10);
	sbuf_add(&b, big, 100);			/* past max: oom */
	cr_assert(!sbuf_ok(&b));
	sbuf_add(&b, "ab", 2);			/* fits in cap, still refused */
	sbuf_addlit(&b, "cd");
	cr_assert_eq(b.len, 10);
	cr_assert_null(sbuf_take(&b, &len));

	sbuf_init(&b, 64, 0);
	sbuf_add(&b, big, 63);			/* 63 + NUL: cap exactly */
	cr_assert_eq(b.cap, 64);
	sbuf_add(&b, "z", 1);			/* one more: grows */
	cr_assert_gt(b.cap, 64);
	for (i = 0; i < 1000; i++)
		sbuf_addlit(&b, "0123456789");
	cr_assert(sbuf_ok(&b));
	s = sbuf_take(&b, &len);
	cr_assert_eq(len, 64 + 10000);
	cr_assert_eq(strlen(s), len);
	cr_assert_eq(s[62], 'b');
	cr_assert_eq(s[63], 'z');
	cr_assert(strncmp(s + len - 10, "0123456789", 10) == 0);
	free(s);
}

/*
 * json_add_strn's sanitized copy printed by sbuf_add_json: always valid
 * UTF-8 JSON, whatever the bytes; parses back to the bytes with every
 * invalid one replaced by U+FFFD, cut at a NUL.
 */
static char *
tree_str(const void *p, size_t n, char **printed)
{
	struct sbuf b;
	cJSON *o, *j;
	char *v;
	size_t len;

	o = cJSON_CreateObject();
	json_add_strn(o, "s", p, n);
	sbuf_init(&b, 0, 0);
	sbuf_add_json(&b, o);
	cJSON_Delete(o);
	*printed = sbuf_take(&b, &len);
	cr_assert_not_null(*printed);
	cr_assert(util_utf8_valid(*printed, len), "%s", *printed);
	j = cJSON_Parse(*printed);
	cr_assert_not_null(j, "not JSON: %s", *printed);
	cr_assert(cJSON_IsString(cJSON_GetObjectItem(j, "s")), "%s", *printed);
	v = strdup(cJSON_GetObjectItem(j, "s")->valuestring);
	cJSON_Delete(j);
	cr_assert(util_utf8_valid(v, strlen(v)));
	return v;
}

#define FFFD "\xef\xbf\xbd"

Test(sbuf, json_tree_of_hostile_bytes_is_valid)
{
	static const struct {
		const char *in;
		size_t n;
		const char *want;
	} c[] = {
		{ "\xff\xc3(", 3, FFFD FFFD "(" },
		{ "\xc0\xaf", 2, FFFD FFFD },			/* overlong '/' */
		{ "\xe0\x80\xaf", 3, FFFD FFFD FFFD },		/* overlong */
		{ "\xed\xa0\x80", 3, FFFD FFFD FFFD },		/* surrogate */
		{ "\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD },	/* > U+10FFFF */
		{ "x\xf0\x9f\x98", 4, "x" FFFD FFFD FFFD },	/* truncated */
		{ "\xf0\x9f\x98\x80\xc3\xa9", 6, "\xf0\x9f\x98\x80\xc3\xa9" },
		{ "a\0b", 3, "a" },				/* NUL cuts */
		{ "a\"b\\c\n\x01\x1f<&>\x7f", 13, "a\"b\\c\n\x01\x1f<&>\x7f" },
	};
	unsigned char all[255];
	char *v, *p;
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		v = tree_str(c[i].in, c[i].n, &p);
		cr_assert_str_eq(v, c[i].want, "case %zu: %s", i, p);
		cr_assert_null(strpbrk(p, "<>&\x7f"), "%s", p);
		free(v);
		free(p);
	}
	for (i = 0; i < sizeof(all); i++)
		all[i] = (unsigned char)(i + 1);
	v = tree_str(all, sizeof(all), &p);
	cr_assert_eq(strncmp(v, (const char *)all, 127), 0);
	free(v);
	free(p);
	/* ASCII comes out escaped byte for byte as sbuf_add_jstr writes it. */
	v = tree_str(all, 127, &p);
	free(v);
	v = esc(all, 127);
	cr_assert_eq(strncmp(p, "{\"s\":", 5), 0);
	cr_assert_eq(strlen(p), 5 + strlen(v) + 1, "%s", p);
	cr_assert_eq(strncmp(p + 5, v, strlen(v)), 0, "%s\n%s", p, v);
	free(v);
	free(p);
}

Test(sbuf, json_tree_numbers_times_and_nulls)
{
	struct sbuf b;
	cJSON *o, *a;
	size_t len;
	char *s;

	o = cJSON_CreateObject();
	json_add_u64(o, "u", UINT64_MAX);
	json_add_i64(o, "i", INT64_MIN);
	json_add_double(o, "d", 1.0 / 3.0);
	json_add_double(o, "nan", 0.0 / 0.0);
	json_add_time(o, "t", 1700000000);
	json_add_time(o, "t0", 0);
	json_add_opt(o, "e", "");
	json_add_opt(o, "n", NULL);
	a = cJSON_AddArrayToObject(o, "a");
	json_add_str(a, NULL, "x");
	json_add_u64(a, NULL, 1);
	sbuf_init(&b, 0, 0);
	sbuf_add_json(&b, o);
	cJSON_Delete(o);
	s = sbuf_take(&b, &len);
	cr_assert_str_eq(s, "{\"u\":18446744073709551615,"
	    "\"i\":-9223372036854775808,\"d\":0.333333,\"nan\":null,"
	    "\"t\":\"2023-11-14T22:13:20Z\",\"t0\":null,\"e\":null,\"n\":null,"
	    "\"a\":[\"x\",1]}");
	free(s);
	sbuf_init(&b, 0, 0);
	sbuf_add_json(&b, NULL);
	cr_assert(!sbuf_ok(&b));
	sbuf_free(&b);
}
