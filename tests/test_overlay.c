/* test_overlay.c - tests of the delta overlay: last change wins, removals, clones */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

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

/* A parsed delta of the n ids with op. */
static struct delta *
mkdelta_ids(uint64_t seq, enum delta_op op, char (*ids)[32], int n)
{
	struct delta_entry *e = calloc((size_t)n, sizeof(*e));
	struct delta_info in;
	unsigned char *buf = NULL;
	struct delta *d;
	char err[256];
	size_t len;
	int i;

	cr_assert_not_null(e);
	for (i = 0; i < n; i++) {
		e[i].op = op;
		cr_assert_eq(revkey_set(&e[i].rec.key, "default", ids[i],
		    strlen(ids[i])), 0);
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

/* A parsed delta of n ids "<prefix><i>" with op. */
static struct delta *
mkdelta(uint64_t seq, enum delta_op op, const char *prefix, int n)
{
	char (*ids)[32] = calloc((size_t)n, sizeof(*ids));
	struct delta *d;
	int i;

	cr_assert_not_null(ids);
	for (i = 0; i < n; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s%d", prefix, i);
	d = mkdelta_ids(seq, op, ids, n);
	free(ids);
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

/*
 * Keys chosen so that an unseeded XXH3 of their encoding ("default", 0,
 * id) agrees in its low 12 bits: with a public hash all of them would
 * want one slot of the 4096 the overlay grows to, and lie in one probe
 * run that every insert and every lookup near it walks. Seeded per
 * overlay, they scatter like any keys (a run of 64 at a load of 0.37 is
 * beyond any chance).
 */
Test(overlay, keys_aimed_at_one_slot_do_not_make_one_run)
{
	enum { N = 1500 };
	char (*ids)[32] = calloc(N, sizeof(*ids));
	unsigned char enc[64];
	struct overlay *ov = overlay_new(), *c;
	struct delta *d;
	struct revkey k;
	uint64_t j = 0;
	size_t len;
	int i;

	cr_assert_not_null(ids);
	cr_assert_not_null(ov);
	for (i = 0; i < N; i++) {
		do {
			len = (size_t)snprintf((char *)enc, sizeof(enc),
			    "default%cflood-%" PRIu64, 0, j++);
		} while ((XXH3_64bits(enc, len) & 0xfff) != 0);
		memcpy(ids[i], enc + 8, len - 8);
	}
	d = mkdelta_ids(1, DELTA_ADD, ids, N);
	cr_assert_eq(overlay_apply(ov, d), 0);
	cr_assert_eq(overlay_count(ov), N);
	cr_assert_lt(overlay_longest_run(ov), 64,
	    "%d keys aimed at one slot lie in a run of %zu slots", N,
	    overlay_longest_run(ov));
	c = overlay_clone(ov);
	cr_assert_not_null(c);
	cr_assert_eq(overlay_longest_run(c), overlay_longest_run(ov));
	for (i = 0; i < N; i++) {
		k = key(ids[i]);
		cr_assert_eq(overlay_find(ov, &k, NULL), DELTA_ADD, "%s", ids[i]);
		cr_assert_eq(overlay_find(c, &k, NULL), DELTA_ADD, "%s", ids[i]);
	}
	delta_free(d);
	overlay_free(ov);
	overlay_free(c);
	free(ids);
}
