/* test_sbuf.c - response buffer and JSON string escaping of hostile bytes */
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
