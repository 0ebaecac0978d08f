/* test_table.c - the authoritative table: builder, encoding, validation, lookup */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "table.h"
#include "table_ref.h"
#include "util.h"

static void
mkkey(struct revkey *k, const char *scope, const char *id)
{
	cr_assert_eq(revkey_set(k, scope, id, strlen(id)), 0);
}

static void
add(struct table_builder *b, const char *scope, const char *id, int64_t at,
    const char *reason)
{
	struct revkey k;

	mkkey(&k, scope, id);
	cr_assert_eq(table_builder_add(b, &k, at, reason), 0);
}

static struct table *
build_table(struct table_builder *b, unsigned char **buf, size_t *len)
{
	char err[256];
	struct table *t;

	table_builder_sort_unique(b);
	cr_assert_eq(table_builder_encode(b, buf, len, err, sizeof(err)), 0,
	    "%s", err);
	t = table_parse(*buf, *len, false, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	return t;
}

Test(table, builder_sorts_merges_and_looks_up)
{
	struct table_builder b;
	struct table_rec r;
	struct revkey k;
	unsigned char *buf;
	size_t len;
	struct table *t;

	table_builder_init(&b);
	add(&b, "default", "zeta", 300, NULL);
	add(&b, "default", "alpha", 0, "");
	add(&b, "default", "alpha", 200, NULL);
	add(&b, "default", "alpha", 100, "keyCompromise");
	add(&b, "default", "alpha", 50, "superseded");
	add(&b, "issuer-b", "alpha", 5, NULL);
	add(&b, "default", "al", 1, NULL);
	cr_assert_eq(table_builder_count(&b), 7);
	t = build_table(&b, &buf, &len);
	cr_assert_eq(table_count(t), 4);
	cr_assert_eq(table_size(t), len);

	/* Order: scope first, then id bytes, a prefix before its extension. */
	cr_assert_eq(table_get(t, 0, &r), 0);
	cr_assert_str_eq((char *)r.key.id, "al");
	cr_assert_eq(table_get(t, 1, &r), 0);
	cr_assert_eq(r.key.id_len, 5);
	cr_assert_eq(memcmp(r.key.id, "alpha", 5), 0);
	cr_assert_str_eq(r.key.scope, "default");
	cr_assert_eq(r.revoked_at, 50, "earliest known time wins");
	cr_assert_str_eq(r.reason, "keyCompromise", "first reason wins");
	cr_assert_eq(table_get(t, 3, &r), 0);
	cr_assert_str_eq(r.key.scope, "issuer-b");
	cr_assert_eq(table_get(t, 4, &r), -1);

	mkkey(&k, "default", "zeta");
	cr_assert_eq(table_lookup(t, &k, &r), 1);
	cr_assert_eq(r.revoked_at, 300);
	cr_assert_str_eq(r.reason, "");
	mkkey(&k, "default", "zet");
	cr_assert_eq(table_lookup(t, &k, NULL), 0);
	mkkey(&k, "issuer-a", "alpha");
	cr_assert_eq(table_lookup(t, &k, NULL), 0);

	table_close(t);
	free(buf);
	table_builder_free(&b);
}

/*
 * A subject or session cutoff revokes every token issued before its time:
 * of two cutoffs for one subject the later revokes more and must win, in
 * the builder and in the reference alike (keeping the earlier one would
 * un-revoke the tokens issued between the two).
 */
Test(table, later_cutoff_wins)
{
	static const char *const scopes[] = { "sub:https://idp", "sid:idp" };
	struct table_builder b;
	struct table_rec r, recs[3];
	struct revkey k;
	unsigned char *buf;
	size_t len, i;
	struct table *t;

	for (i = 0; i < 2; i++) {
		table_builder_init(&b);
		add(&b, scopes[i], "alice", 2000, NULL);
		add(&b, scopes[i], "alice", 1000, "password reset");
		add(&b, scopes[i], "alice", 3000, NULL);
		t = build_table(&b, &buf, &len);
		mkkey(&k, scopes[i], "alice");
		cr_assert_eq(table_lookup(t, &k, &r), 1);
		cr_assert_eq(r.revoked_at, 3000, "%s: the latest cutoff wins",
		    scopes[i]);
		cr_assert_str_eq(r.reason, "password reset");
		table_close(t);
		free(buf);
		table_builder_free(&b);

		memset(recs, 0, sizeof(recs));
		mkkey(&recs[0].key, scopes[i], "alice");
		recs[0].revoked_at = 2000;
		recs[1] = recs[0];
		recs[1].revoked_at = 3000;
		recs[2] = recs[0];
		recs[2].revoked_at = 1000;
		cr_assert_eq(ref_sort_unique(recs, 3), 1);
		cr_assert_eq(recs[0].revoked_at, 3000, "reference: latest");
	}
	/* Any other scope keeps the earliest known time, as before. */
	cr_assert_eq(table_merge_revoked("default", 2000, 1000), 1000);
	cr_assert_eq(table_merge_revoked("default", 0, 1000), 1000);
	cr_assert_eq(table_merge_revoked("default", 1000, 0), 1000);
	cr_assert_eq(table_merge_revoked("subject", 2000, 1000), 1000);
	cr_assert_eq(table_merge_revoked("sub:x", 2000, 1000), 2000);
}

/*
 * Sorts b and the same records through the reference ref_sort_unique()
 * and requires identical encoded bytes.
 */
static void
same_as_reference(struct table_builder *b, struct table_rec *recs, size_t n)
{
	unsigned char *b1, *b2;
	size_t l1, l2, m;
	char err[256];

	m = ref_sort_unique(recs, n);
	cr_assert_eq(ref_encode(recs, m, &b1, &l1, err, sizeof(err)), 0,
	    "%s", err);
	table_builder_sort_unique(b);
	cr_assert_eq(table_builder_count(b), m);
	cr_assert_eq(table_builder_encode(b, &b2, &l2, err, sizeof(err)), 0);
	cr_assert_eq(l1, l2);
	cr_assert_eq(memcmp(b1, b2, l1), 0, "both paths give identical bytes");
	free(b1);
	free(b2);
}

Test(table, builder_matches_reference)
{
	struct table_builder b;
	struct table_rec *recs;
	size_t n = 2000, i;
	char id[32];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(7);
	for (i = 0; i < n; i++) {
		int v = rand() % 700;

		cr_assert(snprintf(id, sizeof(id), "%x", v) > 0);
		mkkey(&recs[i].key, (v % 3) ? "default" : "other", id);
		recs[i].revoked_at = rand() % 5;
		if (rand() % 4 == 0)
			cr_assert(snprintf(recs[i].reason, sizeof(recs[i].reason),
			    "r%d", rand() % 9) > 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
	}
	same_as_reference(&b, recs, n);
	free(recs);
	table_builder_free(&b);
}

/*
 * The builder's sort skips the id prefix a scope's ids all share before
 * taking 8 bytes to compare: ids with long shared prefixes, ids that are
 * prefixes of others and ids ending right after the shared part must
 * still sort exactly as the reference sort does.
 */
Test(table, builder_sort_with_shared_id_prefixes)
{
	static const char *scopes[] = { "tokens", "other", "short" };
	static const char *pfx[] = { "revoked-token-id-", "x", "" };
	struct table_builder b;
	struct table_rec *recs;
	size_t n = 3000, i;
	char id[96];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(11);
	for (i = 0; i < n; i++) {
		int sc = rand() % 3, v = rand() % 900, w = rand() % 4;

		/* Suffixes of 0..11 characters after the shared prefix. */
		if (w == 0)
			cr_assert(snprintf(id, sizeof(id), "%s", pfx[sc]) >= 0);
		else if (w == 1)
			cr_assert(snprintf(id, sizeof(id), "%s%x", pfx[sc], v) > 0);
		else
			cr_assert(snprintf(id, sizeof(id), "%s%03x%0*d", pfx[sc],
			    v % 16, w * 3, v) > 0);
		if (id[0] == '\0')
			cr_assert(snprintf(id, sizeof(id), "%x", v) > 0);
		mkkey(&recs[i].key, scopes[sc], id);
		recs[i].revoked_at = rand() % 5;
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
	}
	same_as_reference(&b, recs, n);
	free(recs);
	table_builder_free(&b);
}

Test(table, digest_and_write_match_encode)
{
	struct table_builder b;
	unsigned char *buf, sha[32], want[32], *back;
	uint64_t dlen;
	size_t len, blen;
	char err[256], path[] = "/tmp/test_table_XXXXXX";
	struct table *t;
	int fd, i;

	table_builder_init(&b);
	for (i = 0; i < 5000; i++) {
		char id[16];

		cr_assert(snprintf(id, sizeof(id), "id%d", i) > 0);
		add(&b, "default", id, i, NULL);
	}
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_encode(&b, &buf, &len, err, sizeof(err)), 0);
	cr_assert_eq(table_builder_digest(&b, sha, &dlen, err, sizeof(err)), 0);
	cr_assert_eq(dlen, len);
	cr_assert_eq(util_sha256(want, buf, len), 0);
	cr_assert_eq(memcmp(sha, want, 32), 0);

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	/* Written and hashed in one pass: the same digest and length. */
	memset(sha, 0, sizeof(sha));
	dlen = 0;
	cr_assert_eq(table_builder_write(&b, fd, sha, &dlen, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(dlen, len);
	cr_assert_eq(memcmp(sha, want, 32), 0);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(util_read_file(path, SIZE_MAX / 2, &back, &blen, err,
	    sizeof(err)), 0);
	cr_assert_eq(blen, len);
	cr_assert_eq(memcmp(back, buf, len), 0);
	t = table_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(table_check_binding(t, want, len, err, sizeof(err)), 0);
	cr_assert_eq(table_check_binding(t, want, len + 1, err, sizeof(err)), -1);
	want[0] ^= 1;
	cr_assert_eq(table_check_binding(t, want, len, err, sizeof(err)), -1);
	cr_assert_eq(table_count(t), 5000);
	table_close(t);
	unlink(path);
	free(back);
	free(buf);
	table_builder_free(&b);
}

Test(table, truncate_rolls_back)
{
	struct table_builder b;
	size_t len;
	const unsigned char *key;

	table_builder_init(&b);
	add(&b, "default", "one", 0, NULL);
	add(&b, "default", "two", 0, NULL);
	table_builder_truncate(&b, 1);
	add(&b, "default", "three", 0, NULL);
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_count(&b), 2);
	key = table_builder_key(&b, 1, &len);
	cr_assert_eq(len, strlen("default") + 1 + 5);
	cr_assert_eq(memcmp(key, "default\0three", len), 0);
	key = table_builder_key(&b, 0, &len);
	cr_assert_eq(memcmp(key, "default\0one", len), 0);
	table_builder_free(&b);
}

Test(table, scope_runs)
{
	struct table_builder b;
	size_t sl;
	const char *s;

	table_builder_init(&b);
	add(&b, "b", "1", 0, NULL);
	add(&b, "a", "1", 0, NULL);
	add(&b, "b", "2", 0, NULL);
	add(&b, "a", "2", 0, NULL);
	add(&b, "a", "3", 0, NULL);
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_scope_end(&b, 0), 3);
	cr_assert_eq(table_builder_scope_end(&b, 3), 5);
	s = table_builder_scope(&b, 3, &sl);
	cr_assert_eq(sl, 1);
	cr_assert_eq(s[0], 'b');
	table_builder_free(&b);
}

/*
 * The radix sort with every kind of group it can leave: ids whose 8
 * prefix bytes (after the shared part) are equal in groups larger than
 * the insertion-sort cutoff but whose keys differ afterwards, keys that
 * repeat many times with reasons and times to merge, and scopes that
 * differ only in later bytes. The bytes must be the reference's.
 */
Test(table, radix_sort_groups_match_reference)
{
	static const char *scopes[] = { "cutoff:sub", "default", "defaulu" };
	struct table_builder b;
	struct table_rec *recs;
	size_t n = 40000, i;
	char id[64];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(23);
	for (i = 0; i < n; i++) {
		int v = rand(), kind = rand() % 4;

		if (kind == 0)		/* 8 equal bytes, then 100 tails */
			cr_assert(snprintf(id, sizeof(id), "tok-%08d%02d",
			    v % 3, v % 100) > 0);
		else if (kind == 1)	/* a few keys, many times each */
			cr_assert(snprintf(id, sizeof(id), "tok-%d", v % 5) > 0);
		else
			cr_assert(snprintf(id, sizeof(id), "tok-%x", v) > 0);
		mkkey(&recs[i].key, scopes[(size_t)v % 3], id);
		recs[i].revoked_at = rand() % 7;
		if (rand() % 5 == 0)
			cr_assert(snprintf(recs[i].reason, sizeof(recs[i].reason),
			    "r%d", rand() % 9) > 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
	}
	same_as_reference(&b, recs, n);
	free(recs);
	table_builder_free(&b);
}

/*
 * Ids that share far more than 8 bytes past the scope's common prefix,
 * in groups much larger than the insertion-sort cutoff: the sort loads
 * further 8-byte pieces of the keys, level after level, and must still
 * order ids that end inside a piece, ids that are prefixes of others
 * and many copies of one long key exactly as the reference does.
 */
Test(table, radix_sort_long_shared_ids_match_reference)
{
	static const char *mid[] = { "-shared-middle-part-of-it-",
	    "-shared-middle-part-of-iu-", "" };
	struct table_builder b;
	struct table_rec *recs;
	size_t n = 20000, i;
	char id[128];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(31);
	for (i = 0; i < n; i++) {
		int v = rand(), kind = rand() % 4;

		if (kind == 0)		/* one long key, many times */
			cr_assert(snprintf(id, sizeof(id), "k%s%s", mid[0],
			    mid[1]) > 0);
		else if (kind == 1)	/* tails of 0 to 8 characters */
			cr_assert(snprintf(id, sizeof(id), "k%s%.*x", mid[v % 3],
			    v % 9, (unsigned)v) > 0);
		else
			cr_assert(snprintf(id, sizeof(id), "k%s%s%d", mid[v % 2],
			    mid[(v / 2) % 2], v % 5000) > 0);
		mkkey(&recs[i].key, v % 5 ? "tokens" : "cutoff:sub", id);
		recs[i].revoked_at = rand() % 7;
		if (rand() % 4 == 0)
			cr_assert(snprintf(recs[i].reason, sizeof(recs[i].reason),
			    "r%d", rand() % 9) > 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
	}
	same_as_reference(&b, recs, n);
	free(recs);
	table_builder_free(&b);
}

/*
 * A sorted builder moves its records into key order; adding after that
 * (and sorting again) must give what one sort of all the records gives,
 * and every accessor must read the moved records.
 */
Test(table, add_after_sort_matches_reference)
{
	struct table_builder b;
	struct table_rec *recs, got;
	size_t n = 6000, half = 2500, i, m, len;
	const unsigned char *key;
	char id[32];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(29);
	for (i = 0; i < n; i++) {
		int v = rand() % 4000;

		cr_assert(snprintf(id, sizeof(id), "id-%d", v) > 0);
		mkkey(&recs[i].key, v % 2 ? "a" : "b", id);
		recs[i].revoked_at = rand() % 5;
		if (rand() % 3 == 0)
			cr_assert(snprintf(recs[i].reason, sizeof(recs[i].reason),
			    "r%d", rand() % 9) > 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
		if (i + 1 != half)
			continue;
		/* Sorted halfway: the accessors over the moved records. */
		table_builder_sort_unique(&b);
		m = table_builder_count(&b);
		cr_assert(m > 0);
		cr_assert_eq(table_builder_scope_end(&b, 0) +
		    (m - table_builder_scope_end(&b, 0)), m);
		cr_assert_eq(table_builder_scope_end(&b,
		    table_builder_scope_end(&b, 0)), m);
		cr_assert_eq(table_builder_get(&b, m - 1, &got), 0);
		key = table_builder_key(&b, m - 1, &len);
		cr_assert_eq(len, got.key.scope_len + 1 + got.key.id_len);
		cr_assert_eq(memcmp(key + got.key.scope_len + 1, got.key.id,
		    got.key.id_len), 0);
		cr_assert_eq(table_builder_get(&b, m, &got), -1);
	}
	same_as_reference(&b, recs, n);
	free(recs);
	table_builder_free(&b);
}

Test(table, rejects_bad_records)
{
	struct table_builder b;
	struct revkey k;
	char reason[TABLE_REASON_MAX + 1];

	table_builder_init(&b);
	mkkey(&k, "default", "x");
	memset(reason, 'r', sizeof(reason) - 1);
	reason[sizeof(reason) - 1] = '\0';
	cr_assert_eq(table_builder_add(&b, &k, 0, reason), -1);
	cr_assert_eq(table_builder_add(&b, &k, 0, "bad\nreason"), -1);
	k.id_len = 0;
	cr_assert_eq(table_builder_add(&b, &k, 0, NULL), -1);
	cr_assert_eq(table_builder_count(&b), 0);
	table_builder_free(&b);
}

Test(table, empty_table_round_trips)
{
	struct table_builder b;
	unsigned char *buf;
	size_t len;
	struct table *t;
	struct revkey k;

	table_builder_init(&b);
	t = build_table(&b, &buf, &len);
	cr_assert_eq(len, TABLE_HDR_LEN);
	cr_assert_eq(table_count(t), 0);
	mkkey(&k, "default", "x");
	cr_assert_eq(table_lookup(t, &k, NULL), 0);
	table_close(t);
	free(buf);
	table_builder_free(&b);
}

/* Every truncation and every single-byte change is either rejected or
 * still a valid table (for bytes that carry free data such as times). */
Test(table, hostile_bytes_never_crash)
{
	struct table_builder b;
	unsigned char *buf, *copy;
	size_t len, i;
	char err[256];
	struct table *t, *t2;

	table_builder_init(&b);
	add(&b, "default", "alpha", 1, "keyCompromise");
	add(&b, "default", "beta", 2, NULL);
	add(&b, "x509:" "0000000000000000000000000000000000000000000000000000000000000000",
	    "01", 3, "cessationOfOperation");
	t = build_table(&b, &buf, &len);
	table_close(t);

	for (i = 0; i < len; i++) {
		t2 = table_parse(buf, i, false, err, sizeof(err));
		cr_assert_null(t2, "truncated to %zu accepted", i);
		cr_assert(strstr(err, "table:") != NULL);
	}
	copy = malloc(len + 1);
	cr_assert_not_null(copy);
	memcpy(copy, buf, len);
	copy[len] = 0;
	t2 = table_parse(copy, len + 1, false, err, sizeof(err));
	cr_assert_null(t2, "trailing byte accepted");

	for (i = 0; i < len; i++) {
		unsigned v;

		for (v = 1; v < 256; v <<= 1) {
			memcpy(copy, buf, len);
			copy[i] ^= (unsigned char)v;
			t2 = table_parse(copy, len, false, err, sizeof(err));
			if (t2 != NULL) {
				struct table_rec r;
				uint64_t j;

				for (j = 0; j < table_count(t2); j++)
					cr_assert_eq(table_get(t2, j, &r), 0);
				table_close(t2);
			}
		}
	}
	free(copy);
	free(buf);
	table_builder_free(&b);
}

Test(table, rejects_unsorted_index)
{
	struct table_builder b;
	struct table_rec recs[2];
	unsigned char *buf;
	size_t len;
	char err[256];

	memset(recs, 0, sizeof(recs));
	mkkey(&recs[0].key, "default", "b");
	mkkey(&recs[1].key, "default", "a");
	cr_assert_eq(ref_encode(recs, 2, &buf, &len, err, sizeof(err)), -1);
	cr_assert(strstr(err, "ascending") != NULL, "%s", err);

	/* The builder writes nothing it has not sorted. */
	table_builder_init(&b);
	cr_assert_eq(table_builder_add_rec(&b, &recs[0]), 0);
	cr_assert_eq(table_builder_add_rec(&b, &recs[1]), 0);
	cr_assert_eq(table_builder_encode(&b, &buf, &len, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not sorted") != NULL, "%s", err);
	table_builder_free(&b);
}

Test(table, open_reports_path)
{
	char err[256];

	cr_assert_null(table_open("/nonexistent/t.rct", err, sizeof(err)));
	cr_assert(strstr(err, "/nonexistent/t.rct") != NULL);
}

/* Many interleaved scopes, and more than the builder can rank: the order
 * is still exactly that of the reference. */
static void
many_scopes_named(bool long_names, size_t nscopes, size_t n)
{
	struct table_builder b;
	struct table_rec *recs;
	unsigned char *b1, *b2;
	size_t l1, l2, i, m;
	char err[256], scope[32], id[32];

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	for (i = 0; i < n; i++) {
		cr_assert(snprintf(scope, sizeof(scope), "%s%zu", long_names ?
		    "a-long-scope-name-" : "s", (i * 7919) % nscopes) > 0);
		cr_assert(snprintf(id, sizeof(id), "%zu", (i * 31) % 1000) > 0);
		mkkey(&recs[i].key, scope, id);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
	}
	m = ref_sort_unique(recs, n);
	cr_assert_eq(ref_encode(recs, m, &b1, &l1, err, sizeof(err)), 0,
	    "%s", err);
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_encode(&b, &b2, &l2, err, sizeof(err)), 0);
	cr_assert_eq(l1, l2);
	cr_assert_eq(memcmp(b1, b2, l1), 0);
	free(b1);
	free(b2);
	free(recs);
	table_builder_free(&b);
}

static void
many_scopes(size_t nscopes, size_t n)
{
	many_scopes_named(false, nscopes, n);
}

Test(table, many_interleaved_scopes) { many_scopes(1000, 20000); }
Test(table, more_scopes_than_ranks) { many_scopes(70000, 80000); }
/* Unranked, the sort prefix is the key's first 8 bytes: here all alike. */
Test(table, more_scopes_than_ranks_long_names)
{
	many_scopes_named(true, 70000, 80000);
}

/*
 * The table in service is a private copy: a same-size edit of a revoked
 * id, a record length set past the record (which overflowed a stack
 * buffer when the table was mapped), and a truncation of the file after
 * table_open change no answer and fault nothing.
 */
Test(table, file_edits_after_open_change_nothing)
{
	struct table_builder b;
	struct table_rec r;
	struct revkey k;
	struct table *t;
	char path[] = "/tmp/revcheck-test-table-XXXXXX", err[256];
	unsigned char *buf, ff = 0xff, *hit;
	size_t len;
	uint64_t i;
	int fd;

	table_builder_init(&b);
	add(&b, "default", "tok-revoked-1", 100, "keyCompromise");
	add(&b, "default", "tok-revoked-2", 200, NULL);
	add(&b, "default", "tok-revoked-3", 300, NULL);
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_encode(&b, &buf, &len, err, sizeof(err)), 0);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, buf, len), 0);
	t = table_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert(table_intact(t));

	/* 1. The same size, another id: "tok-revoked-2" becomes "tok-revoked-X". */
	hit = memmem(buf, len, "tok-revoked-2", 13);
	cr_assert_not_null(hit);
	cr_assert_eq(pwrite(fd, "X", 1, (off_t)(hit - buf) + 12), 1);
	mkkey(&k, "default", "tok-revoked-2");
	cr_assert_eq(table_lookup(t, &k, &r), 1, "the edit reached the table");
	cr_assert_eq(r.revoked_at, 200);
	/* 2. Every record's id length set to 0xffff. */
	for (i = 0; i < 3; i++) {
		uint64_t off = util_get_le64(buf + TABLE_HDR_LEN + 8 * i);

		cr_assert_eq(pwrite(fd, &ff, 1, (off_t)(TABLE_HDR_LEN + 3 * 8 +
		    off + 2)), 1);
		cr_assert_eq(pwrite(fd, &ff, 1, (off_t)(TABLE_HDR_LEN + 3 * 8 +
		    off + 3)), 1);
	}
	for (i = 0; i < 3; i++)
		cr_assert_eq(table_get(t, i, &r), 0);
	cr_assert_eq(r.key.id_len, 13);
	mkkey(&k, "default", "tok-revoked-1");
	cr_assert_eq(table_lookup(t, &k, &r), 1);
	cr_assert_str_eq(r.reason, "keyCompromise");
	/* 3. Truncated to nothing: a mapping would fault (SIGBUS). */
	cr_assert_eq(ftruncate(fd, 0), 0);
	mkkey(&k, "default", "tok-revoked-3");
	cr_assert_eq(table_lookup(t, &k, NULL), 1);
	mkkey(&k, "default", "tok-clean");
	cr_assert_eq(table_lookup(t, &k, NULL), 0);
	cr_assert(table_intact(t));
	/* Opened now, the empty file is refused. */
	cr_assert_null(table_open(path, err, sizeof(err)));
	table_close(t);
	close(fd);
	unlink(path);
	free(buf);
	table_builder_free(&b);
}

/*
 * Sets of 2^16 records and more are sorted and packed by two threads
 * (tb_radix2, tb_pack): the first splitting digit is distributed once and
 * its buckets shared out, and the records are moved from both ends of the
 * new arena, leaving a gap the writers step over. The bytes must be the
 * reference's for an even split, for a skewed one (nearly every key in
 * one bucket of a late digit), for keys alike in all ten radix digits
 * (no split: the serial sort), and after adds to a packed builder; the
 * digest and the file written must be those bytes too.
 */
static void
two_core_case(size_t n, unsigned seed, int kind)
{
	struct table_builder b;
	struct table_rec *recs, got;
	unsigned char *enc, sha[32], want[32], *back;
	char id[64], err[256], path[] = "/tmp/test_table_XXXXXX";
	size_t i, m, elen, blen, half = n / 2 + 1000;
	uint64_t dlen;
	int fd;

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&b);
	srand(seed);
	for (i = 0; i < n; i++) {
		unsigned v = (unsigned)rand();

		if (kind == 0)		/* spread: tok-<hex> */
			cr_assert(snprintf(id, sizeof(id), "tok-%x", v) > 0);
		else if (kind == 1)	/* skewed: 1 in 50 elsewhere */
			cr_assert(snprintf(id, sizeof(id), "%s%05u", v % 50 ?
			    "aaaa" : "ab", v % 90000) > 0);
		else			/* alike for 8 bytes past "id" */
			cr_assert(snprintf(id, sizeof(id),
			    "id-000000000-%u", v % 70000) > 0);
		mkkey(&recs[i].key, v % 7 ? "default" : "other", id);
		recs[i].revoked_at = rand() % 5;
		if (rand() % 4 == 0)
			cr_assert(snprintf(recs[i].reason,
			    sizeof(recs[i].reason), "r%d", rand() % 9) > 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
		if (kind == 0 && i + 1 == half) {
			/* Packed halfway, with a gap: then more adds. */
			table_builder_sort_unique(&b);
			m = table_builder_count(&b);
			cr_assert_eq(table_builder_get(&b, m - 1, &got), 0);
			cr_assert_eq(table_builder_get(&b, 0, &got), 0);
		}
	}
	same_as_reference(&b, recs, n);
	cr_assert_eq(table_builder_encode(&b, &enc, &elen, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(util_sha256(want, enc, elen), 0);
	cr_assert_eq(table_builder_digest(&b, sha, &dlen, err, sizeof(err)), 0);
	cr_assert_eq(dlen, elen);
	cr_assert_eq(memcmp(sha, want, 32), 0);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(table_builder_write(&b, fd, sha, &dlen, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(close(fd), 0);
	cr_assert_eq(memcmp(sha, want, 32), 0);
	cr_assert_eq(util_read_file(path, SIZE_MAX / 2, &back, &blen, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(blen, elen);
	cr_assert_eq(memcmp(back, enc, elen), 0);
	unlink(path);
	free(back);
	free(enc);
	free(recs);
	table_builder_free(&b);
}

Test(table, two_core_sort_spread_and_adds_after_pack) { two_core_case(300000, 41, 0); }
Test(table, two_core_sort_skewed_split) { two_core_case(150000, 43, 1); }
Test(table, two_core_sort_no_split) { two_core_case(140000, 47, 2); }

/*
 * A hang guard, not a speed target: the worst cases below took 17-49 s
 * in a plain build and minutes under ASan while quadratic, and take a few
 * seconds (under 8 s with ASan) since; the limit is far above that, so
 * only the quadratic form trips it (surely in CI's ASan pass).
 */
#define LINEAR_LIMIT	60

/*
 * Scopes named so that unseeded XXH3-64 sends them all to one cluster of
 * the builder's scope table (the low 17 bits under 1024: one name in 128,
 * found by trying) must still rank in linear time. With the table's hash
 * unseeded, sorting 60,000 of them took minutes; seeded, well under one.
 */
Test(table, colliding_scope_names_stay_linear, .timeout = LINEAR_LIMIT)
{
	struct table_builder b;
	char name[32];
	size_t n = 0, want = 60000;
	unsigned long k;

	table_builder_init(&b);
	for (k = 0; n < want; k++) {
		snprintf(name, sizeof(name), "s%lx", k);
		if ((XXH3_64bits(name, strlen(name)) & 0x1ffff) >= 1024)
			continue;
		add(&b, name, "a", 0, NULL);
		n++;
	}
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_count(&b), want);
	table_builder_free(&b);
}

/*
 * A table of n records "<prefix>-<i>" (i zero-padded to 8 digits, so two
 * prefixes of one length give files of one size) written to a new file;
 * path gets its name.
 */
static void
write_named(char *path, const char *prefix, unsigned n, int64_t at)
{
	struct table_builder b;
	char id[64], err[256];
	unsigned char *buf;
	size_t len;
	unsigned i;
	int fd;

	table_builder_init(&b);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%08u", prefix, i);
		add(&b, "default", id, at, NULL);
	}
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_encode(&b, &buf, &len, err, sizeof(err)), 0,
	    "%s", err);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, buf, len), 0);
	close(fd);
	free(buf);
	table_builder_free(&b);
}

/* Every id of prefix answers revoked at at, the others' not at all. */
static void
answers(const struct table *t, const char *prefix, const char *other,
    unsigned n, int64_t at)
{
	struct table_rec r;
	struct revkey k;
	char id[64];
	unsigned i;

	cr_assert_eq(table_count(t), n);
	for (i = 0; i < n; i += n / 97 + 1) {
		snprintf(id, sizeof(id), "%s-%08u", prefix, i);
		mkkey(&k, "default", id);
		cr_assert_eq(table_lookup(t, &k, &r), 1, "%s", id);
		cr_assert_eq(r.revoked_at, at);
		snprintf(id, sizeof(id), "%s-%08u", other, i);
		mkkey(&k, "default", id);
		cr_assert_eq(table_lookup(t, &k, NULL), 0, "%s", id);
	}
	cr_assert(table_intact(t));
}

/*
 * With the spare buffer on (revcheckd), a table released is the memory
 * the next one is read into: the next answers are its own, never those
 * of the table before, whether it has the same size (reused as is), a
 * size near it (resized) or under half of it (fresh memory); a table
 * still held is never handed out; a refused file leaves nothing behind.
 * 30000 records are over UTIL_COPY_DIRECT_MIN: read with O_DIRECT.
 */
Test(table, reload_into_the_released_copy)
{
	char pa[] = "/tmp/revcheck-test-tA-XXXXXX";
	char pb[] = "/tmp/revcheck-test-tB-XXXXXX";
	char pc[] = "/tmp/revcheck-test-tC-XXXXXX";
	char pd[] = "/tmp/revcheck-test-tD-XXXXXX";
	char pe[] = "/tmp/revcheck-test-tE-XXXXXX";
	char pbad[] = "/tmp/revcheck-test-tX-XXXXXX";
	char err[256];
	struct table *a, *b, *c, *d, *e;
	unsigned char *buf;
	size_t len;
	int fd;

	util_copy_keep(true);
	write_named(pa, "tok-aa", 30000, 100);
	write_named(pb, "tok-bb", 30000, 200);
	write_named(pc, "tok-cc", 30000, 300);
	write_named(pd, "tok-dd", 33000, 400);
	write_named(pe, "tok-ee", 3000, 500);
	cr_assert_eq(util_read_file(pb, SIZE_MAX / 2, &buf, &len, err,
	    sizeof(err)), 0, "%s", err);
	buf[len - 1] ^= 1;	/* the last record out of order: refused */
	fd = mkstemp(pbad);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, buf, len), 0);
	close(fd);
	free(buf);

	a = table_open(pa, err, sizeof(err));
	cr_assert_not_null(a, "%s", err);
	/* A held: B cannot get its memory. */
	b = table_open(pb, err, sizeof(err));
	cr_assert_not_null(b, "%s", err);
	answers(a, "tok-aa", "tok-bb", 30000, 100);
	answers(b, "tok-bb", "tok-aa", 30000, 200);
	/* A released: C, of the same size, is read into A's memory. */
	table_close(a);
	c = table_open(pc, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	answers(c, "tok-cc", "tok-aa", 30000, 300);
	answers(b, "tok-bb", "tok-cc", 30000, 200);
	/* B released, a refused file read into its memory, then D (larger). */
	table_close(b);
	cr_assert_null(table_open(pbad, err, sizeof(err)));
	d = table_open(pd, err, sizeof(err));
	cr_assert_not_null(d, "%s", err);
	answers(d, "tok-dd", "tok-bb", 33000, 400);
	answers(c, "tok-cc", "tok-dd", 30000, 300);
	/* Under half the spare's size: fresh memory, the spare unmapped. */
	table_close(c);
	e = table_open(pe, err, sizeof(err));
	cr_assert_not_null(e, "%s", err);
	answers(e, "tok-ee", "tok-cc", 3000, 500);
	answers(d, "tok-dd", "tok-ee", 33000, 400);
	table_close(d);
	table_close(e);
	util_copy_keep(false);
	unlink(pa);
	unlink(pb);
	unlink(pc);
	unlink(pd);
	unlink(pe);
	unlink(pbad);
}

/*
 * The fuzz seeds that are meant to parse do, and edited-id-len.rct fails
 * where it was edited: the table seeds stayed at format 1 when the
 * format became 2, so fuzz_table refused every one at offset 8 and its
 * mutants never reached the records (86 edges in two campaigns).
 */
Test(table, fuzz_seeds_are_in_the_current_format)
{
	static const char *const valid[] = { "vector.rct", "gen-empty.rct",
	    "gen-one.rct", "gen-mixed.rct", "gen-max.rct", "gen-100.rct" };
	const char *src = getenv("REVCHECK_SRC");
	char path[4096], err[512];
	struct table *t;
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/table/%s",
		    src != NULL ? src : ".", valid[i]);
		t = table_open(path, err, sizeof(err));
		cr_assert_not_null(t, "%s", err);
		table_close(t);
	}
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/table/"
	    "edited-id-len.rct", src != NULL ? src : ".");
	cr_assert_null(table_open(path, err, sizeof(err)));
	cr_assert_not_null(strstr(err, "record 0 has bad lengths"), "%s", err);
}

/*
 * table_builder_reserve: room made and prepared ahead by threads (here
 * 80 MB of arena, past the two steps that start them) changes nothing the
 * builder holds: the records are the reference's, the encoding that of a
 * builder without it, also when the adds run past the reservation (the
 * builder grows as before) and when a second reservation follows.
 */
Test(table, reserve_changes_no_byte)
{
	struct table_builder a, b;
	struct table_rec *recs;
	unsigned char *ea, *eb;
	char id[64], err[256];
	size_t i, n = 120000, la, lb;

	recs = calloc(n, sizeof(*recs));
	cr_assert_not_null(recs);
	table_builder_init(&a);
	table_builder_init(&b);
	cr_assert_eq(table_builder_reserve(&a, n / 2, (size_t)80 << 20), 0);
	for (i = 0; i < n; i++) {
		cr_assert(snprintf(id, sizeof(id), "tok-%zx-%u", i * 7919,
		    (unsigned)(i % 13)) > 0);
		mkkey(&recs[i].key, i % 5 ? "default" : "other", id);
		recs[i].revoked_at = (int64_t)(i % 3);
		cr_assert_eq(table_builder_add_rec(&a, &recs[i]), 0);
		cr_assert_eq(table_builder_add_rec(&b, &recs[i]), 0);
		if (i == n / 2)		/* past the first reservation */
			cr_assert_eq(table_builder_reserve(&a, n, (size_t)70 <<
			    20), 0);
	}
	same_as_reference(&a, recs, n);
	table_builder_sort_unique(&b);
	cr_assert_eq(table_builder_encode(&a, &ea, &la, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(table_builder_encode(&b, &eb, &lb, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(la, lb);
	cr_assert_eq(memcmp(ea, eb, la), 0);
	/* Refused once packed, and for more records than a table holds. */
	cr_assert_eq(table_builder_reserve(&b, 1, 100), -1);
	free(ea);
	free(eb);
	free(recs);
	table_builder_free(&a);
	table_builder_free(&b);
}

/*
 * On a thread that gives way (revcheckd's loader), validating a table
 * yields every stretch of records as well as every stretch hashed, and
 * the table parsed is the same.
 */
struct gw_parse {
	const unsigned char *buf;
	size_t		 len;
	uint64_t	 yields;
	uint64_t	 count;
};

static void *
gw_parse_thread(void *arg)
{
	struct gw_parse *p = arg;
	char err[256];
	struct table *t;
	uint64_t before;

	util_give_way(4096);
	before = util_give_way_count();
	t = table_parse(p->buf, p->len, false, err, sizeof(err));
	p->yields = util_give_way_count() - before;
	if (t != NULL) {
		p->count = table_count(t);
		table_close(t);
	}
	return NULL;
}

Test(table, validation_gives_way_on_a_thread_that_asks)
{
	struct table_builder b;
	struct gw_parse p;
	unsigned char *buf;
	pthread_t th;
	char id[32];
	size_t len;
	struct table *t;
	int i;

	table_builder_init(&b);
	for (i = 0; i < 3000; i++) {
		snprintf(id, sizeof(id), "tok-%06d", i);
		add(&b, "default", id, i, NULL);
	}
	t = build_table(&b, &buf, &len);
	memset(&p, 0, sizeof(p));
	p.buf = buf;
	p.len = len;
	cr_assert_eq(pthread_create(&th, NULL, gw_parse_thread, &p), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(p.count, 3000);
	/* The hash alone gives len / 4096; the records give about as many. */
	cr_assert_geq(p.yields, 2 * (len / 4096) - 2, "%llu yields, %zu bytes",
	    (unsigned long long)p.yields, len);
	table_close(t);
	table_builder_free(&b);
	free(buf);
}
