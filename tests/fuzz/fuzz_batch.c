/* fuzz_batch.c - the in-place batch reader against cJSON: whatever it accepts, the general path reads and keys the same items */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "batch.h"
#include "checkio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The daemon's default max_batch. */
#define FUZZ_MAX_BATCH	10000

/*
 * The fast path may only take a body whose meaning it knows exactly: for
 * every body batch_parse accepts, checkio_parse_body must accept it too and
 * cJSON must see the same items, with the same id and scope bytes and no
 * other member, and each item's key (checkio_key_from_id) must be the one
 * checkio_key_from_json derives from the cJSON item, or both must refuse
 * it with the same message. Anything else the fast path must refuse (the
 * general path answers). A mismatch aborts.
 */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data, *why = NULL;
	const cJSON *arr, *it, *id, *scope;
	struct batch_item *items;
	struct revkey k1, k2;
	enum jwt_verdict jv;
	char e1[300], e2[300];
	size_t n = 0, i = 0, cap;
	cJSON *root;
	int r1, r2;

	cap = batch_items_bound(size, FUZZ_MAX_BATCH);
	if ((items = calloc(cap > 0 ? cap : 1, sizeof(*items))) == NULL)
		return 0;
	if (batch_parse(body, size, items, cap, &n) == -1)
		goto out;
	if (n > cap)
		abort();
	if ((root = checkio_parse_body(body, size, &why)) == NULL)
		abort();
	arr = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(root) != 1 ||
	    (size_t)cJSON_GetArraySize(arr) != n)
		abort();
	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsObject(it) || items[i].id < body ||
		    items[i].id + items[i].id_len > body + size)
			abort();
		id = cJSON_GetObjectItemCaseSensitive(it, "id");
		scope = cJSON_GetObjectItemCaseSensitive(it, "scope");
		if (!cJSON_IsString(id) ||
		    strlen(id->valuestring) != items[i].id_len ||
		    memcmp(id->valuestring, items[i].id, items[i].id_len) != 0)
			abort();
		if ((scope == NULL) != (items[i].scope == NULL) ||
		    cJSON_GetArraySize(it) != (scope != NULL ? 2 : 1))
			abort();
		if (scope != NULL && (!cJSON_IsString(scope) ||
		    strlen(scope->valuestring) != items[i].scope_len ||
		    memcmp(scope->valuestring, items[i].scope,
		    items[i].scope_len) != 0))
			abort();
		e1[0] = e2[0] = '\0';
		r1 = checkio_key_from_json(it, NULL, &k1, &jv, e1, sizeof(e1));
		r2 = checkio_key_from_id(&k2, items[i].scope, items[i].scope_len,
		    items[i].id, items[i].id_len, e2, sizeof(e2));
		if (r1 != r2 || (r1 == 0 && revkey_cmp(&k1, &k2) != 0) ||
		    (r1 == -1 && strcmp(e1, e2) != 0))
			abort();
		i++;
	}
	cJSON_Delete(root);
out:
	free(items);
	return 0;
}
