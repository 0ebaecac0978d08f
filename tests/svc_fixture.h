/* svc_fixture.h - small signed filter/table pairs in memory for the svc unit tests (pair_build) */
#ifndef REVCHECK_TESTS_SVC_FIXTURE_H
#define REVCHECK_TESTS_SVC_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "bloom.h"
#include "ffile.h"
#include "pair.h"
#include "revkey.h"
#include "sign.h"
#include "table.h"
#include "util.h"

struct fx_rec {
	const char	*scope;
	const char	*id;		/* text, as revkey_from_text takes it */
	const char	*reason;
	int64_t		 revoked_at;
};

struct fx_pair {
	unsigned char	*filter;
	size_t		 flen;
	unsigned char	*table;
	size_t		 tlen;
};

/*
 * Builds a signed pair from records; extra_scopes names scopes covered
 * with no key. layout picks the filter layout; for classic and blocked, m
 * and k size the bloom (small m forces false positives), a fuse filter
 * sizes itself and ignores m; BLOOM_FUSE takes k, when in 4..16, as its
 * fingerprint width (target 2^-k; else the target 0.01, w = 7). Returns
 * 0, or -1.
 */
static inline int
fx_build_layout(enum bloom_layout layout, EVP_PKEY *key, uint64_t version,
    int64_t issued, int64_t expires, const struct fx_rec *recs, size_t n,
    const char **extra_scopes, size_t nextra, uint64_t m, uint32_t k,
    struct fx_pair *out);

/* fx_build_layout() with the classic layout. */
static inline int
fx_build(EVP_PKEY *key, uint64_t version, int64_t issued, int64_t expires,
    const struct fx_rec *recs, size_t n, const char **extra_scopes,
    size_t nextra, uint64_t m, uint32_t k, struct fx_pair *out)
{
	return fx_build_layout(BLOOM_CLASSIC, key, version, issued, expires,
	    recs, n, extra_scopes, nextra, m, k, out);
}

static inline int
fx_build_layout(enum bloom_layout layout, EVP_PKEY *key, uint64_t version,
    int64_t issued, int64_t expires, const struct fx_rec *recs, size_t n,
    const char **extra_scopes, size_t nextra, uint64_t m, uint32_t k,
    struct fx_pair *out)
{
	struct table_builder tb;
	struct ffile_scope sc[32];
	struct pair_opts po;
	struct pair pair;
	struct revkey key_i;
	char err[256];
	size_t i, j, ns = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(sc, 0, sizeof(sc));
	table_builder_init(&tb);
	for (i = 0; i < n; i++) {
		if (revkey_from_text(&key_i, recs[i].scope, recs[i].id,
		    strlen(recs[i].id), err, sizeof(err)) != 0 ||
		    table_builder_add(&tb, &key_i, recs[i].revoked_at,
		    recs[i].reason) != 0)
			goto out;
		for (j = 0; j < ns; j++)
			if (strcmp(sc[j].name, recs[i].scope) == 0)
				break;
		if (j == ns)
			snprintf(sc[ns++].name, sizeof(sc[0].name), "%s",
			    recs[i].scope);
		sc[j].keys++;
	}
	for (i = 0; i < nextra; i++)
		snprintf(sc[ns++].name, sizeof(sc[0].name), "%s",
		    extra_scopes[i]);
	table_builder_sort_unique(&tb);
	memset(&po, 0, sizeof(po));
	po.key = key;
	po.version = version;
	po.issued_at = issued;
	po.expires_at = expires;
	/* BLOOM_FUSE: k in 4..16 is the width, through the target 2^-k. */
	po.fp_rate = layout == BLOOM_FUSE && k >= 4 && k <= 16 ?
	    1.0 / (double)(UINT32_C(1) << k) : 0.01;
	po.layout = layout;
	po.m = m;
	po.k = k;
	po.seed = 0x1234;
	po.fixed_seed = true;
	if (pair_build(&pair, &tb, sc, ns, &po, err, sizeof(err)) != 0)
		goto out;
	if (table_builder_encode(&tb, &out->table, &out->tlen, err,
	    sizeof(err)) == 0) {
		out->filter = pair.filter;
		out->flen = pair.filter_len;
		pair.filter = NULL;
		rc = 0;
	}
	pair_free(&pair);
out:
	table_builder_free(&tb);
	return rc;
}

static inline void
fx_free(struct fx_pair *p)
{
	free(p->filter);
	free(p->table);
	memset(p, 0, sizeof(*p));
}

#endif
