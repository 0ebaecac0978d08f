/* mkseeds.c - writes valid table, delta and exact seeds for fuzz_table, fuzz_delta and fuzz_exact with the real encoders */
/*
 * Usage: mkseeds DIR (make fuzz-seeds): writes DIR/table/gen-*.rct,
 * DIR/delta/gen-*.rcd and DIR/exact/gen-*.rcx. Deltas are signed with a
 * fresh key each run (the harness does not check the signer), so their
 * last 96 bytes change from run to run; everything else is fixed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "exact.h"
#include "sign.h"
#include "table.h"
#include "util.h"

#define X509A	"x509:361c5cc1164bc83a3b9d4a528160f9f265d7717e93b79bfb5d89aeef8054216f"
#define X509B	"x509:0000000000000000000000000000000000000000000000000000000000000000"
#define T0	INT64_C(1700000000)

static const char *outdir;

static void
die(const char *what, const char *err)
{
	fprintf(stderr, "mkseeds: %s: %s\n", what, err);
	exit(1);
}

static void
put(const char *sub, const char *name, const unsigned char *p, size_t n)
{
	char path[4096];
	FILE *fp;

	if (snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name) >=
	    (int)sizeof(path))
		die(name, "path too long");
	if ((fp = fopen(path, "wb")) == NULL || fwrite(p, 1, n, fp) != n ||
	    fclose(fp) != 0)
		die(path, "cannot write");
}

static void
key(struct revkey *k, const char *scope, const void *id, size_t len)
{
	if (revkey_set(k, scope, id, len) != 0)
		die(scope, "bad key");
}

/* ---- tables -------------------------------------------------------------- */

struct trec {
	const char	*scope;
	const char	*id;
	size_t		 idlen;	/* 0: strlen(id) */
	int64_t		 at;
	const char	*reason;
};

static void
table(const char *name, const struct trec *r, size_t n)
{
	struct table_builder b;
	struct revkey k;
	unsigned char *out;
	size_t len, i;
	char err[512];

	table_builder_init(&b);
	for (i = 0; i < n; i++) {
		key(&k, r[i].scope, r[i].id, r[i].idlen ? r[i].idlen :
		    strlen(r[i].id));
		if (table_builder_add(&b, &k, r[i].at, r[i].reason) != 0)
			die(name, "add");
	}
	table_builder_sort_unique(&b);
	if (table_builder_encode(&b, &out, &len, err, sizeof(err)) != 0)
		die(name, err);
	put("table", name, out, len);
	free(out);
	table_builder_free(&b);
}

static void
tables(void)
{
	static const struct trec one[] = {
		{ "default", "tok-1", 0, 0, NULL },
	};
	static const struct trec mixed[] = {
		{ "default", "tok-1", 0, 0, NULL },
		{ "default", "tok-10", 0, T0, "superseded" },
		{ "default", "tok-2", 0, T0 + 1, "" },
		{ "tenant-a", "tok-4", 0, T0, "keyCompromise" },
		{ "https://a.example", "jti-1", 0, T0, NULL },
		{ "sub:https://a.example", "user-1", 0, T0 + 60, NULL },
		{ "sid:https://a.example", "s-1", 0, T0 + 60, NULL },
		{ X509A, "\x01", 1, T0, "keyCompromise" },
		{ X509A, "\x00", 1, T0, "cACompromise" },
		{ X509A, "\x00\x80", 2, T0, NULL },	/* serial -128 */
		{ X509A, "\x7f\xff\xff\xff\xff\xff\xff\xff\xff", 9, 0,
		    "cessationOfOperation" },
		{ X509B, "\x0a", 1, T0, "affiliationChanged" },
	};
	static char sc[REVKEY_SCOPE_MAX + 1], id[REVKEY_ID_MAX],
	    rs[TABLE_REASON_MAX];
	struct trec big[3], many[100];
	char ids[100][8];
	size_t i;

	table("gen-empty.rct", NULL, 0);
	table("gen-one.rct", one, 1);
	table("gen-mixed.rct", mixed, sizeof(mixed) / sizeof(mixed[0]));
	/* The longest scope, id and reason. */
	memset(sc, 'S', REVKEY_SCOPE_MAX);
	memset(id, 'i', sizeof(id));
	memset(rs, 'r', sizeof(rs) - 1);
	big[0] = (struct trec){ sc, id, REVKEY_ID_MAX, INT64_MAX, rs };
	big[1] = (struct trec){ "default", id, REVKEY_ID_MAX, 1, rs };
	big[2] = (struct trec){ "default", id, REVKEY_ID_MAX - 1, 0, NULL };
	table("gen-max.rct", big, 3);
	/* More records than the harness checks one by one; prefixes. */
	for (i = 0; i < 100; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%.*s", (int)(i % 7) + 1,
		    "aaaaaaa");
		ids[i][0] = (char)('a' + i / 7);
		many[i] = (struct trec){ i % 3 == 0 ? "default" : i % 3 == 1 ?
		    "tenant-a" : X509A, ids[i], 0, T0 + (int64_t)i,
		    i % 5 == 0 ? "keyCompromise" : NULL };
	}
	table("gen-100.rct", many, 100);
}

/* ---- deltas -------------------------------------------------------------- */

static EVP_PKEY *sk;

static void
delta(const char *name, enum delta_kind kind, uint64_t seq,
    const struct delta_entry *e, size_t n)
{
	struct delta_info in;
	unsigned char *out;
	size_t len;
	char err[512];

	memset(&in, 0, sizeof(in));
	in.kind = kind;
	in.base_version = 42;
	memset(in.base_sha256, 0xb5, 32);
	in.seq = seq;
	memset(in.prev_sha256, 0x9e, 32);
	in.issued_at = T0;
	in.expires_at = T0 + 3600;
	in.cursor = 1000 + seq;
	in.changed_at = seq > 0 ? T0 - 1 : 0;
	if (delta_encode(&in, e, n, sk, &out, &len, err, sizeof(err)) != 0)
		die(name, err);
	put("delta", name, out, len);
	free(out);
}

static void
ent(struct delta_entry *e, enum delta_op op, const char *scope,
    const void *id, size_t len, int64_t at, const char *reason)
{
	memset(e, 0, sizeof(*e));
	e->op = op;
	key(&e->rec.key, scope, id, len);
	if (op == DELTA_ADD) {
		e->rec.revoked_at = at;
		if (reason != NULL)
			snprintf(e->rec.reason, sizeof(e->rec.reason), "%s",
			    reason);
	}
}

static void
deltas(void)
{
	static struct delta_entry e[80];
	static char id[REVKEY_ID_MAX], sc[REVKEY_SCOPE_MAX + 1];
	char ids[64][8];
	size_t i;

	if ((sk = sign_keygen()) == NULL)
		die("keygen", "failed");
	delta("gen-head0.rcd", DELTA_KIND_HEAD, 0, NULL, 0);
	delta("gen-head7.rcd", DELTA_KIND_HEAD, 7, NULL, 0);
	ent(&e[0], DELTA_ADD, "default", "tok-1", 5, T0, NULL);
	delta("gen-add1.rcd", DELTA_KIND_DELTA, 1, e, 1);
	ent(&e[0], DELTA_REMOVE, "default", "tok-1", 5, 0, NULL);
	delta("gen-remove1.rcd", DELTA_KIND_DELTA, 2, e, 1);
	/* Several scopes, adds and removes, reasons, X.509 serials. */
	ent(&e[0], DELTA_ADD, "default", "tok-1", 5, T0, "superseded");
	ent(&e[1], DELTA_REMOVE, "default", "tok-10", 6, 0, NULL);
	ent(&e[2], DELTA_ADD, "default", "tok-2", 5, 0, NULL);
	ent(&e[3], DELTA_ADD, "sub:https://a.example", "user-1", 6, T0 + 60,
	    NULL);
	ent(&e[4], DELTA_ADD, "tenant-a", "tok-4", 5, T0, "keyCompromise");
	ent(&e[5], DELTA_ADD, X509A, "\x00", 1, T0, "cACompromise");
	ent(&e[6], DELTA_ADD, X509A, "\x00\x80", 2, T0, NULL);
	ent(&e[7], DELTA_REMOVE, X509A, "\x01", 1, 0, NULL);
	ent(&e[8], DELTA_ADD, X509B, "\x0a", 1, T0, "affiliationChanged");
	ent(&e[9], DELTA_ADD, "default", "tok-1", 5, T0 + 5, "keyCompromise");
	delta("gen-mixed.rcd", DELTA_KIND_DELTA, 3, e, 10);
	/* The longest scope, id and reason. */
	memset(sc, 'S', REVKEY_SCOPE_MAX);
	memset(id, 'i', sizeof(id));
	ent(&e[0], DELTA_ADD, sc, id, REVKEY_ID_MAX, INT64_MAX,
	    "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr");
	ent(&e[1], DELTA_REMOVE, "default", id, REVKEY_ID_MAX, 0, NULL);
	delta("gen-max.rcd", DELTA_KIND_DELTA, 4, e, 2);
	/* Prefixes in three scopes. */
	for (i = 0; i < 64; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%.*s", (int)(i % 7) + 1,
		    "aaaaaaa");
		ids[i][0] = (char)('a' + i / 7);
		ent(&e[i], i % 4 == 3 ? DELTA_REMOVE : DELTA_ADD, i % 3 == 0 ?
		    "default" : i % 3 == 1 ? "tenant-a" : X509A, ids[i],
		    strlen(ids[i]), T0 + (int64_t)i, i % 5 == 0 ?
		    "keyCompromise" : NULL);
	}
	delta("gen-64.rcd", DELTA_KIND_DELTA, 5, e, 64);
	EVP_PKEY_free(sk);
}

/* ---- exact structures ---------------------------------------------------- */

/* Keys "tenant" 0x00 "id-i", i < n, of which those with i % every == 0 when every > 0. */
struct xgen {
	uint64_t	 n, i, every;
	unsigned char	 key[40];
};

static int
xgen_rewind(void *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	((struct xgen *)arg)->i = 0;
	return 0;
}

static int
xgen_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct xgen *g = arg;
	int n;

	(void)err;
	(void)errlen;
	while (g->i < g->n && g->every > 0 && g->i % g->every != 0)
		g->i++;
	if (g->i >= g->n)
		return 0;
	memcpy(g->key, "tenant", 7);
	n = snprintf((char *)g->key + 7, sizeof(g->key) - 7, "id-%llu",
	    (unsigned long long)g->i++);
	if (n < 0 || (size_t)n >= sizeof(g->key) - 7)
		die("exact", "key too long");
	*key = g->key;
	*len = 7 + (size_t)n;
	return 1;
}

static void
exact_seed(const char *name, uint64_t nissued, uint64_t nrevoked,
    uint64_t every)
{
	struct xgen u = { .n = nissued }, r = { .n = nrevoked, .every = every };
	struct exact_src su = { &u, xgen_rewind, xgen_next };
	struct exact_src sr = { &r, xgen_rewind, xgen_next };
	struct exact_stats st;
	unsigned char *blob;
	size_t len;
	char err[256];

	if (exact_build(&sr, &su, 7, &blob, &len, &st, err, sizeof(err)) != 0)
		die(name, err);
	put("exact", name, blob, len);
	free(blob);
}

static void
exacts(void)
{
	exact_seed("gen-empty.rcx", 100, 0, 0);
	exact_seed("gen-one.rcx", 1000, 1, 0);
	exact_seed("gen-all.rcx", 200, 200, 0);
	exact_seed("gen-w1.rcx", 300, 300, 3);
	exact_seed("gen-w3.rcx", 2000, 2000, 10);
	exact_seed("gen-w6.rcx", 5000, 5000, 100);
	exact_seed("gen-outside.rcx", 500, 800, 7);
	exact_seed("gen-shards.rcx", 150000, 150000, 2);
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR\n");
		return 2;
	}
	outdir = argv[1];
	tables();
	deltas();
	exacts();
	return 0;
}
