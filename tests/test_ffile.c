/* test_ffile.c - the signed filter file: encode, parse, verify, hostile bytes */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ffile.h"
#include "table.h"
#include "util.h"

#define NIDS 300

struct fx {
	EVP_PKEY	*key;
	unsigned char	*buf;
	size_t		 len;
	struct ffile_scope scopes[2];
};

static void
mkkey(struct revkey *k, const char *scope, int i)
{
	char id[32];

	cr_assert(snprintf(id, sizeof(id), "token-%d", i) > 0);
	cr_assert_eq(revkey_set(k, scope, id, strlen(id)), 0);
}

static void
make_filter(struct fx *fx, enum bloom_layout layout)
{
	struct ffile_info info;
	struct bloom b;
	struct revkey k;
	unsigned char enc[REVKEY_ENC_MAX];
	uint64_t m;
	uint32_t kk;
	char err[256];
	int i;

	memset(fx, 0, sizeof(*fx));
	fx->key = sign_keygen();
	cr_assert_not_null(fx->key);
	cr_assert_eq(bloom_size(layout, NIDS, 0.01, &m, &kk), 0);
	cr_assert_eq(bloom_init(&b, layout, m, kk, 0x1234567890abcdefULL), 0);
	for (i = 0; i < NIDS; i++) {
		mkkey(&k, i % 2 ? "default" : "tenant-a", i);
		bloom_add(&b, enc, revkey_encode(&k, enc));
	}
	memset(&info, 0, sizeof(info));
	info.version = 42;
	info.issued_at = 1700000000;
	info.expires_at = 1700003600;
	info.keys = NIDS;
	info.fp_rate_target = 0.01;
	memset(info.table_sha256, 0xab, 32);
	info.table_len = 1234;
	/* Given out of order: the encoder sorts scopes by name. */
	cr_assert(snprintf(fx->scopes[0].name, sizeof(fx->scopes[0].name),
	    "tenant-a") > 0);
	fx->scopes[0].keys = NIDS / 2;
	fx->scopes[0].source = FFILE_SRC_CRL;
	cr_assert(snprintf(fx->scopes[0].issuer, sizeof(fx->scopes[0].issuer),
	    "CN=Test CA,O=revcheck") > 0);
	cr_assert(snprintf(fx->scopes[0].crl_number,
	    sizeof(fx->scopes[0].crl_number), "0a1b") > 0);
	fx->scopes[0].this_update = 1699990000;
	fx->scopes[0].next_update = 1700990000;
	memset(fx->scopes[0].crl_sha256, 0x5c, 32);
	cr_assert(snprintf(fx->scopes[1].name, sizeof(fx->scopes[1].name),
	    "default") > 0);
	fx->scopes[1].keys = NIDS / 2;
	info.scopes = fx->scopes;
	info.nscopes = 2;
	cr_assert_eq(ffile_encode(&info, &b, fx->key, &fx->buf, &fx->len, err,
	    sizeof(err)), 0, "%s", err);
	bloom_free(&b);
}

static void
fx_free(struct fx *fx)
{
	EVP_PKEY_free(fx->key);
	free(fx->buf);
}

static void
round_trip(enum bloom_layout layout)
{
	struct fx fx;
	struct ffile *f;
	const struct ffile_info *in;
	const struct ffile_scope *s;
	struct revkey k;
	char err[256];
	unsigned char sha[32], id[32];
	size_t len;
	int i;

	make_filter(&fx, layout);
	f = ffile_parse(fx.buf, fx.len, false, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	in = ffile_info(f);
	cr_assert_eq(in->format, FFILE_FORMAT);
	cr_assert_eq(in->layout, layout);
	cr_assert_eq(in->version, 42);
	cr_assert_eq(in->issued_at, 1700000000);
	cr_assert_eq(in->expires_at, 1700003600);
	cr_assert_eq(in->keys, NIDS);
	cr_assert_eq(in->seed, 0x1234567890abcdefULL);
	cr_assert_eq(in->fp_rate_target, 0.01);
	cr_assert_eq(in->table_len, 1234);
	cr_assert_eq(in->nscopes, 2);
	cr_assert_str_eq(in->scopes[0].name, "default");
	cr_assert_eq(in->scopes[0].source, FFILE_SRC_LIST);
	cr_assert_eq(sign_key_id(fx.key, id), 0);
	cr_assert_eq(memcmp(in->signer, id, 32), 0);
	s = ffile_scope(f, "tenant-a");
	cr_assert_not_null(s);
	cr_assert_eq(s->source, FFILE_SRC_CRL);
	cr_assert_str_eq(s->issuer, "CN=Test CA,O=revcheck");
	cr_assert_str_eq(s->crl_number, "0a1b");
	cr_assert_eq(s->this_update, 1699990000);
	cr_assert_eq(s->next_update, 1700990000);
	cr_assert_eq(s->crl_sha256[31], 0x5c);
	cr_assert_null(ffile_scope(f, "tenant-b"));
	cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(util_sha256(sha, fx.buf, fx.len), 0);
	cr_assert_eq(memcmp(sha, ffile_sha256(f), 32), 0);
	cr_assert_eq(ffile_bytes(f, &len), fx.buf);
	cr_assert_eq(len, fx.len);
	/* The bit array is 8-aligned inside the file. */
	cr_assert_eq((ffile_bloom(f)->bits - fx.buf) % 8, 0);
	for (i = 0; i < NIDS; i++) {
		mkkey(&k, i % 2 ? "default" : "tenant-a", i);
		cr_assert(ffile_query(f, &k), "false negative %d", i);
	}
	cr_assert_not(ffile_expired(f, 1700003599));
	cr_assert(ffile_expired(f, 1700003600));
	ffile_close(f);
	fx_free(&fx);
}

Test(ffile, round_trip_classic) { round_trip(BLOOM_CLASSIC); }
Test(ffile, round_trip_blocked) { round_trip(BLOOM_BLOCKED); }

Test(ffile, flip_any_byte_fails_parse_or_verify)
{
	struct fx fx;
	unsigned char *copy;
	struct ffile *f;
	char err[256];
	size_t i;

	make_filter(&fx, BLOOM_CLASSIC);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < fx.len; i++) {
		memcpy(copy, fx.buf, fx.len);
		copy[i] ^= 0x01;
		f = ffile_parse(copy, fx.len, false, err, sizeof(err));
		if (f == NULL)
			continue;
		cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), -1,
		    "flipping byte %zu went unnoticed", i);
		ffile_close(f);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, truncations_and_trailing_bytes_rejected)
{
	struct fx fx;
	unsigned char *copy;
	char err[256];
	size_t i;

	make_filter(&fx, BLOOM_CLASSIC);
	for (i = 0; i < fx.len; i++)
		cr_assert_null(ffile_parse(fx.buf, i, false, err, sizeof(err)),
		    "truncated to %zu accepted", i);
	copy = calloc(1, fx.len + 8);
	cr_assert_not_null(copy);
	memcpy(copy, fx.buf, fx.len);
	cr_assert_null(ffile_parse(copy, fx.len + 1, false, err, sizeof(err)));
	cr_assert(strstr(err, "offset") != NULL, "%s", err);
	free(copy);
	fx_free(&fx);
}

Test(ffile, hostile_header_fields_rejected)
{
	struct fx fx;
	unsigned char *copy;
	char err[256];
	static const struct { size_t off; size_t len; } fields[] = {
		{ 0, 8 }, { 8, 2 }, { 10, 1 }, { 11, 1 }, { 12, 4 }, { 40, 8 },
		{ 48, 8 }, { 56, 4 }, { 60, 4 }, { 72, 8 }, { 152, 8 },
		{ 160, 8 },
	};
	size_t i, j;

	make_filter(&fx, BLOOM_CLASSIC);
	copy = malloc(fx.len);
	cr_assert_not_null(copy);
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		memcpy(copy, fx.buf, fx.len);
		for (j = 0; j < fields[i].len; j++)
			copy[fields[i].off + j] = 0xff;
		cr_assert_null(ffile_parse(copy, fx.len, false, err, sizeof(err)),
		    "all-ones field at %zu accepted", fields[i].off);
		cr_assert(strstr(err, "offset") != NULL, "%s", err);
	}
	free(copy);
	fx_free(&fx);
}

Test(ffile, wrong_key_and_ring)
{
	struct fx fx;
	struct ffile *f;
	struct sign_ring ring;
	EVP_PKEY *other;
	char err[256], dir[] = "/tmp/test_ffile_XXXXXX", p1[64], p2[64];

	make_filter(&fx, BLOOM_CLASSIC);
	f = ffile_parse(fx.buf, fx.len, false, err, sizeof(err));
	cr_assert_not_null(f);
	other = sign_keygen();
	cr_assert_eq(ffile_verify_key(f, other, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not trusted") != NULL, "%s", err);

	cr_assert_not_null(mkdtemp(dir));
	cr_assert(snprintf(p1, sizeof(p1), "%s/a.pem", dir) > 0);
	cr_assert(snprintf(p2, sizeof(p2), "%s/b.pem", dir) > 0);
	cr_assert_eq(sign_save(other, p1 + 0, NULL, false, err, sizeof(err)), 0);
	cr_assert_eq(sign_save(fx.key, p2, NULL, false, err, sizeof(err)), 0);
	sign_ring_init(&ring);
	cr_assert_eq(sign_ring_add(&ring, p1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), -1);
	cr_assert_eq(sign_ring_add(&ring, p2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), 0, "%s", err);
	sign_ring_free(&ring);
	unlink(p1);
	unlink(p2);
	rmdir(dir);
	EVP_PKEY_free(other);
	ffile_close(f);
	fx_free(&fx);
}

Test(ffile, open_maps_file)
{
	struct fx fx;
	struct ffile *f;
	char err[256], path[] = "/tmp/test_ffile_XXXXXX";
	int fd;

	make_filter(&fx, BLOOM_BLOCKED);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, fx.buf, fx.len), 0);
	close(fd);
	f = ffile_open(path, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert_eq(ffile_verify_key(f, fx.key, err, sizeof(err)), 0);
	ffile_close(f);
	unlink(path);
	cr_assert_null(ffile_open(path, err, sizeof(err)));
	cr_assert(strstr(err, path) != NULL);
	fx_free(&fx);
}

Test(ffile, encode_refuses_duplicate_scope)
{
	struct ffile_info info;
	struct ffile_scope sc[2];
	struct bloom b;
	EVP_PKEY *key = sign_keygen();
	unsigned char *out;
	size_t len;
	char err[256];

	cr_assert_eq(bloom_init(&b, BLOOM_CLASSIC, 1024, 3, 1), 0);
	memset(&info, 0, sizeof(info));
	memset(sc, 0, sizeof(sc));
	memcpy(sc[0].name, "default", 8);
	memcpy(sc[1].name, "default", 8);
	info.issued_at = 1;
	info.expires_at = 2;
	info.fp_rate_target = 0.01;
	info.scopes = sc;
	info.nscopes = 2;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    -1);
	/* Key count must be the sum of the scopes'. */
	info.nscopes = 1;
	info.keys = 5;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "sum") != NULL, "%s", err);
	info.keys = 0;
	cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err, sizeof(err)),
	    0, "%s", err);
	free(out);
	bloom_free(&b);
	EVP_PKEY_free(key);
}

/* Every padding length (0..7) between the scopes and the bit array. */
Test(ffile, all_scope_lengths_round_trip)
{
	struct ffile_info info;
	struct ffile_scope sc;
	struct bloom b;
	struct ffile *f;
	EVP_PKEY *key = sign_keygen();
	unsigned char *out;
	size_t len, nl;
	char err[256];

	cr_assert_eq(bloom_init(&b, BLOOM_CLASSIC, 1000, 3, 9), 0);
	for (nl = 1; nl <= 24; nl++) {
		memset(&info, 0, sizeof(info));
		memset(&sc, 0, sizeof(sc));
		memset(sc.name, 'a', nl);
		info.issued_at = 1;
		info.expires_at = 2;
		info.fp_rate_target = 0.5;
		info.scopes = &sc;
		info.nscopes = 1;
		cr_assert_eq(ffile_encode(&info, &b, key, &out, &len, err,
		    sizeof(err)), 0, "name length %zu: %s", nl, err);
		f = ffile_parse(out, len, true, err, sizeof(err));
		cr_assert_not_null(f, "%s", err);
		cr_assert_eq(strlen(ffile_info(f)->scopes[0].name), nl);
		cr_assert_eq(ffile_verify_key(f, key, err, sizeof(err)), 0);
		ffile_close(f);
	}
	bloom_free(&b);
	EVP_PKEY_free(key);
}

/* tests/vectors: the committed filter, table and key agree with each other. */
Test(ffile, committed_vector_verifies)
{
	const char *src = getenv("REVCHECK_SRC");
	char path[1024], err[512];
	struct ffile *f;
	struct table *t;
	struct sign_ring ring;
	struct table_rec r;
	struct revkey k;
	uint64_t i;

	if (src == NULL)
		src = ".";
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/filter.rcf",
	    src) > 0);
	f = ffile_open(path, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/pub.pem",
	    src) > 0);
	sign_ring_init(&ring);
	cr_assert_eq(sign_ring_add(&ring, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ffile_verify(f, &ring, err, sizeof(err)), 0, "%s", err);
	cr_assert(snprintf(path, sizeof(path), "%s/tests/vectors/table.rct",
	    src) > 0);
	t = table_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	cr_assert_eq(table_check_binding(t, ffile_info(f)->table_sha256,
	    ffile_info(f)->table_len, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(table_count(t), ffile_info(f)->keys);
	cr_assert_eq(ffile_info(f)->version, 1);
	cr_assert_eq(ffile_info(f)->nscopes, 3);
	for (i = 0; i < table_count(t); i++) {
		cr_assert_eq(table_get(t, i, &r), 0);
		cr_assert(ffile_query(f, &r.key), "record %" PRIu64
		    " missing from the filter", i);
	}
	cr_assert_eq(revkey_set(&k, "tenant-a", "tok-4", 5), 0);
	cr_assert(table_lookup(t, &k, &r));
	cr_assert_str_eq(r.reason, "keyCompromise");
	cr_assert_eq(r.revoked_at, 1767323045);	/* 2026-01-02T03:04:05Z */
	cr_assert_eq(revkey_set(&k, "default", "tok-5", 5), 0);
	cr_assert_not(table_lookup(t, &k, NULL));
	table_close(t);
	sign_ring_free(&ring);
	ffile_close(f);
}
