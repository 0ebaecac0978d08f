/* test_overlay.c - tests of the delta overlay: last change wins, removals, clones */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "overlay.h"

static EVP_PKEY *okey;

static void
setup(void)
{
	okey = sign_keygen();
	cr_assert_not_null(okey);
}

static void
teardown(void)
{
	EVP_PKEY_free(okey);
}

/* A parsed delta of n ids "<prefix><i>" with op. */
static struct delta *
mkdelta(uint64_t seq, enum delta_op op, const char *prefix, int n)
{
	struct delta_entry *e = calloc((size_t)n, sizeof(*e));
	struct delta_info in;
	unsigned char *buf = NULL;
	struct delta *d;
	char id[32], err[256];
	size_t len;
	int i;

	cr_assert_not_null(e);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s%d", prefix, i);
		e[i].op = op;
		cr_assert_eq(revkey_set(&e[i].rec.key, "default", id,
		    strlen(id)), 0);
		if (op == DELTA_ADD) {
			e[i].rec.revoked_at = 1000 + i;
			memcpy(e[i].rec.reason, "superseded", 11);
		}
	}
	memset(&in, 0, sizeof(in));
	in.kind = DELTA_KIND_DELTA;
	in.base_version = 1;
	in.seq = seq;
	in.issued_at = 10;
	in.expires_at = 20;
	cr_assert_eq(delta_encode(&in, e, (size_t)n, okey, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	d = delta_parse(buf, len, err, sizeof(err));
	cr_assert_not_null(d, "%s", err);
	free(buf);
	free(e);
	return d;
}

static struct revkey
key(const char *id)
{
	struct revkey k;

	cr_assert_eq(revkey_set(&k, "default", id, strlen(id)), 0);
	return k;
}

TestSuite(overlay, .init = setup, .fini = teardown);

Test(overlay, adds_then_removes_the_last_change_wins)
{
	struct overlay *ov = overlay_new();
	struct delta *d1 = mkdelta(1, DELTA_ADD, "t", 1000);
	struct delta *d2 = mkdelta(2, DELTA_REMOVE, "t", 10);
	struct table_rec r;
	struct revkey k;

	cr_assert_not_null(ov);
	cr_assert_eq(overlay_apply(ov, d1), 0);
	cr_assert_eq(overlay_count(ov), 1000);
	k = key("t5");
	cr_assert_eq(overlay_find(ov, &k, &r), DELTA_ADD);
	cr_assert_eq(r.revoked_at, 1005);
	cr_assert_str_eq(r.reason, "superseded");
	cr_assert_eq(memcmp(r.key.id, "t5", 2), 0);
	cr_assert_str_eq(r.key.scope, "default");
	cr_assert_eq(overlay_apply(ov, d2), 0);
	cr_assert_eq(overlay_count(ov), 1000, "a removal replaces, not adds");
	cr_assert_eq(overlay_find(ov, &k, NULL), DELTA_REMOVE);
	k = key("t500");
	cr_assert_eq(overlay_find(ov, &k, NULL), DELTA_ADD);
	k = key("never");
	cr_assert_eq(overlay_find(ov, &k, NULL), 0, "unknown keys go to the base");
	delta_free(d1);
	delta_free(d2);
	overlay_free(ov);
}

Test(overlay, a_clone_is_independent_and_iterates_every_key)
{
	struct overlay *ov = overlay_new(), *c;
	struct delta *d1 = mkdelta(1, DELTA_ADD, "a", 50);
	struct delta *d2 = mkdelta(2, DELTA_REMOVE, "a", 50);
	struct table_rec r;
	struct revkey k = key("a7");
	size_t it = 0, n = 0;

	cr_assert_eq(overlay_apply(ov, d1), 0);
	c = overlay_clone(ov);
	cr_assert_not_null(c);
	cr_assert_eq(overlay_apply(c, d2), 0);
	cr_assert_eq(overlay_find(ov, &k, NULL), DELTA_ADD,
	    "the original is untouched");
	cr_assert_eq(overlay_find(c, &k, NULL), DELTA_REMOVE);
	cr_assert(overlay_bytes(c) > 0);
	while (overlay_next(c, &it, &r) != 0)
		n++;
	cr_assert_eq(n, 50);
	delta_free(d1);
	delta_free(d2);
	overlay_free(ov);
	overlay_free(c);
}
