/* fuzz_table.c - the authoritative table parser and lookup on hostile bytes */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Records checked one by one; probes and the re-encoding need them all. */
#define CHECK_MAX	256
#define PROBE_MAX	64

static struct table_rec recs[CHECK_MAX];

static bool
same_rec(const struct table_rec *a, const struct table_rec *b)
{
	return revkey_cmp(&a->key, &b->key) == 0 &&
	    a->revoked_at == b->revoked_at &&
	    strcmp(a->reason, b->reason) == 0;
}

/* Whether k is one of the n records, by looking at every one. */
static int
linear(uint64_t n, const struct revkey *k)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (revkey_cmp(&recs[i].key, k) == 0)
			return 1;
	return 0;
}

/*
 * A key near r (one byte more, one less, the last byte changed, another
 * scope), so that lookups of absent keys land between records: the
 * binary search must answer what a look at every record answers.
 */
static bool
probe(const struct table_rec *r, int how, struct revkey *k)
{
	*k = r->key;
	switch (how) {
	case 0:
		if (k->id_len >= REVKEY_ID_MAX)
			return false;
		k->id[k->id_len++] = 0;
		return true;
	case 1:
		if (k->id_len < 2)
			return false;
		k->id_len--;
		return true;
	case 2:
		k->id[k->id_len - 1]++;
		return true;
	case 3:
		k->id[k->id_len - 1]--;
		return true;
	case 4:
		return revkey_set(k, REVKEY_DEFAULT_SCOPE, r->key.id,
		    r->key.id_len) == 0;
	default:
		if (k->scope_len >= REVKEY_SCOPE_MAX)
			return false;
		k->scope[k->scope_len++] = '~';
		k->scope[k->scope_len] = '\0';
		return revkey_scope_valid(k->scope, k->scope_len);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct table_builder b;
	struct table_rec rec;
	struct revkey k;
	struct table *t;
	unsigned char sha[32], *enc;
	char err[512];
	uint64_t i, n;
	size_t elen;
	int how, want;

	t = table_parse(data, size, false, err, sizeof(err));
	if (t == NULL) {
		if (err[0] == '\0')
			__builtin_trap();	/* every refusal says why */
		return 0;
	}
	/* The table is bound to exactly these bytes. */
	if (table_size(t) != size || util_sha256(sha, data, size) != 0 ||
	    memcmp(sha, table_sha256(t), 32) != 0 || !table_intact(t) ||
	    table_check_binding(t, sha, size, err, sizeof(err)) != 0)
		__builtin_trap();
	/* A table that parses is sorted, and every record is found again. */
	n = table_count(t);
	for (i = 0; i < n && i < CHECK_MAX; i++) {
		if (table_get(t, i, &recs[i]) != 0)
			__builtin_trap();
		if (i > 0 && revkey_cmp(&recs[i - 1].key, &recs[i].key) >= 0)
			__builtin_trap();
		if (table_lookup(t, &recs[i].key, &rec) != 1 ||
		    !same_rec(&rec, &recs[i]))
			__builtin_trap();
	}
	if (table_get(t, n, &rec) != -1)
		__builtin_trap();
	/* Keys between the records: the index agrees with every record. */
	for (i = 0; i < n && n <= PROBE_MAX; i++)
		for (how = 0; how < 6; how++) {
			if (!probe(&recs[i], how, &k))
				continue;
			want = linear(n, &k);
			if (table_lookup(t, &k, NULL) != want ||
			    table_lookup(t, &k, &rec) != want ||
			    (want && revkey_cmp(&rec.key, &k) != 0))
				__builtin_trap();
		}
	/*
	 * One valid encoding: the builder, given the records, writes the
	 * very bytes that were parsed.
	 */
	if (n <= CHECK_MAX) {
		table_builder_init(&b);
		for (i = 0; i < n; i++)
			if (table_builder_add_rec(&b, &recs[i]) != 0)
				__builtin_trap();
		table_builder_sort_unique(&b);
		if (table_builder_count(&b) != n ||
		    table_builder_encode(&b, &enc, &elen, err,
		    sizeof(err)) != 0)
			__builtin_trap();
		if (elen != size || memcmp(enc, data, size) != 0)
			__builtin_trap();
		free(enc);
		table_builder_free(&b);
	}
	table_close(t);
	return 0;
}
