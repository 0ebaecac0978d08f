/* test_delta.c - tests of the signed delta format: encoding, hostile bytes, signatures, chains */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "delta.h"
#include "util.h"

static EVP_PKEY *tkey;

static void
setup(void)
{
	tkey = sign_keygen();
	cr_assert_not_null(tkey);
}

static void
teardown(void)
{
	EVP_PKEY_free(tkey);
}

/* A ring trusting exactly key. */
static void
ring_of(struct sign_ring *r, EVP_PKEY *key)
{
	sign_ring_init(r);
	cr_assert_eq(EVP_PKEY_up_ref(key), 1);
	r->keys[0] = key;
	cr_assert_eq(sign_key_id(key, r->ids[0]), 0);
	r->n = 1;
}

static struct delta_entry
ent(enum delta_op op, const char *scope, const char *id, int64_t at,
    const char *reason)
{
	struct delta_entry e;

	memset(&e, 0, sizeof(e));
	e.op = op;
	cr_assert_eq(revkey_set(&e.rec.key, scope, id, strlen(id)), 0);
	e.rec.revoked_at = at;
	if (reason != NULL)
		memcpy(e.rec.reason, reason, strlen(reason) + 1);
	return e;
}

static struct delta_info
info_for(enum delta_kind kind, uint64_t seq, unsigned char fill)
{
	struct delta_info in;

	memset(&in, 0, sizeof(in));
	in.kind = kind;
	in.base_version = 7;
	memset(in.base_sha256, 0xbb, 32);
	in.seq = seq;
	memset(in.prev_sha256, fill, 32);
	in.issued_at = 1767323045;
	in.expires_at = 1767323045 + 3600;
	in.cursor = 1000 + seq;
	in.changed_at = 1767323040;
	return in;
}

/* Encodes the three-entry sample delta of sequence seq chained to fill. */
static unsigned char *
sample(uint64_t seq, unsigned char fill, size_t *len)
{
	struct delta_entry e[4];
	struct delta_info in = info_for(DELTA_KIND_DELTA, seq, fill);
	unsigned char *buf = NULL;
	char err[256];

	e[0] = ent(DELTA_ADD, "default", "tok-2", 100, "keyCompromise");
	e[1] = ent(DELTA_REMOVE, "api", "jti-1", 0, NULL);
	e[2] = ent(DELTA_ADD, "default", "tok-1", 0, NULL);
	/* A later change of tok-2 wins over the first one. */
	e[3] = ent(DELTA_REMOVE, "default", "tok-2", 0, NULL);
	cr_assert_eq(delta_encode(&in, e, 4, tkey, &buf, len, err,
	    sizeof(err)), 0, "%s", err);
	return buf;
}

TestSuite(delta, .init = setup, .fini = teardown);

Test(delta, round_trip_in_key_order_last_change_wins)
{
	struct delta_entry e;
	struct sign_ring ring;
	struct delta *d;
	size_t len;
	unsigned char *buf = sample(1, 0xbb, &len);
	char err[256];

	d = delta_parse(buf, len, err, sizeof(err));
	cr_assert_not_null(d, "%s", err);
	ring_of(&ring, tkey);
	cr_assert_eq(delta_verify(d, &ring, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(delta_info(d)->nentries, 3);
	cr_assert_eq(delta_info(d)->nscopes, 2);
	cr_assert_eq(delta_info(d)->seq, 1);
	cr_assert_eq(delta_info(d)->cursor, 1001);
	cr_assert_eq(delta_info(d)->changed_at, 1767323040);
	cr_assert_eq(delta_get(d, 0, &e), 0);
	cr_assert_str_eq(e.rec.key.scope, "api");
	cr_assert_eq(e.op, DELTA_REMOVE);
	cr_assert_eq(delta_get(d, 1, &e), 0);
	cr_assert_eq(e.op, DELTA_ADD);
	cr_assert_eq(memcmp(e.rec.key.id, "tok-1", 5), 0);
	cr_assert_eq(delta_get(d, 2, &e), 0);
	cr_assert_eq(memcmp(e.rec.key.id, "tok-2", 5), 0);
	cr_assert_eq(e.op, DELTA_REMOVE, "the later change of tok-2 wins");
	cr_assert_str_eq(e.rec.reason, "");
	cr_assert_eq(delta_get(d, 3, &e), -1);
	/* 184 header + scopes (4 + 8) + entries 14*3 + 5+5+5 + 64 signature. */
	cr_assert_eq(len, 184 + 12 + 42 + 15 + 64);
	sign_ring_free(&ring);
	delta_free(d);
	free(buf);
}

Test(delta, every_truncation_is_refused)
{
	size_t len, i;
	unsigned char *buf = sample(1, 0xbb, &len);
	char err[256];

	for (i = 0; i < len; i++) {
		struct delta *d = delta_parse(buf, i, err, sizeof(err));

		cr_assert_null(d, "a delta cut to %zu of %zu bytes parsed", i,
		    len);
	}
	free(buf);
}

/* Any changed byte fails the parse or the signature, never both pass. */
Test(delta, every_flipped_byte_is_refused)
{
	struct sign_ring ring;
	size_t len, i;
	unsigned char *buf = sample(2, 0x11, &len);
	char err[256];

	ring_of(&ring, tkey);
	for (i = 0; i < len; i++) {
		struct delta *d;

		buf[i] ^= 0x01;
		d = delta_parse(buf, len, err, sizeof(err));
		cr_assert(d == NULL || delta_verify(d, &ring, err,
		    sizeof(err)) != 0, "flipping byte %zu went unnoticed", i);
		delta_free(d);
		buf[i] ^= 0x01;
	}
	sign_ring_free(&ring);
	free(buf);
}

Test(delta, an_untrusted_signer_is_refused)
{
	struct sign_ring ring;
	EVP_PKEY *other = sign_keygen();
	struct delta *d;
	size_t len;
	unsigned char *buf = sample(1, 0xbb, &len);
	char err[256];

	ring_of(&ring, other);
	d = delta_parse(buf, len, err, sizeof(err));
	cr_assert_not_null(d);
	cr_assert_eq(delta_verify(d, &ring, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not trusted") != NULL, "%s", err);
	sign_ring_free(&ring);
	EVP_PKEY_free(other);
	delta_free(d);
	free(buf);
}

Test(delta, hostile_headers_are_refused_with_the_offset)
{
	size_t len;
	unsigned char *buf = sample(1, 0xbb, &len), *c;
	char err[256];
	struct {
		size_t off;
		unsigned char v;
		const char *want;
	} cases[] = {
		{ 0, 'X', "bad magic" },
		{ 8, 2, "unsupported format" },
		{ 10, 9, "unknown kind" },
		{ 12, 1, "reserved" },
		{ 144, 0xff, "body length" },
		{ 136, 0xff, "entries" },
		{ 128, 0x7f, "scopes" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = malloc(len);
		memcpy(c, buf, len);
		c[cases[i].off] = cases[i].v;
		cr_assert_null(delta_parse(c, len, err, sizeof(err)),
		    "case %zu parsed", i);
		cr_assert(strstr(err, cases[i].want) != NULL, "case %zu: \"%s\" "
		    "lacks \"%s\"", i, err, cases[i].want);
		free(c);
	}
	/* A huge entry count must not make the parser allocate for it. */
	c = malloc(len);
	memcpy(c, buf, len);
	util_put_le64(c + 136, UINT64_C(1) << 23);
	cr_assert_null(delta_parse(c, len, err, sizeof(err)));
	free(c);
	free(buf);
}

Test(delta, encode_refuses_bad_entries)
{
	struct delta_info in = info_for(DELTA_KIND_DELTA, 1, 0);
	struct delta_entry e = ent(DELTA_ADD, "default", "x", 0, NULL);
	unsigned char *buf = NULL;
	size_t len;
	char err[256];

	memcpy(e.rec.reason, "bad\nreason", 11);
	cr_assert_eq(delta_encode(&in, &e, 1, tkey, &buf, &len, err,
	    sizeof(err)), -1);
	in = info_for(DELTA_KIND_HEAD, 1, 0);
	e = ent(DELTA_ADD, "default", "x", 0, NULL);
	cr_assert_eq(delta_encode(&in, &e, 1, tkey, &buf, &len, err,
	    sizeof(err)), -1, "a head with entries");
	in = info_for(DELTA_KIND_DELTA, 0, 0);
	cr_assert_eq(delta_encode(&in, &e, 1, tkey, &buf, &len, err,
	    sizeof(err)), -1, "a delta of sequence 0");
	cr_assert_null(buf);
}

/* Parses and returns a delta of seq chained to prev (a fill byte). */
static struct delta *
mk(enum delta_kind kind, uint64_t seq, const unsigned char prev[32])
{
	struct delta_info in = info_for(kind, seq, 0);
	struct delta_entry e = ent(DELTA_ADD, "default", "x", 0, NULL);
	unsigned char *buf = NULL;
	struct delta *d;
	size_t len;
	char err[256];

	memcpy(in.prev_sha256, prev, 32);
	cr_assert_eq(delta_encode(&in, &e, kind == DELTA_KIND_HEAD ? 0 : 1,
	    tkey, &buf, &len, err, sizeof(err)), 0, "%s", err);
	d = delta_parse(buf, len, err, sizeof(err));
	cr_assert_not_null(d, "%s", err);
	free(buf);
	return d;
}

Test(delta, chain_links_next_gap_fork_replay_other_base_and_heads)
{
	struct delta_pos pos;
	struct delta *d1, *d2, *d2b, *d3, *h;
	unsigned char wrong[32];
	char err[256];

	memset(&pos, 0, sizeof(pos));
	pos.base_version = 7;
	memset(pos.base_sha256, 0xbb, 32);
	memcpy(pos.last_sha256, pos.base_sha256, 32);
	memset(wrong, 0x42, 32);

	d1 = mk(DELTA_KIND_DELTA, 1, pos.last_sha256);
	cr_assert_eq(delta_link(d1, &pos, err, sizeof(err)), DELTA_LINK_NEXT);
	d2 = mk(DELTA_KIND_DELTA, 2, delta_sha256(d1));
	cr_assert_eq(delta_link(d2, &pos, err, sizeof(err)), DELTA_LINK_GAP,
	    "delta 2 before delta 1 crosses a gap");
	cr_assert(strstr(err, "gap") != NULL, "%s", err);
	h = mk(DELTA_KIND_HEAD, 0, pos.base_sha256);
	cr_assert_eq(delta_link(h, &pos, err, sizeof(err)), DELTA_LINK_HEAD);
	delta_free(h);

	/* Apply 1. */
	pos.seq = 1;
	memcpy(pos.last_sha256, delta_sha256(d1), 32);
	cr_assert_eq(delta_link(d1, &pos, err, sizeof(err)), DELTA_LINK_OLD,
	    "delta 1 again is a replay");
	cr_assert_eq(delta_link(d2, &pos, err, sizeof(err)), DELTA_LINK_NEXT);
	d2b = mk(DELTA_KIND_DELTA, 2, wrong);
	cr_assert_eq(delta_link(d2b, &pos, err, sizeof(err)), DELTA_LINK_FORK);
	cr_assert(strstr(err, "fork") != NULL, "%s", err);
	h = mk(DELTA_KIND_HEAD, 0, pos.base_sha256);
	cr_assert_eq(delta_link(h, &pos, err, sizeof(err)), DELTA_LINK_OLD,
	    "an older head is a rollback");
	delta_free(h);
	h = mk(DELTA_KIND_HEAD, 1, wrong);
	cr_assert_eq(delta_link(h, &pos, err, sizeof(err)), DELTA_LINK_FORK);
	delta_free(h);
	h = mk(DELTA_KIND_HEAD, 2, delta_sha256(d2));
	cr_assert_eq(delta_link(h, &pos, err, sizeof(err)), DELTA_LINK_GAP);
	delta_free(h);

	/* Another base: same seq, but made for base 8. */
	pos.base_version = 8;
	cr_assert_eq(delta_link(d2, &pos, err, sizeof(err)),
	    DELTA_LINK_OTHER_BASE);
	pos.base_version = 7;
	pos.base_sha256[0] ^= 1;
	cr_assert_eq(delta_link(d2, &pos, err, sizeof(err)),
	    DELTA_LINK_OTHER_BASE, "same version, other base file");
	d3 = mk(DELTA_KIND_DELTA, 3, delta_sha256(d2));
	delta_free(d1);
	delta_free(d2);
	delta_free(d2b);
	delta_free(d3);
}

Test(delta, a_bundle_splits_at_declared_lengths_and_refuses_cuts)
{
	size_t l1, l2, offs[4], lens[4];
	unsigned char *a = sample(1, 0xbb, &l1), *b = sample(2, 0x11, &l2);
	unsigned char *cat = malloc(l1 + l2);
	char err[256];

	memcpy(cat, a, l1);
	memcpy(cat + l1, b, l2);
	cr_assert_eq(delta_bundle_split(cat, l1 + l2, offs, lens, 4, err,
	    sizeof(err)), 2, "%s", err);
	cr_assert_eq(offs[1], l1);
	cr_assert_eq(lens[1], l2);
	cr_assert_eq(delta_bundle_split(cat, 0, offs, lens, 4, err,
	    sizeof(err)), 0, "an empty bundle has no piece");
	cr_assert_eq(delta_bundle_split(cat, l1 + l2 - 1, offs, lens, 4, err,
	    sizeof(err)), -1, "a cut last piece");
	cr_assert_eq(delta_bundle_split(cat, l1 + l2, offs, lens, 1, err,
	    sizeof(err)), -1, "more pieces than room");
	util_put_le64(cat + 144, UINT64_MAX);
	cr_assert_eq(delta_bundle_split(cat, l1 + l2, offs, lens, 4, err,
	    sizeof(err)), -1, "an impossible length");
	free(cat);
	free(a);
	free(b);
}

/*
 * The fuzz seeds that are meant to parse do (as in test_table.c: the
 * table seeds once fell a format behind).
 */
Test(delta, fuzz_seeds_are_in_the_current_format)
{
	static const char *const valid[] = { "delta3", "head", "gen-head0.rcd",
	    "gen-head7.rcd", "gen-add1.rcd", "gen-remove1.rcd",
	    "gen-mixed.rcd", "gen-max.rcd", "gen-64.rcd" };
	const char *src = getenv("REVCHECK_SRC");
	char path[4096], err[512];
	struct delta *d;
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/delta/%s",
		    src != NULL ? src : ".", valid[i]);
		d = delta_open(path, err, sizeof(err));
		cr_assert_not_null(d, "%s", err);
		delta_free(d);
	}
}
