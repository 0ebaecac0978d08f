/* test_pair.c - records to a signed pair: the bytes of the code path before pair_build, reproduced */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "ffile.h"
#include "input.h"
#include "pair.h"
#include "pub_helpers.h"
#include "publish.h"
#include "sign.h"
#include "svc_fixture.h"
#include "util.h"

/*
 * tests/data/pair holds what filterbuild published before pair_build
 * existed (tip 83376c5), with REVCHECK_FAKE_NOW=1924934400, --version 7,
 * the key in key.pem, and the inputs below; GoodCACRL's nextUpdate
 * (1924936200) lies 30 minutes after now, so the default 1 h validity is
 * clamped to it.
 */
#define GOLD_NOW	INT64_C(1924934400)
#define GOLD_NEXT	INT64_C(1924936200)

static void
src_path(char *out, size_t cap, const char *name)
{
	const char *s = getenv("REVCHECK_SRC");
	int n = snprintf(out, cap, "%s/%s", s != NULL && *s != '\0' ? s : ".",
	    name);

	cr_assert(n > 0 && (size_t)n < cap);
}

static EVP_PKEY *
gold_key(void)
{
	char path[1024], tmp[] = "/tmp/gold-key.XXXXXX", err[256];
	unsigned char *pem = NULL;
	EVP_PKEY *key;
	size_t len;
	int fd;

	/* git keeps the key 0644; a signing key is used only at 0600. */
	src_path(path, sizeof(path), "tests/data/pair/key.pem");
	cr_assert_eq(util_read_file(path, 1 << 16, &pem, &len, err,
	    sizeof(err)), 0, "%s", err);
	fd = mkstemp(tmp);	/* mode 0600 */
	cr_assert(fd >= 0);
	cr_assert_eq(util_write_all(fd, pem, len), 0);
	close(fd);
	free(pem);
	key = sign_load_private(tmp, err, sizeof(err));
	unlink(tmp);
	cr_assert_not_null(key, "%s", err);
	return key;
}

static unsigned char *
slurp(const char *name, size_t *len)
{
	char path[1024], err[256];
	unsigned char *buf = NULL;

	src_path(path, sizeof(path), name);
	cr_assert_eq(util_read_file(path, 1 << 20, &buf, len, err,
	    sizeof(err)), 0, "%s", err);
	return buf;
}

/* The inputs read as filterbuild build reads them by default. */
static void
gold_inputs(struct input_set *s, X509 *ca)
{
	static const char *const inputs[] = {
		"tests/data/tokens.txt",
		"tests/data/tokens-objects.json",
		"tests/data/pkits/crls/GoodCACRL.crl",
	};
	struct input_opts io;
	char path[1024], err[1024];
	size_t i;

	memset(&io, 0, sizeof(io));
	io.scope = REVKEY_DEFAULT_SCOPE;
	io.format = INPUT_AUTO;
	io.issuers = &ca;
	io.nissuers = 1;
	io.clock_skew = 300;
	io.now = GOLD_NOW;
	io.expiry_grace = 600;
	io.quiet = true;
	input_set_init(s);
	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		src_path(path, sizeof(path), inputs[i]);
		cr_assert_eq(input_read(s, path, &io, err, sizeof(err)), 0, "%s",
		    err);
	}
	cr_assert_eq(input_resolve_crls(s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	table_builder_sort_unique(&s->builder);
	input_count_scopes(s);
	cr_assert_eq(input_check_signers(s, err, sizeof(err)), 0, "%s", err);
}

static X509 *
gold_ca(void)
{
	char path[1024];
	X509 *ca;
	FILE *f;

	src_path(path, sizeof(path), "tests/data/pair/GoodCACert.pem");
	cr_assert_not_null(f = fopen(path, "r"), "%s", path);
	ca = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(ca);
	return ca;
}

static void
same_bytes(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen, const char *what)
{
	cr_assert_eq(alen, blen, "%s: %zu bytes, golden %zu", what, alen, blen);
	cr_assert_eq(memcmp(a, b, alen), 0, "%s: bytes differ", what);
}

/*
 * A fuse filter built again from the golden's keys and seed. The peeling
 * that finds the cells changed since the golden was written (a stack of
 * cells with one key instead of a queue, lib/bloom.c), so its cells are
 * another solution of the same equations: every byte before them is the
 * golden's (header, scopes, shape, seed, the table's digest), the cell
 * array as long, the signature verifies, and every key of the golden
 * table answers present in both.
 */
static void
same_but_cells(const unsigned char *a, size_t alen, const unsigned char *g,
    size_t glen, const struct table_builder *tb, EVP_PKEY *key,
    const char *what)
{
	struct ffile *fa, *fg;
	const unsigned char *ab, *gb;
	size_t i, n, klen, hlen, albytes, glbytes;
	const void *kb;
	char err[512];

	fa = ffile_parse(a, alen, false, err, sizeof(err));
	cr_assert_not_null(fa, "%s: %s", what, err);
	fg = ffile_parse(g, glen, false, err, sizeof(err));
	cr_assert_not_null(fg, "%s: %s", what, err);
	cr_assert_eq(alen, glen, "%s: %zu bytes, golden %zu", what, alen, glen);
	ab = ffile_bytes(fa, &albytes);
	gb = ffile_bytes(fg, &glbytes);
	hlen = (size_t)(ffile_bloom(fg)->bits - gb);
	cr_assert_eq((size_t)(ffile_bloom(fa)->bits - ab), hlen, "%s", what);
	cr_assert_eq(ffile_bloom(fa)->nbytes, ffile_bloom(fg)->nbytes, "%s",
	    what);
	cr_assert_eq(memcmp(ab, gb, hlen), 0, "%s: header bytes differ", what);
	cr_assert_eq(ffile_verify_key(fa, key, err, sizeof(err)), 0, "%s: %s",
	    what, err);
	n = table_builder_count(tb);
	cr_assert_gt(n, 0);
	for (i = 0; i < n; i++) {
		kb = table_builder_key(tb, i, &klen);
		cr_assert(bloom_query(ffile_bloom(fa), kb, klen),
		    "%s: key %zu absent", what, i);
		cr_assert(bloom_query(ffile_bloom(fg), kb, klen),
		    "%s: key %zu absent from the golden", what, i);
	}
	ffile_close(fa);
	ffile_close(fg);
}

/* DIR's current pair holds these filter and table bytes; removes DIR. */
static void
check_published(const char *dir, const unsigned char *gold, size_t glen,
    const unsigned char *gtab, size_t gtlen)
{
	char path[512], err[1024];
	unsigned char *pub;
	size_t plen;

	cr_assert(snprintf(path, sizeof(path), "%s/current/filter.rcf", dir) >
	    0);
	cr_assert_eq(util_read_file(path, 1 << 20, &pub, &plen, err,
	    sizeof(err)), 0, "%s", err);
	same_bytes(pub, plen, gold, glen, "published filter");
	free(pub);
	cr_assert(snprintf(path, sizeof(path), "%s/current/table.rct", dir) >
	    0);
	cr_assert_eq(util_read_file(path, 1 << 20, &pub, &plen, err,
	    sizeof(err)), 0, "%s", err);
	same_bytes(pub, plen, gtab, gtlen, "published table");
	free(pub);
	cr_assert(snprintf(path, sizeof(path), "rm -rf '%s'", dir) > 0);
	cr_assert_eq(system(path), 0);
}

/*
 * One golden filter: the same inputs through pair_build, with the golden's
 * seed (filterbuild draws it at random), give the same filter and table
 * byte for byte (a fuse filter: the same but for its cells, see
 * same_but_cells); published, the files in current are those bytes too,
 * and building and publishing in one step gives them again.
 */
static void
check_golden(const char *layout_name, enum bloom_layout layout,
    double fp_rate)
{
	char name[256], dir[] = "/tmp/revcheck-pair-XXXXXX";
	char dir2[] = "/tmp/revcheck-pair-XXXXXX", err[1024];
	unsigned char *gold, *gtab, *tab;
	size_t glen, gtlen, tlen;
	struct input_set s;
	struct pair_opts po;
	struct pair p;
	struct ffile *gf;
	EVP_PKEY *key = gold_key();
	X509 *ca = gold_ca();
	unsigned char *own = NULL;
	const unsigned char *want;
	size_t wlen;
	bool fuse;

	cr_assert(snprintf(name, sizeof(name), "tests/data/pair/%s.rcf",
	    layout_name) > 0);
	gold = slurp(name, &glen);
	want = gold;
	wlen = glen;
	gtab = slurp("tests/data/pair/table.rct", &gtlen);
	gf = ffile_parse(gold, glen, false, err, sizeof(err));
	cr_assert_not_null(gf, "%s", err);
	fuse = ffile_info(gf)->layout == BLOOM_FUSE8 ||
	    bloom_fuse_packed(ffile_info(gf)->layout);
	gold_inputs(&s, ca);

	memset(&po, 0, sizeof(po));
	po.key = key;
	po.version = 7;
	po.issued_at = GOLD_NOW;
	po.expires_at = GOLD_NOW + 3600;
	po.fp_rate = fp_rate;
	po.layout = layout;
	po.seed = ffile_info(gf)->seed;
	po.fixed_seed = true;
	cr_assert_eq(pair_build(&p, &s.builder, s.scopes, s.nscopes, &po, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.info.expires_at, GOLD_NEXT, "clamped to nextUpdate");
	if (fuse) {
		same_but_cells(p.filter, p.filter_len, gold, glen, &s.builder,
		    key, name);
		/* From here on, the bytes to reproduce are this build's. */
		cr_assert_not_null(own = malloc(p.filter_len));
		memcpy(own, p.filter, p.filter_len);
		want = own;
		wlen = p.filter_len;
	} else
		same_bytes(p.filter, p.filter_len, gold, glen, name);
	cr_assert_eq(table_builder_encode(&s.builder, &tab, &tlen, err,
	    sizeof(err)), 0, "%s", err);
	same_bytes(tab, tlen, gtab, gtlen, "table.rct");

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(pair_publish(&p, dir, 3, err, sizeof(err)), 0, "%s", err);
	check_published(dir, want, wlen, gtab, gtlen);
	pair_free(&p);

	/* Built and published in one step (the table written by a second
	 * thread while the filter is built): the same bytes. */
	cr_assert_not_null(mkdtemp(dir2));
	cr_assert_eq(pair_build_publish(&p, &s.builder, s.scopes, s.nscopes,
	    &po, dir2, 3, err, sizeof(err)), 0, "%s", err);
	same_bytes(p.filter, p.filter_len, want, wlen, name);
	check_published(dir2, want, wlen, gtab, gtlen);

	pair_free(&p);
	free(tab);
	input_set_free(&s);
	ffile_close(gf);
	free(own);
	free(gold);
	free(gtab);
	X509_free(ca);
	EVP_PKEY_free(key);
}

Test(pair, classic_as_filterbuild_published_it) { check_golden("classic", BLOOM_CLASSIC, 0.004); }
Test(pair, blocked_as_filterbuild_published_it) { check_golden("blocked", BLOOM_BLOCKED, 0.004); }
/* fuse.rcf is of the byte-cell layout filterbuild wrote then, now fuse8. */
Test(pair, fuse8_as_filterbuild_published_it) { check_golden("fuse", BLOOM_FUSE8, 0.004); }
Test(pair, auto_layout_as_filterbuild_published_it) { check_golden("auto", 0, 0.001); }

/*
 * The svc test fixture, now a caller of pair_build, gives the bytes its
 * own sort, encoder and add loop gave before (SHA-256 recorded from
 * tests/svc_fixture.h at 83376c5 with the same key and records).
 */
Test(pair, fixture_bytes_unchanged)
{
	static const struct fx_rec recs[] = {
		{ "default", "tok-b", "keyCompromise", 1700000100 },
		{ "default", "tok-a", NULL, 0 },
		{ "https://idp.example", "obj-1", NULL, 1690000000 },
		{ "default", "tok-c", "superseded", 0 },
		{ "sub:idp", "alice", NULL, 1700000000 },
	};
	static const char *extra[] = { "empty-scope" };
	static const struct {
		enum bloom_layout layout;
		uint64_t	 m;
		uint32_t	 k;
		const char	*filter;
	} want[] = {
		{ BLOOM_CLASSIC, 4096, 5, "35fdc5ee36e73212e4a00d513ea762c7"
		    "f2f58577b4e17ecc0e188842c8c8b141" },
		{ BLOOM_BLOCKED, 1024, 6, "a50578a70f560c866c082721c575c9a7"
		    "34d2697a52a672a3d4a60991ba370698" },
		/* The fuse layouts: recorded again when the peeling took
		 * cells from a stack instead of a queue (other cells, the
		 * same equations; see same_but_cells). */
		{ BLOOM_FUSE8, 0, 0, "f775e5b4fee5732b03a2b8bcc4f42d4d"
		    "e79a59ac52757081e1364edf89e6e36a" },
		/* Layout 4, 7-bit cells. */
		{ BLOOM_FUSE128, 0, 0, "600433c91cd67f3f81a43211bf8868da"
		    "98ecb283dda785c41b04b96ea273865a" },
		/* Layout 5 (XXH3-64), 7-bit cells. */
		{ BLOOM_FUSE, 0, 0, "2c3f2c87f0cb86962ffc6d03766e9656"
		    "36bd3fa890d165b4cdab8a5cc30985e9" },
	};
	static const char table[] = "74450e86b030ef3fc66809b19bc2d648"
	    "3efc7394fb4e6bd9da9ce7111ac80180";
	unsigned char sha[32];
	char hex[65];
	struct fx_pair p;
	EVP_PKEY *key = gold_key();
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_assert_eq(fx_build_layout(want[i].layout, key, 3, 1700000000,
		    1700003600, recs, 5, extra, 1, want[i].m, want[i].k, &p), 0);
		cr_assert_eq(util_sha256(sha, p.filter, p.flen), 0);
		util_hex(hex, sha, 32);
		cr_assert_str_eq(hex, want[i].filter, "layout %d: %s",
		    want[i].layout, hex);
		cr_assert_eq(util_sha256(sha, p.table, p.tlen), 0);
		util_hex(hex, sha, 32);
		cr_assert_str_eq(hex, table);
		fx_free(&p);
	}
	EVP_PKEY_free(key);
}

/*
 * Only a CRL scope's nextUpdate after issued_at lowers the validity; the
 * fuse layout is refused below 2^-16, and p is left zeroed.
 */
Test(pair, expiry_clamp_and_refusals)
{
	struct table_builder tb;
	struct ffile_scope sc[3];
	struct pair_opts po;
	struct pair p;
	struct revkey k;
	char err[512];
	EVP_PKEY *key = gold_key();

	table_builder_init(&tb);
	cr_assert_eq(revkey_set(&k, "default", "tok-1", 5), 0);
	cr_assert_eq(table_builder_add(&tb, &k, 0, NULL), 0);
	table_builder_sort_unique(&tb);
	memset(sc, 0, sizeof(sc));
	snprintf(sc[0].name, sizeof(sc[0].name), "%s", "default");
	sc[0].keys = 1;
	sc[0].source = FFILE_SRC_LIST;
	snprintf(sc[1].name, sizeof(sc[1].name), "%s", "crl-past");
	sc[1].source = FFILE_SRC_CRL;
	sc[1].next_update = 900;	/* before issued_at: ignored */
	snprintf(sc[2].name, sizeof(sc[2].name), "%s", "crl-soon");
	sc[2].source = FFILE_SRC_CRL;
	sc[2].next_update = 1700;

	memset(&po, 0, sizeof(po));
	po.key = key;
	po.version = 1;
	po.issued_at = 1000;
	po.expires_at = 4600;
	po.fp_rate = 0.01;
	po.fixed_seed = true;
	cr_assert_eq(pair_build(&p, &tb, sc, 3, &po, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(p.info.expires_at, 1700);
	pair_free(&p);
	sc[2].next_update = 9000;	/* after the validity asked for */
	cr_assert_eq(pair_build(&p, &tb, sc, 3, &po, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(p.info.expires_at, 4600);
	pair_free(&p);

	po.layout = BLOOM_FUSE;
	po.fp_rate = 0.00001;
	cr_assert_eq(pair_build(&p, &tb, sc, 3, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "down to 2^-16") != NULL, "%s", err);
	cr_assert_null(p.filter);
	po.fp_rate = 0.001;
	cr_assert_eq(pair_build(&p, &tb, sc, 3, &po, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(p.bloom.width, 10);
	cr_assert_eq(p.info.width, 10);
	pair_free(&p);
	po.layout = BLOOM_FUSE8;
	cr_assert_eq(pair_build(&p, &tb, sc, 3, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "fixed FP rate 1/256") != NULL, "%s", err);
	cr_assert_null(p.filter);
	table_builder_free(&tb);
	EVP_PKEY_free(key);
}

/*
 * pair_build_publish refuses a version not above the current one before
 * any work, and on a failure of the filter step (in the main thread) or of
 * any fsync (the table's, in the writer thread, included) leaves the
 * directory exactly as it was: no temporary directory, the same current
 * pair.
 */
Test(pair, build_publish_failures_leave_the_directory_as_it_was)
{
	char dir[] = "/tmp/revcheck-pairf-XXXXXX", err[1024];
	char before[8192], after[8192], cmd[512];
	struct table_builder tb;
	struct ffile_scope sc;
	struct pair_opts po;
	struct pair p;
	struct revkey k;
	EVP_PKEY *key = gold_key();
	int i;

	table_builder_init(&tb);
	for (i = 0; i < 3000; i++) {
		char id[32];

		cr_assert(snprintf(id, sizeof(id), "tok-%d", i) > 0);
		cr_assert_eq(revkey_set(&k, "default", id, strlen(id)), 0);
		cr_assert_eq(table_builder_add(&tb, &k, i, NULL), 0);
	}
	table_builder_sort_unique(&tb);
	memset(&sc, 0, sizeof(sc));
	snprintf(sc.name, sizeof(sc.name), "%s", "default");
	sc.keys = 3000;
	sc.source = FFILE_SRC_LIST;
	memset(&po, 0, sizeof(po));
	po.key = key;
	po.version = 1;
	po.issued_at = 1000;
	po.expires_at = 4600;
	po.fp_rate = 0.001;
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(pair_build_publish(&p, &tb, &sc, 1, &po, dir, 3, err,
	    sizeof(err)), 0, "%s", err);
	pair_free(&p);
	dir_state(dir, before, sizeof(before));

	/* The same version again: refused, before anything is built. */
	cr_assert_eq(pair_build_publish(&p, &tb, &sc, 1, &po, dir, 3, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "not above the current version") != NULL, "%s",
	    err);
	cr_assert_null(p.filter);
	dir_state(dir, after, sizeof(after));
	cr_assert_str_eq(before, after);

	/* The filter step fails while the table is being written. */
	po.version = 2;
	po.layout = BLOOM_FUSE;
	po.fp_rate = 0.00001;
	cr_assert_eq(pair_build_publish(&p, &tb, &sc, 1, &po, dir, 3, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "down to 2^-16") != NULL, "%s", err);
	cr_assert_null(p.filter);
	dir_state(dir, after, sizeof(after));
	cr_assert_str_eq(before, after, "a failed filter step left traces");

	/* Each of the five fsyncs fails in turn (the first is the table's,
	 * in the writer thread). */
	po.layout = 0;
	po.fp_rate = 0.001;
	for (i = 1; i <= 5; i++) {
		g_fail_at = i;
		g_calls = 0;
		publish_set_fsync_hook(failing_fsync);
		cr_assert_eq(pair_build_publish(&p, &tb, &sc, 1, &po, dir, 3,
		    err, sizeof(err)), -1, "fsync %d failure ignored", i);
		publish_set_fsync_hook(NULL);
		cr_assert(strstr(err, "fsync") != NULL, "%s", err);
		cr_assert_eq(g_calls, i, "fsync retried after failure %d", i);
		cr_assert_null(p.filter);
		dir_state(dir, after, sizeof(after));
		cr_assert_str_eq(before, after, "fsync %d failure left traces",
		    i);
	}
	cr_assert_eq(pair_build_publish(&p, &tb, &sc, 1, &po, dir, 3, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.info.version, 2);
	pair_free(&p);
	cr_assert(snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir) > 0);
	cr_assert_eq(system(cmd), 0);
	table_builder_free(&tb);
	EVP_PKEY_free(key);
}
