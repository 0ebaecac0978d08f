/* test_batch.c - the batch body read in place: its one shape, everything else left to cJSON, never a byte outside */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../svc/batch.h"
#include "../svc/checkio.h"

#define MAX	16

/* Parses text from an exact-size heap copy, so ASan sees any overread. */
static int
parse(const char *text, struct batch_item *items, size_t max, size_t *n)
{
	size_t len = strlen(text);
	char *buf = malloc(len > 0 ? len : 1);
	int rc;

	cr_assert_not_null(buf);
	memcpy(buf, text, len);
	rc = batch_parse(buf, len, items, max, n);
	if (rc == 0) {
		/* Re-point the items at text: buf goes now. */
		for (size_t i = 0; i < *n; i++) {
			items[i].id = text + (items[i].id - buf);
			if (items[i].scope != NULL)
				items[i].scope = text + (items[i].scope - buf);
		}
	}
	free(buf);
	return rc;
}

/*
 * What the general path (checkio_parse_body and cJSON) reads from the same
 * body must be the same items, ids and scopes: the fast path may only
 * accept bodies whose meaning it knows exactly.
 */
static void
same_as_cjson(const char *text, const struct batch_item *items, size_t n)
{
	const char *why = NULL;
	const cJSON *arr, *it, *id, *scope;
	cJSON *root;
	size_t i = 0;

	root = checkio_parse_body(text, strlen(text), &why);
	cr_assert_not_null(root, "cJSON refuses what the fast path took: %s",
	    why);
	arr = cJSON_GetObjectItemCaseSensitive(root, "items");
	cr_assert(cJSON_IsArray(arr));
	cr_assert_eq((size_t)cJSON_GetArraySize(arr), n);
	cJSON_ArrayForEach(it, arr) {
		id = cJSON_GetObjectItemCaseSensitive(it, "id");
		scope = cJSON_GetObjectItemCaseSensitive(it, "scope");
		cr_assert(cJSON_IsString(id));
		cr_assert_eq(strlen(id->valuestring), items[i].id_len);
		cr_assert_eq(memcmp(id->valuestring, items[i].id,
		    items[i].id_len), 0);
		if (items[i].scope == NULL)
			cr_assert_null(scope);
		else {
			cr_assert(cJSON_IsString(scope));
			cr_assert_eq(strlen(scope->valuestring),
			    items[i].scope_len);
			cr_assert_eq(memcmp(scope->valuestring,
			    items[i].scope, items[i].scope_len), 0);
		}
		/* Exactly the members the fast path saw. */
		cr_assert_eq(cJSON_GetArraySize(it), scope != NULL ? 2 : 1);
		i++;
	}
	cJSON_Delete(root);
}

Test(batch, reads_the_common_shape)
{
	static const char *const ok[] = {
		"{\"items\":[{\"id\":\"a\"}]}",
		"{\"items\":[]}",
		" \r\n\t{ \"items\" : [ ] } \n",
		"{\"items\": [{\"id\":\"a\"},{\"id\":\"b\", \"scope\":\"s1\"},"
		    "{\"scope\":\"x509:00\",\"id\":\"0A:1b\"}]}",
		"{\"items\":[{\"id\":\"\"}]}",	/* the key step refuses it */
		"{\"items\":[ {\n\"id\" :\t\"tok-1\" } ,{ \"id\":\"~!@#$%^&*()"
		    "_+{}[]:;'<>,.?/ \"} ]}\r\n",
	};
	static const size_t counts[] = { 1, 0, 0, 3, 1, 2 };
	struct batch_item items[MAX];
	size_t n, i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(parse(ok[i], items, MAX, &n), 0, "%s", ok[i]);
		cr_assert_eq(n, counts[i], "%s", ok[i]);
		same_as_cjson(ok[i], items, n);
	}
	cr_assert_eq(parse(ok[3], items, MAX, &n), 0);
	cr_assert_eq(items[1].scope_len, 2);
	cr_assert_eq(memcmp(items[1].scope, "s1", 2), 0);
	cr_assert_eq(items[2].id_len, 5);
	cr_assert_eq(memcmp(items[2].id, "0A:1b", 5), 0);
	cr_assert_null(items[0].scope);
}

/* Every other shape is left to the general path, which answers it as before. */
Test(batch, leaves_every_other_body_to_the_general_path)
{
	static const char *const other[] = {
		"",
		"{}",
		"[]",
		"{\"id\":\"a\"}",
		"{\"items\":\"tok-1\"}",
		"{\"items\":{\"id\":\"a\"}}",
		"{\"items\":[1,\"x\",null,{}]}",
		"{\"items\":[{}]}",
		"{\"items\":[{\"scope\":\"s\"}]}",
		"{\"items\":[{\"id\":\"a\",\"id\":\"b\"}]}",
		"{\"items\":[{\"id\":\"a\",\"scope\":\"s\",\"scope\":\"t\"}]}",
		"{\"items\":[{\"id\":\"a\",\"cert\":\"x\"}]}",
		"{\"items\":[{\"token\":\"a.b.c\"}]}",
		"{\"items\":[{\"id\":\"a\",\"chain\":[]}]}",
		"{\"items\":[{\"id\":1}]}",
		"{\"items\":[{\"id\":null}]}",
		"{\"items\":[{\"id\":\"a\\\"b\"}]}",
		"{\"items\":[{\"id\":\"\\u0061\"}]}",
		"{\"items\":[{\"id\":\"a\\u0000b\"}]}",
		"{\"items\":[{\"id\":\"\xc3\xa9\"}]}",
		"{\"items\":[{\"id\":\"a\x01\"}]}",
		"{\"items\":[{\"id\":\"a\x7f\"}]}",
		"{\"items\":[{\"id\":\"a\"}],\"items\":[]}",
		"{\"items\":[{\"id\":\"a\"}],\"x\":1}",
		"{\"x\":1,\"items\":[{\"id\":\"a\"}]}",
		"{\"items\":[{\"id\":\"a\"}]}x",
		"{\"items\":[{\"id\":\"a\"}]}{}",
		"{\"items\":[{\"id\":\"a\"},]}",
		"{\"items\":[,{\"id\":\"a\"}]}",
		"{\"items\":[{\"id\":\"a\"}{\"id\":\"b\"}]}",
		"{\"items\":[{\"id\":\"a\",}]}",
		"{\"items\":[[{\"id\":\"a\"}]]}",
		"{\"items\":[{\"id\":\"a\"}]",
		"{\"items\":[{\"id\":\"a\"}}",
		"{\"items\":[{\"id\":\"a}]}",
		"{'items':[{'id':'a'}]}",
		"{\"Items\":[{\"id\":\"a\"}]}",
		"{\"items\":[{\"ID\":\"a\"}]}",
		"\xef\xbb\xbf{\"items\":[]}",
		"{\"items\":[{\"id\":\"a\"}]}\v",
	};
	struct batch_item items[MAX];
	size_t n, i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		cr_assert_eq(parse(other[i], items, MAX, &n), -1, "case %zu: %s",
		    i, other[i]);
}

/* Every strict prefix of a good body is refused, reading nothing past it. */
Test(batch, every_truncation_is_refused_inside_its_bytes)
{
	static const char body[] = " {\"items\": [{\"id\":\"tok-1\"}, "
	    "{\"scope\":\"s\", \"id\":\"tok-2\"}] } ";
	struct batch_item items[MAX];
	char *cut;
	size_t n, len;

	for (len = 0; len < sizeof(body) - 3; len++) {
		cut = strndup(body, len);
		cr_assert_not_null(cut);
		cr_assert_eq(parse(cut, items, MAX, &n), -1, "%zu bytes", len);
		free(cut);
	}
	cr_assert_eq(parse(body, items, MAX, &n), 0);
	cr_assert_eq(n, 2);
}

/* More than max items: left to the general path, which answers 413. */
Test(batch, more_items_than_allowed_is_not_read)
{
	static const char five[] = "{\"items\":[{\"id\":\"a\"},{\"id\":\"b\"},"
	    "{\"id\":\"c\"},{\"id\":\"d\"},{\"id\":\"e\"}]}";
	struct batch_item items[5];
	size_t n;

	cr_assert_eq(parse(five, items, 5, &n), 0);
	cr_assert_eq(n, 5);
	cr_assert_eq(parse(five, items, 4, &n), -1);
	cr_assert_eq(parse("{\"items\":[]}", items, 0, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(parse("{\"items\":[{\"id\":\"a\"}]}", items, 0, &n), -1);
	/* The bound covers the tightest items a body can hold. */
	cr_assert_geq(batch_items_bound(strlen(five), 1000), 5);
	cr_assert_geq(batch_items_bound(12 + 9 * 1000 + 999, 100000), 1000);
	cr_assert_eq(batch_items_bound(1 << 20, 1000), 1000);
}

/* The fields of a key checkio_key_from_id fills, compared one by one. */
static void
same_key(const struct revkey *a, const struct revkey *b, const char *what)
{
	cr_assert_eq(a->scope_len, b->scope_len, "%s", what);
	cr_assert_str_eq(a->scope, b->scope, "%s", what);
	cr_assert_eq(a->id_len, b->id_len, "%s", what);
	cr_assert(memcmp(a->id, b->id, a->id_len) == 0, "%s", what);
	cr_assert_eq(a->cert, b->cert, "%s", what);
	cr_assert_eq(a->ndp, b->ndp, "%s", what);
	cr_assert_eq(a->nci, b->nci, "%s", what);
}

/*
 * A batch item of the scope of the previous key takes the shortcut only
 * when the full derivation would give the same key: same scope bytes
 * (the default for none), an id of 1 to REVKEY_ID_MAX bytes; anything
 * else is left to checkio_key_from_id, which words the refusal.
 */
Test(batch, same_scope_shortcut_gives_the_full_key)
{
	static struct revkey prev, k, ref;
	char e[300], longid[REVKEY_ID_MAX + 1];

	cr_assert_eq(checkio_key_from_id(&prev, "tenant-a", 8, "id-1", 4, e,
	    sizeof(e)), 0, "%s", e);
	memset(&k, 0xa5, sizeof(k));
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-a", 8,
	    "id-22", 5), 0);
	cr_assert_eq(checkio_key_from_id(&ref, "tenant-a", 8, "id-22", 5, e,
	    sizeof(e)), 0, "%s", e);
	same_key(&k, &ref, "same scope");

	cr_assert_eq(checkio_key_from_id(&prev, NULL, 0, "x", 1, e,
	    sizeof(e)), 0, "%s", e);
	cr_assert_eq(checkio_key_same_scope(&k, &prev, NULL, 0, "y", 1), 0);
	cr_assert_eq(checkio_key_from_id(&ref, NULL, 0, "y", 1, e,
	    sizeof(e)), 0, "%s", e);
	same_key(&k, &ref, "the default scope, none given");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, REVKEY_DEFAULT_SCOPE,
	    sizeof(REVKEY_DEFAULT_SCOPE) - 1, "z", 1), 0);
	cr_assert_eq(checkio_key_from_id(&ref, REVKEY_DEFAULT_SCOPE,
	    sizeof(REVKEY_DEFAULT_SCOPE) - 1, "z", 1, e, sizeof(e)), 0);
	same_key(&k, &ref, "the default scope, named");

	/* Each of these goes the full way. */
	cr_assert_eq(checkio_key_from_id(&prev, "tenant-a", 8, "id-1", 4, e,
	    sizeof(e)), 0, "%s", e);
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-ab", 9, "i", 1),
	    -1, "a longer scope");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-", 7, "i", 1),
	    -1, "a prefix of the scope");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-b", 8, "i", 1),
	    -1, "another scope");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, NULL, 0, "i", 1), -1,
	    "the default against tenant-a");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-a", 8, "", 0),
	    -1, "an empty id");
	memset(longid, 'q', sizeof(longid));
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-a", 8, longid,
	    REVKEY_ID_MAX), 0, "an id of the longest length");
	cr_assert_eq(checkio_key_from_id(&ref, "tenant-a", 8, longid,
	    REVKEY_ID_MAX, e, sizeof(e)), 0, "%s", e);
	same_key(&k, &ref, "an id of the longest length");
	cr_assert_eq(checkio_key_same_scope(&k, &prev, "tenant-a", 8, longid,
	    REVKEY_ID_MAX + 1), -1, "an id one byte too long");
	cr_assert_eq(checkio_key_from_id(&ref, "tenant-a", 8, longid,
	    REVKEY_ID_MAX + 1, e, sizeof(e)), -1, "refused the full way too");
}
