/* pgsrc_issued.c - the source's issued set of exact scopes, spooled in the read's snapshot */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgsrc_int.h"
#include "util.h"

#define ISSUED_FETCH	"10000"
#define ISSUED_SCOPES_MAX	4096

/* The scope entry named name (len bytes), added when new; NULL: full. */
static struct pgsrc_issued_scope *
is_scope(struct pgsrc_issued *is, const char *name, size_t len, size_t *cap)
{
	struct pgsrc_issued_scope *p;
	size_t i;

	for (i = 0; i < is->nscopes; i++)
		if (strlen(is->scopes[i].name) == len &&
		    memcmp(is->scopes[i].name, name, len) == 0)
			return &is->scopes[i];
	if (is->nscopes == ISSUED_SCOPES_MAX)
		return NULL;
	if (is->nscopes == *cap) {
		*cap = *cap == 0 ? 8 : 2 * *cap;
		if ((p = realloc(is->scopes, *cap * sizeof(*p))) == NULL)
			return NULL;
		is->scopes = p;
	}
	p = &is->scopes[is->nscopes++];
	memset(p, 0, sizeof(*p));
	memcpy(p->name, name, len);
	return p;
}

/* One row into the spool. 0, or -1 with err. */
static int
is_row(struct pgsrc_issued *is, const PGresult *res, int r, size_t *cap,
    char *err, size_t errlen)
{
	unsigned char enc[REVKEY_ENC_MAX], lb[2];
	struct pgsrc_issued_scope *sc;
	const char *scope = PQgetvalue(res, r, 0), *id = PQgetvalue(res, r, 1);
	size_t slen = (size_t)PQgetlength(res, r, 0), len;
	struct revkey k;
	char why[128];

	if (PQgetisnull(res, r, 0) || !revkey_scope_valid(scope, slen)) {
		is->bad_scope++;
		return 0;
	}
	if ((sc = is_scope(is, scope, slen, cap)) == NULL) {
		snprintf(err, errlen, "postgresql: " PGSRC_ISSUED_TABLE ": more "
		    "than %d scopes, or out of memory", ISSUED_SCOPES_MAX);
		return -1;
	}
	sc->rows++;
	if (PQgetisnull(res, r, 1) || revkey_from_text(&k, sc->name, id,
	    (size_t)PQgetlength(res, r, 1), why, sizeof(why)) != 0) {
		sc->bad++;
		return 0;
	}
	len = revkey_encode(&k, enc);
	util_put_le16(lb, (uint16_t)len);
	if (fwrite(lb, 1, 2, is->spool) != 2 ||
	    fwrite(enc, 1, len, is->spool) != len) {
		snprintf(err, errlen, "postgresql: " PGSRC_ISSUED_TABLE ": "
		    "cannot spool the issued set (temporary file)");
		return -1;
	}
	return 0;
}

/* Whether the table exists, and the transaction's start. 0, or -1. */
static int
is_present(struct pgsrc *p, struct pgsrc_issued *is, char *err,
    size_t errlen)
{
	PGresult *res;
	int rc = -1;

	/* A role the table is not granted to reads no issued set. */
	res = PQexec(p->conn, "SELECT to_regclass('" PGSRC_ISSUED_TABLE
	    "') IS NOT NULL, coalesce(has_table_privilege(to_regclass('"
	    PGSRC_ISSUED_TABLE "'), 'SELECT'), false), "
	    "floor(extract(epoch FROM now()))::bigint");
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
	    PQnfields(res) != 3) {
		pgsrc_err(p, res, "looking for " PGSRC_ISSUED_TABLE, err,
		    errlen);
		goto out;
	}
	is->unreadable = strcmp(PQgetvalue(res, 0, 0), "t") == 0 &&
	    strcmp(PQgetvalue(res, 0, 1), "t") != 0;
	is->present = strcmp(PQgetvalue(res, 0, 0), "t") == 0 &&
	    !is->unreadable;
	is->cutoff = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
	rc = 0;
out:
	PQclear(res);
	return rc;
}

int
pgsrc_issued_read(struct pgsrc *p, struct pgsrc_issued *is, char *err,
    size_t errlen)
{
	PGresult *res = NULL;
	size_t cap = 0;
	int r, n, rc = -1;

	assert(p != NULL && is != NULL);
	memset(is, 0, sizeof(*is));
	if (is_present(p, is, err, errlen) != 0)
		return -1;
	if (!is->present)
		return 0;
	if ((is->spool = tmpfile()) == NULL) {
		snprintf(err, errlen, "postgresql: " PGSRC_ISSUED_TABLE ": no "
		    "temporary file for the issued set");
		goto out;
	}
	res = PQexec(p->conn, "DECLARE revcheck_issued_cur NO SCROLL CURSOR "
	    "FOR SELECT scope, id FROM " PGSRC_ISSUED_TABLE);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pgsrc_err(p, res, "reading " PGSRC_ISSUED_TABLE, err, errlen);
		goto out;
	}
	do {
		PQclear(res);
		res = PQexec(p->conn, "FETCH FORWARD " ISSUED_FETCH
		    " FROM revcheck_issued_cur");
		if (PQresultStatus(res) != PGRES_TUPLES_OK ||
		    PQnfields(res) != 2) {
			pgsrc_err(p, res, "reading " PGSRC_ISSUED_TABLE, err,
			    errlen);
			goto out;
		}
		n = PQntuples(res);
		for (r = 0; r < n; r++)
			if (is_row(is, res, r, &cap, err, errlen) != 0)
				goto out;
	} while (n > 0);
	if (fflush(is->spool) != 0) {
		snprintf(err, errlen, "postgresql: " PGSRC_ISSUED_TABLE ": "
		    "cannot spool the issued set (temporary file)");
		goto out;
	}
	rc = 0;
out:
	PQclear(res);
	if (rc != 0)
		pgsrc_issued_free(is);
	return rc;
}

void
pgsrc_issued_free(struct pgsrc_issued *is)
{
	if (is == NULL)
		return;
	if (is->spool != NULL)
		fclose(is->spool);
	free(is->scopes);
	memset(is, 0, sizeof(*is));
}

static int
is_rewind(void *arg, char *err, size_t errlen)
{
	struct pgsrc_issued_stream *st = arg;

	if (fseeko(st->is->spool, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "issued set: cannot rewind the spool");
		return -1;
	}
	return 0;
}

static int
is_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct pgsrc_issued_stream *st = arg;
	unsigned char lb[2];
	size_t l;

	for (;;) {
		if (fread(lb, 1, 2, st->is->spool) != 2)
			break;
		l = util_get_le16(lb);
		if (l == 0 || l > sizeof(st->enc) ||
		    fread(st->enc, 1, l, st->is->spool) != l)
			goto bad;
		if (l > st->slen && st->enc[st->slen] == 0 &&
		    memcmp(st->enc, st->scope, st->slen) == 0) {
			*key = st->enc;
			*len = l;
			return 1;
		}
	}
	if (!ferror(st->is->spool))
		return 0;
bad:
	snprintf(err, errlen, "issued set: the spool cannot be read back");
	return -1;
}

void
pgsrc_issued_src(struct pgsrc_issued_stream *st,
    const struct pgsrc_issued *is, const char *scope, struct exact_src *src)
{
	st->is = is;
	st->scope = scope;
	st->slen = strlen(scope);
	src->arg = st;
	src->rewind = is_rewind;
	src->next = is_next;
}
