/* inspect.c - filterbuild inspect and verify: header, scopes, staleness, signature, binding */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "crl.h"
#include "fb.h"
#include "delta.h"
#include "ffile.h"
#include "overlay.h"
#include "publish.h"
#include "sign.h"
#include "stale.h"
#include "table.h"
#include "util.h"

#define INSPECT_MAX_PUB SIGN_RING_MAX

/* What PATH names: the filter file and, when there is one, its table. */
struct target {
	char		 filter[4096];
	char		 table[4096];
	bool		 have_table;
	bool		 is_dir;
	bool		 have_current;	/* is_dir through DIR/current */
	uint64_t	 version;	/* of DIR/current */
};

/* The version before the one inspected, to show what changed. */
struct prev {
	const struct ffile_info *info;	/* NULL when there is none */
	char		 err[512];	/* why it could not be read, or "" */
};

struct check {
	bool		 sig_checked;
	bool		 sig_ok;
	char		 sig_err[512];
	bool		 table_ok;	/* opened and validated */
	char		 table_err[512];
	bool		 bind_ok;
	char		 bind_err[512];
};

/*
 * Resolves PATH: an output DIR (through "current"), a version directory,
 * or a filter file (with table.rct next to it, if present). 0, or -1 with
 * err.
 */
static int
resolve(const char *path, struct target *t, char *err, size_t errlen)
{
	struct stat st;
	char vdir[4096], dirpart[4096];
	const char *slash;
	uint64_t v;
	int rc, n;

	memset(t, 0, sizeof(*t));
	if (stat(path, &st) != 0) {
		n = snprintf(err, errlen, "%s", strerror(errno));
		(void)n;
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		t->is_dir = true;
		rc = publish_current(path, vdir, sizeof(vdir), &v, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 1) {
			/* Perhaps a version directory itself. */
			if (strlen(path) >= sizeof(vdir)) {
				(void)snprintf(err, errlen, "path too long");
				return -1;
			}
			memcpy(vdir, path, strlen(path) + 1);
		}
		if (util_path_join(t->filter, sizeof(t->filter), vdir,
		    PUBLISH_FILTER_NAME) != 0 ||
		    util_path_join(t->table, sizeof(t->table), vdir,
		    PUBLISH_TABLE_NAME) != 0) {
			(void)snprintf(err, errlen, "path too long");
			return -1;
		}
		if (stat(t->filter, &st) != 0) {
			(void)snprintf(err, errlen, rc == 1 ?
			    "no published filter (no \"current\" and no %s)" :
			    "%s missing", PUBLISH_FILTER_NAME);
			return -1;
		}
		t->have_table = true;
		t->have_current = rc == 0;
		t->version = v;
		return 0;
	}
	if (strlen(path) >= sizeof(t->filter)) {
		(void)snprintf(err, errlen, "path too long");
		return -1;
	}
	memcpy(t->filter, path, strlen(path) + 1);
	slash = strrchr(path, '/');
	if (slash == NULL) {
		memcpy(dirpart, ".", 2);
	} else {
		n = (int)(slash - path);
		if ((size_t)n >= sizeof(dirpart)) {
			(void)snprintf(err, errlen, "path too long");
			return -1;
		}
		memcpy(dirpart, path, (size_t)n);
		dirpart[n] = '\0';
		if (n == 0)
			memcpy(dirpart, "/", 2);
	}
	if (util_path_join(t->table, sizeof(t->table), dirpart,
	    PUBLISH_TABLE_NAME) == 0 &&
	    stat(t->table, &st) == 0 && S_ISREG(st.st_mode))
		t->have_table = true;
	return 0;
}

static void
run_checks(const struct ffile *f, struct table *tab, const char *table_err,
    const struct sign_ring *ring, struct check *c)
{
	const struct ffile_info *in = ffile_info(f);

	memset(c, 0, sizeof(*c));
	if (ring != NULL && ring->n > 0) {
		c->sig_checked = true;
		c->sig_ok = ffile_verify(f, ring, c->sig_err,
		    sizeof(c->sig_err)) == 0;
	}
	if (tab != NULL) {
		c->table_ok = true;
		c->bind_ok = table_check_binding(tab, in->table_sha256,
		    in->table_len, c->bind_err, sizeof(c->bind_err)) == 0;
	} else if (table_err != NULL) {
		(void)snprintf(c->table_err, sizeof(c->table_err), "%s",
		    table_err);
	}
}


/* Table records whose key the filter does not answer "possibly present". */
static uint64_t
missing_from_filter(const struct ffile *f, const struct table *tab)
{
	struct table_rec r;
	uint64_t i, miss = 0;

	for (i = 0; i < table_count(tab); i++)
		if (table_get(tab, i, &r) != 0 || !ffile_query(f, &r.key))
			miss++;
	return miss;
}

/* One record as "scope<TAB>id<TAB>revoked_at<TAB>reason", "-" when unknown. */
static void
print_record(FILE *fp, const struct table_rec *r)
{
	char id[REVKEY_ID_TEXT_MAX], ts[UTIL_RFC3339_LEN];
	size_t i, n = revkey_id_text(&r->key, id);

	fprintf(fp, "%s\t", r->key.scope);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];

		if (c < 0x21 || c > 0x7e || c == '\\')
			fprintf(fp, "\\x%02x", c);
		else
			fputc(c, fp);
	}
	if (r->revoked_at != 0) {
		util_rfc3339(ts, r->revoked_at);
		fprintf(fp, "\t%s", ts);
	} else {
		fputs("\t-", fp);
	}
	fprintf(fp, "\t%s\n", r->reason[0] ? r->reason : "-");
}

static void
print_records(const struct table *tab)
{
	struct table_rec r;
	uint64_t i;

	for (i = 0; i < table_count(tab); i++)
		if (table_get(tab, i, &r) == 0)
			print_record(stdout, &r);
}

static const char *
source_name(enum ffile_source s)
{
	return s == FFILE_SRC_CRL ? "crl" : "list";
}

static int
load_ring(struct sign_ring *ring, const char **pubs, size_t npubs,
    const char *cmd)
{
	char err[512];
	size_t i;

	sign_ring_init(ring);
	for (i = 0; i < npubs; i++) {
		if (sign_ring_add(ring, pubs[i], err, sizeof(err)) != 0) {
			fb_err("%s: %s", cmd, err);
			sign_ring_free(ring);
			return -1;
		}
	}
	return 0;
}

/* Adds a string member; false when out of memory. */
static bool
jstr(cJSON *o, const char *name, const char *v)
{
	return cJSON_AddStringToObject(o, name, v) != NULL;
}

static bool
jnum(cJSON *o, const char *name, double v)
{
	return cJSON_AddNumberToObject(o, name, v) != NULL;
}

static bool
jbool(cJSON *o, const char *name, bool v)
{
	return cJSON_AddBoolToObject(o, name, v) != NULL;
}

static bool
jtime(cJSON *o, const char *name, int64_t t)
{
	char s[UTIL_RFC3339_LEN];

	util_rfc3339(s, t);
	return jstr(o, name, s);
}

static bool
jhex(cJSON *o, const char *name, const unsigned char *p, size_t n)
{
	char s[2 * 64 + 1];

	util_hex(s, p, n);
	return jstr(o, name, s);
}

/*
 * Opens the version before DIR/current, if DIR keeps one. Returns the
 * filter (close it) or NULL, with p->err set when it exists but cannot be
 * read.
 */
static struct ffile *
open_previous(const char *path, const struct target *t, struct prev *p)
{
	char vdir[4096], file[4200];
	uint64_t v;
	struct ffile *f;

	memset(p, 0, sizeof(*p));
	if (!t->have_current || publish_previous(path, t->version, vdir,
	    sizeof(vdir), &v, p->err, sizeof(p->err)) != 0)
		return NULL;
	if (util_path_join(file, sizeof(file), vdir, PUBLISH_FILTER_NAME) != 0) {
		(void)snprintf(p->err, sizeof(p->err), "path too long");
		return NULL;
	}
	if ((f = ffile_open(file, p->err, sizeof(p->err))) != NULL)
		p->info = ffile_info(f);
	return f;
}

/* The key count of scope name in the previous version; false if absent. */
static bool
prev_keys(const struct prev *p, const char *name, uint64_t *keys)
{
	uint32_t i;

	for (i = 0; p->info != NULL && i < p->info->nscopes; i++)
		if (strcmp(p->info->scopes[i].name, name) == 0) {
			*keys = p->info->scopes[i].keys;
			return true;
		}
	return false;
}

/* True when the inspected version has a scope named name. */
static bool
has_scope(const struct ffile_info *in, const char *name)
{
	uint32_t i;

	for (i = 0; i < in->nscopes; i++)
		if (strcmp(in->scopes[i].name, name) == 0)
			return true;
	return false;
}

/* "coverage": [] (whole) or one {kind, reasons, distribution_point}. */
static bool
json_coverage(cJSON *s, const struct ffile_scope *sc)
{
	cJSON *arr = cJSON_AddArrayToObject(s, "coverage"), *p, *rs;
	char hex[65];
	unsigned i;
	int b;

	if (arr == NULL)
		return false;
	for (i = 0; i < sc->npart; i++) {
		if ((p = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(arr, p))
			return false;
		if (!jstr(p, "kind", crl_part_kind_name(sc->part[i].kind)) ||
		    (rs = cJSON_AddArrayToObject(p, "reasons")) == NULL)
			return false;
		for (b = 1; b <= 8; b++)
			if ((sc->part[i].reasons & (1u << b)) != 0 &&
			    !cJSON_AddItemToArray(rs, cJSON_CreateString(
			    crl_reason_flag_name(b))))
				return false;
		util_hex(hex, sc->part[i].dp, 32);
		if (!jstr(p, "distribution_point", hex) ||
		    !jbool(p, "indirect", (sc->part[i].flags &
		    FFILE_PART_INDIRECT) != 0) ||
		    !jbool(p, "delegated", (sc->part[i].flags &
		    FFILE_PART_DELEGATED) != 0))
			return false;
		util_hex(hex, sc->part[i].crl_issuer, 32);
		if (!jstr(p, "crl_issuer_scope_hash", hex) ||
		    !jstr(p, "crl_number", sc->part[i].crl_number) ||
		    !jtime(p, "this_update", sc->part[i].this_update))
			return false;
	}
	return true;
}

/* The coverage lines of a CRL scope in the text output. */
static void
print_coverage(const struct ffile_scope *sc)
{
	char hex[65];
	unsigned i;
	int b;

	if (sc->npart == 0 && (sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0) {
		printf("    coverage:      none by itself (only certificates "
		    "naming a cRLIssuer with an indirect CRL here)\n");
		return;
	}
	if (sc->npart == 0) {
		printf("    coverage:      whole (no issuingDistributionPoint)\n");
		return;
	}
	for (i = 0; i < sc->npart; i++) {
		printf("    coverage:      part: %s certificates, ",
		    sc->part[i].kind == FFILE_PART_USER ? "user" :
		    sc->part[i].kind == FFILE_PART_CA ? "CA" : "all");
		if (sc->part[i].reasons == FFILE_REASONS_ALL)
			printf("every reason");
		else
			for (b = 1; b <= 8; b++)
				if ((sc->part[i].reasons & (1u << b)) != 0)
					printf("%s%s", crl_reason_flag_name(b),
					    (sc->part[i].reasons >> (b + 1)) != 0 ?
					    " " : "");
		util_hex(hex, sc->part[i].dp, 32);
		printf(", distribution point %.16s", hex);
		util_hex(hex, sc->part[i].crl_issuer, 32);
		printf(", CRL x509:%.16s... number %s%s%s\n", hex,
		    sc->part[i].crl_number[0] != '\0' ?
		    sc->part[i].crl_number : "(none)",
		    (sc->part[i].flags & FFILE_PART_INDIRECT) != 0 ?
		    ", indirect (also for certificates naming its issuer as "
		    "cRLIssuer)" : "",
		    (sc->part[i].flags & FFILE_PART_DELEGATED) != 0 ?
		    ", delegated (--delegate)" : "");
	}
}

/*
 * The header's members of root: the file, its layout, hashing and fill,
 * the signer, the table it names and its staleness as of now. false when
 * out of memory.
 */
static bool
json_header(cJSON *root, const char *path, const struct target *t,
    const struct ffile *f, int64_t now)
{
	const struct ffile_info *in = ffile_info(f);
	const struct bloom *b = ffile_bloom(f);
	unsigned char sb[8];
	char seed[17];
	size_t len;
	uint32_t i;
	bool ok = true;

	(void)ffile_bytes(f, &len);
	for (i = 0; i < 8; i++)
		sb[i] = (unsigned char)(in->seed >> (56 - 8 * i));
	util_hex(seed, sb, 8);
	ok = ok && jstr(root, "path", path);
	ok = ok && jstr(root, "filter", t->filter);
	ok = ok && jnum(root, "filter_bytes", (double)len);
	ok = ok && jhex(root, "filter_sha256", ffile_sha256(f), 32);
	ok = ok && jnum(root, "format", in->format);
	ok = ok && jstr(root, "layout", bloom_layout_name(in->layout));
	ok = ok && jnum(root, "version", (double)in->version);
	ok = ok && jtime(root, "issued_at", in->issued_at);
	ok = ok && jtime(root, "expires_at", in->expires_at);
	ok = ok && jnum(root, "keys", (double)in->keys);
	ok = ok && jnum(root, "bits", (double)in->m);
	ok = ok && jnum(root, "hashes", in->k);
	if (bloom_fuse_packed(in->layout) || in->layout == BLOOM_FUSE8) {
		ok = ok && jnum(root, "segment_length",
		    (double)(UINT64_C(1) << in->seglog));
		ok = ok && jnum(root, "fingerprint_bits", b->width);
	}
	ok = ok && jstr(root, "seed", seed);
	ok = ok && jnum(root, "fp_rate_target", in->fp_rate_target);
	ok = ok && jnum(root, "set_bits", (double)bloom_popcount(b));
	ok = ok && jnum(root, "fill_ratio", bloom_fill_ratio(b));
	ok = ok && jnum(root, "estimated_fp_rate", bloom_estimated_fp(b));
	ok = ok && jhex(root, "signer", in->signer, SIGN_KEYID_LEN);
	ok = ok && jhex(root, "table_sha256", in->table_sha256, 32);
	ok = ok && jnum(root, "table_bytes", (double)in->table_len);
	ok = ok && jnum(root, "now", (double)now);
	ok = ok && jnum(root, "expires_in_seconds",
	    (double)(in->expires_at - now));
	ok = ok && jbool(root, "expired", ffile_expired(f, now));
	ok = ok && jbool(root, "stale", ffile_expired(f, now));
	return ok;
}

/* An exact scope's structure: its size against the bound (exact.h). */
static bool
json_exact(cJSON *s, const struct ffile_scope *sc)
{
	double bound = exact_bound_bits(sc->ex.issued, sc->keys);
	double bits = (double)sc->ex.blob_len * 8;
	cJSON *e = cJSON_AddObjectToObject(s, "exact");
	bool ok = e != NULL;

	ok = ok && jtime(e, "cutoff", sc->ex.cutoff);
	ok = ok && jnum(e, "issued", (double)sc->ex.issued);
	ok = ok && jnum(e, "revoked", (double)sc->keys);
	ok = ok && jnum(e, "fingerprint_bits", sc->ex.view.w);
	ok = ok && jnum(e, "bits", bits);
	ok = ok && jnum(e, "bound_bits", bound);
	ok = ok && (bound > 0 ? jnum(e, "ratio", bits / bound) :
	    cJSON_AddNullToObject(e, "ratio") != NULL);
	return ok;
}

static void
text_exact(const struct ffile_scope *sc)
{
	double bound = exact_bound_bits(sc->ex.issued, sc->keys);
	char ts[UTIL_RFC3339_LEN];

	util_rfc3339(ts, sc->ex.cutoff);
	printf("    exact:         |U| %" PRIu64 ", |R| %" PRIu64 ", w %" PRIu32
	    ", %zu bits, bound %.0f bits, ratio %.3f, cutoff %s\n",
	    sc->ex.issued, sc->keys, sc->ex.view.w, sc->ex.blob_len * 8, bound,
	    bound > 0 ? (double)sc->ex.blob_len * 8 / bound : 0.0, ts);
}

/*
 * One scope's members: its keys (and the change since the previous
 * version, when there is one), its source and, for a CRL scope, the CRL
 * and its coverage. false when out of memory.
 */
static bool
json_scope(cJSON *s, const struct ffile_scope *sc, const struct prev *pv,
    int64_t now)
{
	uint64_t pk;
	bool ok = true, had;

	ok = ok && jstr(s, "scope", sc->name);
	ok = ok && jnum(s, "keys", (double)sc->keys);
	if (pv->info != NULL) {
		had = prev_keys(pv, sc->name, &pk);
		ok = ok && (had ? jnum(s, "previous_keys", (double)pk) :
		    cJSON_AddNullToObject(s, "previous_keys") != NULL);
		ok = ok && jnum(s, "keys_change", (double)sc->keys -
		    (had ? (double)pk : 0.0));
	}
	ok = ok && jstr(s, "source", source_name(sc->source));
	if (sc->exact)
		ok = ok && json_exact(s, sc);
	if (sc->source != FFILE_SRC_CRL)
		return ok;
	ok = ok && jstr(s, "issuer", sc->issuer);
	ok = ok && jstr(s, "crl_number", sc->crl_number);
	ok = ok && jtime(s, "this_update", sc->this_update);
	if (sc->next_update != 0) {
		ok = ok && jtime(s, "next_update", sc->next_update);
		ok = ok && jbool(s, "crl_expired", now >= sc->next_update);
	}
	ok = ok && jhex(s, "crl_sha256", sc->crl_sha256, 32);
	ok = ok && jbool(s, "crl_verified",
	    (sc->flags & FFILE_SCOPE_UNVERIFIED) == 0);
	ok = ok && jbool(s, "next_update_assumed",
	    (sc->flags & FFILE_SCOPE_ASSUMED_NEXT) != 0);
	ok = ok && json_coverage(s, sc);
	ok = ok && jbool(s, "kept_from_previous",
	    (sc->flags & FFILE_SCOPE_KEPT) != 0);
	ok = ok && jbool(s, "attributed",
	    (sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0);
	return ok;
}

/* A new object appended to arr; NULL when out of memory. */
static cJSON *
json_append_object(cJSON *arr)
{
	cJSON *s = cJSON_CreateObject();

	if (s == NULL || !cJSON_AddItemToArray(arr, s)) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/*
 * "scopes", one object each (json_scope), and against the previous
 * version "previous_version" and "dropped_scopes" (or "previous_error"
 * when it exists but cannot be read). false when out of memory.
 */
static bool
json_scopes(cJSON *root, const struct ffile_info *in, const struct prev *pv,
    int64_t now)
{
	const struct ffile_scope *ps;
	cJSON *arr, *s;
	uint32_t i;

	if ((arr = cJSON_AddArrayToObject(root, "scopes")) == NULL)
		return false;
	for (i = 0; i < in->nscopes; i++)
		if ((s = json_append_object(arr)) == NULL ||
		    !json_scope(s, &in->scopes[i], pv, now))
			return false;
	if (pv->info == NULL)
		return pv->err[0] == '\0' ||
		    jstr(root, "previous_error", pv->err);
	if (!jnum(root, "previous_version", (double)pv->info->version) ||
	    (arr = cJSON_AddArrayToObject(root, "dropped_scopes")) == NULL)
		return false;
	for (i = 0; i < pv->info->nscopes; i++) {
		ps = &pv->info->scopes[i];
		if (has_scope(in, ps->name))
			continue;
		if ((s = json_append_object(arr)) == NULL ||
		    !jstr(s, "scope", ps->name) ||
		    !jnum(s, "previous_keys", (double)ps->keys))
			return false;
	}
	return true;
}

/*
 * "table" (when PATH has one) and, with --pub, the signature's members.
 * false when out of memory.
 */
static bool
json_checks(cJSON *root, const struct target *t, const struct ffile *f,
    const struct table *tab, const struct check *c)
{
	cJSON *tj;
	bool ok = true;

	if (t->have_table) {
		tj = cJSON_AddObjectToObject(root, "table");
		ok = tj != NULL;
		ok = ok && jstr(tj, "path", t->table);
		if (ok && tab != NULL) {
			ok = ok && jnum(tj, "records", (double)table_count(tab));
			ok = ok && jnum(tj, "bytes", (double)table_size(tab));
			ok = ok && jhex(tj, "sha256", table_sha256(tab), 32);
			ok = ok && jbool(tj, "binding_ok", c->bind_ok);
			ok = ok && jnum(tj, "records_missing_from_filter",
			    (double)missing_from_filter(f, tab));
			if (!c->bind_ok)
				ok = ok && jstr(tj, "binding_error",
				    c->bind_err);
		} else if (ok) {
			ok = ok && jstr(tj, "error", c->table_err);
		}
	}
	if (ok && c->sig_checked) {
		ok = ok && jbool(root, "signature_ok", c->sig_ok);
		if (!c->sig_ok)
			ok = ok && jstr(root, "signature_error", c->sig_err);
		ok = ok && jbool(root, "verified", c->sig_ok && c->bind_ok);
	}
	return ok;
}

static int
print_json(const char *path, const struct target *t, const struct ffile *f,
    const struct table *tab, const struct check *c, const struct prev *pv,
    int64_t now)
{
	cJSON *root;
	char *text;

	if ((root = cJSON_CreateObject()) == NULL)
		return -1;
	if (!json_header(root, path, t, f, now) ||
	    !json_scopes(root, ffile_info(f), pv, now) ||
	    !json_checks(root, t, f, tab, c)) {
		cJSON_Delete(root);
		return -1;
	}
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (text == NULL)
		return -1;
	printf("%s\n", text);
	cJSON_free(text);
	return 0;
}

static void
print_duration(FILE *fp, int64_t s)
{
	if (s >= 86400)
		fprintf(fp, "%" PRId64 "d%02" PRId64 "h%02" PRId64 "m%02" PRId64
		    "s", s / 86400, s % 86400 / 3600, s % 3600 / 60, s % 60);
	else if (s >= 3600)
		fprintf(fp, "%" PRId64 "h%02" PRId64 "m%02" PRId64 "s", s / 3600,
		    s % 3600 / 60, s % 60);
	else if (s >= 60)
		fprintf(fp, "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
	else
		fprintf(fp, "%" PRId64 "s", s);
}

/* The header lines of the text output, down to the number of scopes. */
static void
text_header(const struct target *t, const struct ffile *f, int64_t now)
{
	const struct ffile_info *in = ffile_info(f);
	const struct bloom *b = ffile_bloom(f);
	char hex[65], ts[UTIL_RFC3339_LEN];
	size_t len;

	(void)ffile_bytes(f, &len);
	printf("filter:            %s (%zu bytes)\n", t->filter, len);
	util_hex(hex, ffile_sha256(f), 32);
	printf("filter sha256:     %s\n", hex);
	printf("format:            %u\n", (unsigned)in->format);
	printf("layout:            %s\n", bloom_layout_name(in->layout));
	printf("version:           %" PRIu64 "\n", in->version);
	util_rfc3339(ts, in->issued_at);
	printf("issued at:         %s\n", ts);
	util_rfc3339(ts, in->expires_at);
	printf("expires at:        %s\n", ts);
	if (ffile_expired(f, now)) {
		printf("staleness:         STALE, expired ");
		print_duration(stdout, now - in->expires_at);
		printf(" ago\n");
	} else {
		printf("staleness:         fresh, expires in ");
		print_duration(stdout, in->expires_at - now);
		printf("\n");
	}
	printf("keys:              %" PRIu64 "\n", in->keys);
	printf("bits (m):          %" PRIu64 " (%zu bytes)\n", in->m,
	    bloom_array_len(in->layout, in->m));
	printf("hashes (k):        %" PRIu32 "\n", in->k);
	if (bloom_fuse_packed(in->layout) || in->layout == BLOOM_FUSE8)
		printf("segment length:    %" PRIu64 " cells of %" PRIu32
		    " bits\n", UINT64_C(1) << in->seglog, b->width);
	printf("seed:              %016" PRIx64 "\n", in->seed);
	printf("fp rate target:    %g\n", in->fp_rate_target);
	printf("fill ratio:        %.6f\n", bloom_fill_ratio(b));
	printf("estimated fp rate: %.6g\n", bloom_estimated_fp(b));
	util_hex(hex, in->signer, SIGN_KEYID_LEN);
	printf("signer:            %s\n", hex);
	util_hex(hex, in->table_sha256, 32);
	printf("table sha256:      %s\n", hex);
	printf("table bytes:       %" PRIu64 "\n", in->table_len);
	printf("scopes:            %" PRIu32 "\n", in->nscopes);
}

/*
 * One scope's lines: its keys and their change since the previous
 * version and, for a CRL scope, the CRL, its signature and coverage.
 */
static void
text_scope(const struct ffile_scope *sc, const struct prev *pv, int64_t now)
{
	char hex[65], ts[UTIL_RFC3339_LEN];
	uint64_t pk;

	printf("  %s: %" PRIu64 " keys, source %s", sc->name, sc->keys,
	    source_name(sc->source));
	if (pv->info != NULL && prev_keys(pv, sc->name, &pk))
		printf(", %+" PRId64 " since version %" PRIu64,
		    (int64_t)(sc->keys - pk), pv->info->version);
	else if (pv->info != NULL)
		printf(", new since version %" PRIu64,
		    pv->info->version);
	printf("\n");
	if (sc->exact)
		text_exact(sc);
	if (sc->source != FFILE_SRC_CRL)
		return;
	printf("    issuer:        %s\n", sc->issuer);
	printf("    crl number:    %s\n",
	    sc->crl_number[0] ? sc->crl_number : "(none)");
	util_rfc3339(ts, sc->this_update);
	printf("    this update:   %s\n", ts);
	if (sc->next_update != 0) {
		util_rfc3339(ts, sc->next_update);
		printf("    next update:   %s%s\n", ts,
		    now >= sc->next_update ? " (past)" : "");
	}
	util_hex(hex, sc->crl_sha256, 32);
	printf("    crl sha256:    %s\n", hex);
	printf("    signature:     %s\n",
	    (sc->flags & FFILE_SCOPE_UNVERIFIED) != 0 ?
	    "NOT VERIFIED (--unverified-crl)" :
	    "verified against its issuer");
	print_coverage(sc);
	if ((sc->flags & FFILE_SCOPE_KEPT) != 0)
		printf("    kept:          from the previous version: its "
		    "new CRL was bad (--keep-going)\n");
	if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0)
		printf("    attributed:    no CRL of its own: entries an "
		    "indirect CRL of another issuer listed%s\n",
		    sc->npart == 0 ? "; covers nothing by itself" : "");
	if ((sc->flags & FFILE_SCOPE_ASSUMED_NEXT) != 0)
		printf("    next update:   assumed: the CRL has none "
		    "(--crl-validity)\n");
}

/* The table's lines (when PATH has one) and, with --pub, the signature's. */
static void
text_checks(const struct target *t, const struct ffile *f,
    const struct table *tab, const struct check *c)
{
	char hex[65];

	if (t->have_table) {
		if (tab != NULL) {
			util_hex(hex, table_sha256(tab), 32);
			printf("table:             %s (%" PRIu64 " records, %"
			    PRIu64 " bytes)\n", t->table, table_count(tab),
			    table_size(tab));
			printf("records in filter: %" PRIu64 " missing\n",
			    missing_from_filter(f, tab));
			printf("table binding:     %s%s\n",
			    c->bind_ok ? "ok" : "MISMATCH: ",
			    c->bind_ok ? "" : c->bind_err);
		} else {
			printf("table:             %s: INVALID: %s\n", t->table,
			    c->table_err);
		}
	}
	if (c->sig_checked)
		printf("signature:         %s%s\n",
		    c->sig_ok ? "valid" : "INVALID: ",
		    c->sig_ok ? "" : c->sig_err);
}

static void
print_text(const struct target *t, const struct ffile *f,
    const struct table *tab, const struct check *c, const struct prev *pv,
    int64_t now)
{
	const struct ffile_info *in = ffile_info(f);
	uint32_t i;

	text_header(t, f, now);
	if (pv->info != NULL)
		printf("changes since:     version %" PRIu64 "\n",
		    pv->info->version);
	else if (pv->err[0] != '\0')
		printf("changes since:     previous version unreadable: %s\n",
		    pv->err);
	for (i = 0; i < in->nscopes; i++)
		text_scope(&in->scopes[i], pv, now);
	for (i = 0; pv->info != NULL && i < pv->info->nscopes; i++)
		if (!has_scope(in, pv->info->scopes[i].name))
			printf("  %s: DROPPED since version %" PRIu64 " (had %"
			    PRIu64 " keys)\n", pv->info->scopes[i].name,
			    pv->info->version, pv->info->scopes[i].keys);
	text_checks(t, f, tab, c);
}

static void
inspect_usage(FILE *fp)
{
	fputs("usage: filterbuild inspect [--json | --records] [--pub PUB.pem]... "
	    "PATH\n"
	    "\n"
	    "PATH is a filter file or an output DIR (its current pair). Prints\n"
	    "every header field, per-scope coverage and CRL metadata, fill ratio,\n"
	    "estimated false-positive rate and staleness; for a DIR (or a filter\n"
	    "with table.rct beside it) the table too. With --pub, whether the\n"
	    "signature and the table binding verify. Exit status 1 when the file\n"
	    "cannot be parsed, or when --pub is given and verification fails.\n"
	    "\n"
	    "  --json          one JSON object instead of text\n"
	    "  --records       list the table's records instead, one per line:\n"
	    "                  scope, id (hex serial for X.509), revoked_at, reason\n"
	    "                  (tab-separated, \"-\" when unknown)\n"
	    "  --pub PUB.pem   trusted public key (repeatable)\n"
	    "  --help          this text\n", fp);
}

static void
verify_usage(FILE *fp)
{
	fputs("usage: filterbuild verify --pub PUB.pem [--pub PUB.pem]... "
	    "[--table TABLE] PATH\n"
	    "\n"
	    "Exit 0 only when the filter's format and signature and its table\n"
	    "binding are all valid (and every table record is in the filter);\n"
	    "otherwise exit 1 with one line saying why.\n"
	    "PATH is a filter file (its table is table.rct beside it, or --table)\n"
	    "or an output DIR (its current pair). A delta chain beside the filter\n"
	    "(delta/, from filterbuild follow) must verify and link too.\n"
	    "\n"
	    "  --pub PUB.pem   trusted public key (repeatable)\n"
	    "  --table TABLE   the table, when it is not beside the filter\n"
	    "  --records       print the effective records (table and chain), one\n"
	    "                  per line: scope, id, revoked_at, reason\n"
	    "  --quiet         print nothing on success\n"
	    "  --fresh         also fail when revcheckd would refuse it as stale:\n"
	    "                  expired (the newest head's expiry, with a chain),\n"
	    "                  older than --max-age, or issued over 300 s ahead\n"
	    "  --max-age DUR   with --fresh: revcheckd's max_age (default 2h; 0:\n"
	    "                  none)\n"
	    "  --help          this text\n", fp);
}

int
fb_inspect(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument,	     NULL, 'j' },
		{ "records", no_argument,    NULL, 'r' },
		{ "pub",  required_argument, NULL, 'p' },
		{ "help", no_argument,	     NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubs[INSPECT_MAX_PUB], *path;
	size_t npubs = 0;
	bool json = false, records = false;
	struct target t;
	struct sign_ring ring;
	struct ffile *f = NULL, *pf = NULL;
	struct table *tab = NULL;
	struct check c;
	struct prev pv;
	char err[1024], terr[1024];
	int64_t now;
	int ch, ret = FB_EXIT_FAIL;

	fb_getopt_reset();
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': json = true; break;
		case 'r': records = true; break;
		case 'p':
			if (npubs == INSPECT_MAX_PUB)
				return fb_usage_err("inspect", "more than %d "
				    "--pub options", INSPECT_MAX_PUB);
			pubs[npubs++] = optarg;
			break;
		case 'h': inspect_usage(stdout); return FB_EXIT_OK;
		default: return fb_usage_err("inspect", "bad option");
		}
	}
	if (argc - optind != 1)
		return fb_usage_err("inspect", "want exactly one PATH");
	path = argv[optind];
	if (load_ring(&ring, pubs, npubs, "inspect") != 0)
		return FB_EXIT_FAIL;
	if (resolve(path, &t, err, sizeof(err)) != 0) {
		fb_err("inspect: %s: %s", path, err);
		goto out;
	}
	f = ffile_open(t.filter, err, sizeof(err));
	if (f == NULL) {
		fb_err("inspect: %s", err);
		goto out;
	}
	terr[0] = '\0';
	if (t.have_table)
		tab = table_open(t.table, terr, sizeof(terr));
	run_checks(f, tab, t.have_table ? terr : NULL, &ring, &c);
	now = util_now();
	pf = open_previous(path, &t, &pv);
	if (json) {
		if (print_json(path, &t, f, tab, &c, &pv, now) != 0) {
			fb_err("inspect: out of memory");
			goto out;
		}
	} else if (!records) {
		print_text(&t, f, tab, &c, &pv, now);
	} else if (tab != NULL) {
		print_records(tab);
	} else {
		fb_err("inspect: %s: %s", path, t.have_table ? terr :
		    "no table beside the filter");
		goto out;
	}
	ret = FB_EXIT_OK;
	if (c.sig_checked && (!c.sig_ok || !c.bind_ok))
		ret = FB_EXIT_FAIL;
out:
	ffile_close(pf);
	table_close(tab);
	ffile_close(f);
	sign_ring_free(&ring);
	return ret;
}

struct chain_sum {
	struct overlay	*ov;
	uint64_t	 entries;
};

/* delta_chain_walk's callback: the overlay takes each delta. */
static int
chain_apply(void *arg, const struct delta *d)
{
	struct chain_sum *sum = arg;

	sum->entries += delta_info(d)->nentries;
	return overlay_apply(sum->ov, d);
}

/*
 * Verifies the delta chain beside a verified base (the base's delta/
 * directory, when there is one) and prints where it ends; with list,
 * prints the effective records: the table's, less the keys the chain
 * removed, plus those it added. 0, or -1 after a message.
 */
static int
verify_chain(const char *path, const struct target *t, const struct ffile *f,
    const struct table *tab, const struct sign_ring *ring, bool quiet,
    bool list, struct ffile_info *eff)
{
	char ddir[4200], err[1024], until[UTIL_RFC3339_LEN];
	const char *slash = strrchr(t->filter, '/');
	struct overlay *ov = NULL;
	struct delta *head = NULL;
	struct chain_sum sum;
	struct delta_pos pos;
	struct table_rec r;
	uint64_t i, head_seq;
	size_t it = 0;
	int op, rc = -1;

	snprintf(ddir, sizeof(ddir), "%.*s/" DELTA_DIR, slash == NULL ? 1 :
	    (int)(slash - t->filter), slash == NULL ? "." : t->filter);
	memset(&pos, 0, sizeof(pos));
	pos.base_version = ffile_info(f)->version;
	memcpy(pos.base_sha256, ffile_sha256(f), 32);
	memcpy(pos.last_sha256, pos.base_sha256, 32);
	if ((ov = overlay_new()) == NULL) {
		fb_err("verify: no memory or no random seed for the delta "
		    "overlay");
		return -1;
	}
	sum.ov = ov;
	sum.entries = 0;
	if (delta_chain_walk(ddir, ring, &pos, chain_apply, &sum, &head,
	    &head_seq, err, sizeof(err)) != 0) {
		fb_err("verify: %s: delta chain: %s", path, err);
		goto out;
	}
	/* A head extends the chain's validity, as revcheckd takes it. */
	if (head != NULL) {
		eff->issued_at = delta_info(head)->issued_at;
		eff->expires_at = delta_info(head)->expires_at;
	}
	if (!quiet && (pos.seq > 0 || head_seq != UINT64_MAX)) {
		if (head != NULL)
			util_rfc3339(until, delta_info(head)->expires_at);
		printf("%s: chain OK: deltas 1..%" PRIu64 ", %" PRIu64 " entries, "
		    "%zu keys changed, %s%s\n", path, pos.seq, sum.entries,
		    overlay_count(ov), head != NULL ?
		    "head valid until " : "no head for the last delta",
		    head != NULL ? until : "");
	}
	if (list) {
		for (i = 0; i < table_count(tab); i++)
			if (table_get(tab, i, &r) == 0 &&
			    overlay_find(ov, &r.key, NULL) == 0)
				print_record(stdout, &r);
		while ((op = overlay_next(ov, &it, &r)) != 0)
			if (op == DELTA_ADD)
				print_record(stdout, &r);
	}
	rc = 0;
out:
	delta_free(head);
	overlay_free(ov);
	return rc;
}

/*
 * --fresh: whether revcheckd, with max_age (its clock_skew the default),
 * would serve a pair whose effective times are eff, by its own rule
 * (stale_check). 0, or -1 after a message naming the reason and when.
 */
static int
verify_fresh(const char *path, const struct ffile_info *eff, int64_t max_age)
{
	struct stale_policy pol = { max_age, STALE_DEFAULT_CLOCK_SKEW, 0 };
	char at[UTIL_RFC3339_LEN];
	int64_t now = util_now();
	enum stale_reason sr;

	sr = stale_check(eff, &pol, now, 0);
	if (sr == STALE_FRESH)
		return 0;
	if (sr == STALE_EXPIRED) {
		util_rfc3339(at, eff->expires_at);
		fb_err("verify: %s: filter_stale: expired at %s, %lld s ago",
		    path, at, (long long)(now - eff->expires_at));
	} else {
		util_rfc3339(at, eff->issued_at);
		fb_err("verify: %s: filter_stale (%s): issued at %s", path,
		    stale_reason_str(sr), at);
	}
	return -1;
}

/*
 * Opens t's filter and table into *f and *tab (the caller closes both,
 * on failure too) and checks them: the filter's signature against ring,
 * the table's binding, and that the table's records are the filter's
 * keys. 0, or -1 after a message.
 */
static int
verify_pair(const char *path, const struct target *t,
    const struct sign_ring *ring, struct ffile **f, struct table **tab)
{
	char err[1024];

	if ((*f = ffile_open(t->filter, err, sizeof(err))) == NULL ||
	    ffile_verify(*f, ring, err, sizeof(err)) != 0)
		goto fail;
	if (!t->have_table) {
		fb_err("verify: %s: no table beside the filter (use --table)",
		    path);
		return -1;
	}
	if ((*tab = table_open(t->table, err, sizeof(err))) == NULL ||
	    table_check_binding(*tab, ffile_info(*f)->table_sha256,
	    ffile_info(*f)->table_len, err, sizeof(err)) != 0)
		goto fail;
	if (table_count(*tab) != ffile_info(*f)->keys ||
	    missing_from_filter(*f, *tab) != 0) {
		fb_err("verify: %s: table records do not match the filter's keys",
		    path);
		return -1;
	}
	return 0;
fail:
	fb_err("verify: %s: %s", path, err);
	return -1;
}

int
fb_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pub",   required_argument, NULL, 'p' },
		{ "table", required_argument, NULL, 't' },
		{ "quiet", no_argument,	      NULL, 'q' },
		{ "records", no_argument,     NULL, 'r' },
		{ "fresh", no_argument,	      NULL, 'f' },
		{ "max-age", required_argument, NULL, 'm' },
		{ "help",  no_argument,	      NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *pubs[INSPECT_MAX_PUB], *path, *table = NULL;
	size_t npubs = 0;
	bool quiet = false, list = false, fresh = false;
	int64_t max_age = STALE_DEFAULT_MAX_AGE;
	struct ffile_info eff;
	struct target t;
	struct sign_ring ring;
	struct ffile *f = NULL;
	struct table *tab = NULL;
	char err[1024], hex[65];
	int ch, ret = FB_EXIT_FAIL;

	fb_getopt_reset();
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (npubs == INSPECT_MAX_PUB)
				return fb_usage_err("verify", "more than %d "
				    "--pub options", INSPECT_MAX_PUB);
			pubs[npubs++] = optarg;
			break;
		case 't': table = optarg; break;
		case 'q': quiet = true; break;
		case 'r': list = true; break;
		case 'f': fresh = true; break;
		case 'm':
			if (strcmp(optarg, "0") == 0)
				max_age = 0;
			else if (util_parse_duration(optarg, &max_age) != 0)
				return fb_usage_err("verify", "--max-age '%s': "
				    "want a duration such as 2h, or 0", optarg);
			break;
		case 'h': verify_usage(stdout); return FB_EXIT_OK;
		default: return fb_usage_err("verify", "bad option");
		}
	}
	if (argc - optind != 1)
		return fb_usage_err("verify", "want exactly one PATH");
	if (npubs == 0)
		return fb_usage_err("verify", "--pub PUB.pem is required");
	path = argv[optind];
	if (load_ring(&ring, pubs, npubs, "verify") != 0)
		return FB_EXIT_FAIL;
	if (resolve(path, &t, err, sizeof(err)) != 0) {
		fb_err("verify: %s: %s", path, err);
		goto out;
	}
	if (table != NULL) {
		if (strlen(table) >= sizeof(t.table)) {
			fb_err("verify: %s: path too long", table);
			goto out;
		}
		memcpy(t.table, table, strlen(table) + 1);
		t.have_table = true;
	}
	if (verify_pair(path, &t, &ring, &f, &tab) != 0)
		goto out;
	if (!quiet && !list) {
		util_hex(hex, ffile_info(f)->signer, SIGN_KEYID_LEN);
		printf("%s: OK: version %" PRIu64 ", %" PRIu64 " keys, %" PRIu64
		    " records, signer %s\n", path, ffile_info(f)->version,
		    ffile_info(f)->keys, table_count(tab), hex);
	}
	eff = *ffile_info(f);
	if (verify_chain(path, &t, f, tab, &ring, quiet || list, list,
	    &eff) != 0 || (fresh && verify_fresh(path, &eff, max_age) != 0))
		goto out;
	ret = FB_EXIT_OK;
out:
	table_close(tab);
	ffile_close(f);
	sign_ring_free(&ring);
	return ret;
}
