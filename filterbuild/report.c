/* report.c - filterbuild build --keep-going: bad inputs, scopes kept from the previous version, the JSON report */
/*
 * One bad CA must not freeze the others: with --keep-going an input that
 * fails is recorded and skipped, and a CRL scope of the previous version
 * that the good inputs no longer cover (or name only through another
 * issuer's indirect CRL) keeps that version's entries while its
 * nextUpdate lies ahead (after that it is left out: not_covered).
 * Every input and every such scope goes into a machine-readable report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "fb.h"
#include "ffile.h"
#include "publish.h"
#include "table.h"
#include "util.h"

void
fb_report_init(struct fb_report *r)
{
	memset(r, 0, sizeof(*r));
}

void
fb_report_free(struct fb_report *r)
{
	size_t i;

	for (i = 0; i < r->nin; i++) {
		free(r->in[i].name);
		free(r->in[i].error);
	}
	free(r->in);
	free(r->scopes);
	memset(r, 0, sizeof(*r));
}

int
fb_report_input(struct fb_report *r, const char *name, const char *error,
    uint64_t records)
{
	struct fb_rinput *n;
	size_t ncap;

	if (r->nin == r->cap) {
		ncap = r->cap == 0 ? 8 : r->cap * 2;
		if ((n = realloc(r->in, ncap * sizeof(*n))) == NULL)
			return -1;
		r->in = n;
		r->cap = ncap;
	}
	memset(&r->in[r->nin], 0, sizeof(r->in[0]));
	if ((r->in[r->nin].name = strdup(name)) == NULL ||
	    (error != NULL && (r->in[r->nin].error = strdup(error)) == NULL)) {
		free(r->in[r->nin].name);
		return -1;
	}
	r->in[r->nin].records = records;
	if (error != NULL)
		r->failed++;
	r->nin++;
	return 0;
}

static int
report_scope(struct fb_report *r, const struct ffile_scope *sc,
    uint64_t from, bool kept)
{
	struct fb_rscope *n;
	size_t ncap;

	if (r->nscopes == r->scap) {
		ncap = r->scap == 0 ? 4 : r->scap * 2;
		if ((n = realloc(r->scopes, ncap * sizeof(*n))) == NULL)
			return -1;
		r->scopes = n;
		r->scap = ncap;
	}
	memset(&r->scopes[r->nscopes], 0, sizeof(r->scopes[0]));
	memcpy(r->scopes[r->nscopes].scope, sc->name, sizeof(sc->name));
	memcpy(r->scopes[r->nscopes].issuer, sc->issuer, sizeof(sc->issuer));
	memcpy(r->scopes[r->nscopes].crl_number, sc->crl_number,
	    sizeof(sc->crl_number));
	r->scopes[r->nscopes].from_version = from;
	r->scopes[r->nscopes].next_update = sc->next_update;
	r->scopes[r->nscopes].kept = kept;
	r->nscopes++;
	return 0;
}

int
fb_report_keep(struct fb_report *r, struct input_set *set,
    const struct ffile *f, const struct table *t, int64_t now, char *err,
    size_t errlen)
{
	const struct ffile_info *in;
	const struct ffile_scope *sc;
	enum input_kept what;
	uint32_t i;

	in = ffile_info(f);
	for (i = 0; i < in->nscopes; i++) {
		sc = &in->scopes[i];
		if (input_keep_previous(set, sc, t, now, &what, err,
		    errlen) != 0)
			return -1;
		if (what == INPUT_KEPT_NARROWED) {
			fb_err("warning: --keep-going: scope %s (\"%s\"): a CRL "
			    "of its own that version %llu used is missing: the "
			    "delegated parts covering the same certificates are "
			    "left out (not_covered)", sc->name, sc->issuer,
			    (unsigned long long)in->version);
			continue;
		}
		if (what == INPUT_KEPT_NONE)
			continue;
		if (report_scope(r, sc, in->version, what == INPUT_KEPT) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (what == INPUT_KEPT)
			fb_err("warning: --keep-going: scope %s (\"%s\") kept "
			    "from version %llu until its nextUpdate", sc->name,
			    sc->issuer, (unsigned long long)in->version);
		else
			fb_err("warning: --keep-going: scope %s (\"%s\") past its "
			    "nextUpdate: left out (not_covered)", sc->name,
			    sc->issuer);
	}
	return 0;
}

static bool
jstr(cJSON *o, const char *k, const char *v)
{
	return v == NULL ? cJSON_AddNullToObject(o, k) != NULL :
	    cJSON_AddStringToObject(o, k, v) != NULL;
}

int
fb_report_write(const struct fb_report *r, const char *path, char *err,
    size_t errlen)
{
	cJSON *root, *arr, *o;
	char *text = NULL, ts[UTIL_RFC3339_LEN];
	FILE *fp = NULL;
	size_t i;
	bool ok;
	int rc = -1;

	if ((root = cJSON_CreateObject()) == NULL)
		goto oom;
	ok = cJSON_AddNumberToObject(root, "exit_status", r->exit_status) &&
	    (r->version == 0 ? cJSON_AddNullToObject(root, "published_version")
	    != NULL : cJSON_AddNumberToObject(root, "published_version",
	    (double)r->version) != NULL) &&
	    cJSON_AddNumberToObject(root, "inputs_failed", (double)r->failed);
	arr = ok ? cJSON_AddArrayToObject(root, "inputs") : NULL;
	for (i = 0; arr != NULL && i < r->nin; i++) {
		if ((o = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(arr, o) ||
		    !jstr(o, "input", r->in[i].name) ||
		    !jstr(o, "outcome", r->in[i].error != NULL ? "failed" :
		    "used") || !jstr(o, "error", r->in[i].error) ||
		    cJSON_AddNumberToObject(o, "records_total_after",
		    (double)r->in[i].records) == NULL)
			arr = NULL;
	}
	ok = arr != NULL;
	arr = ok ? cJSON_AddArrayToObject(root, "previous_scopes") : NULL;
	for (i = 0; arr != NULL && i < r->nscopes; i++) {
		util_rfc3339(ts, r->scopes[i].next_update);
		if ((o = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(arr, o) ||
		    !jstr(o, "scope", r->scopes[i].scope) ||
		    !jstr(o, "issuer", r->scopes[i].issuer) ||
		    !jstr(o, "crl_number", r->scopes[i].crl_number) ||
		    !jstr(o, "outcome", r->scopes[i].kept ?
		    "kept_from_previous" : "expired_not_covered") ||
		    cJSON_AddNumberToObject(o, "from_version",
		    (double)r->scopes[i].from_version) == NULL ||
		    !jstr(o, "next_update", ts))
			arr = NULL;
	}
	if (arr == NULL || (text = cJSON_Print(root)) == NULL)
		goto oom;
	if ((fp = fopen(path, "w")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	ok = fprintf(fp, "%s\n", text) >= 0;
	if (fclose(fp) != 0 || !ok) {
		fp = NULL;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	fp = NULL;
	rc = 0;
	goto out;
oom:
	snprintf(err, errlen, "report: out of memory");
out:
	if (fp != NULL)
		(void)fclose(fp);
	cJSON_free(text);
	cJSON_Delete(root);
	return rc;
}
