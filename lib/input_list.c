/* input_list.c - text and JSON token lists: lines and elements to records */
#include "input_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"

/*
 * A list fetched from a URL names an X.509 scope: refused. Its body came
 * from whoever serves the URL (over http, anyone on the path), and
 * whatever is served at a CRL's URL in place of the CRL would make the
 * CA's scope list-sourced, covering every serial unsigned. 0, or -1 with
 * err (what names the element, or "").
 */
static int
list_scope_ok(struct rd *r, const char *scope, const char *what)
{
	if (!r->o->fetched || !revkey_scope_is_x509(scope))
		return 0;
	rd_err(r, "%sX.509 scope %s named by a list fetched from a URL: a "
	    "list carries no signature, and only a CRL verified with --issuer "
	    "may speak for an X.509 scope (give the list as a local file if "
	    "it is meant)", what, scope);
	return -1;
}

/* ---- text ------------------------------------------------------------ */

bool
input_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

/*
 * True when every byte of u[0..n) lies in 0x21..0x7e (printable ASCII, no
 * space): eight bytes at a time, with the exact any-byte-below and
 * any-byte-above tests of word arithmetic. The ids of a real list nearly
 * always are; the others take input_id_refused's byte loop, which decides.
 */
static bool
id_plain(const unsigned char *u, size_t n)
{
	const uint64_t ones = UINT64_C(0x0101010101010101), high = ones << 7;
	uint64_t x;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, u + i, 8);
		/* A byte below 0x21, or a byte above 0x7e. */
		if ((((x - ones * 0x21) & ~x) | (x + ones * (127 - 0x7e)) | x) &
		    high)
			return false;
	}
	for (; i < n; i++)
		if (u[i] < 0x21 || u[i] > 0x7e)
			return false;
	return true;
}

const char *
input_id_refused(const char *b, size_t n, bool words, size_t *col)
{
	const unsigned char *u = (const unsigned char *)b;
	size_t i, l;

	if (id_plain(u, n))
		return NULL;
	for (i = 0; i < n; i += l) {
		*col = i + 1;
		l = 1;
		if (u[i] == ' ' || u[i] == '\t') {
			if (words)
				return "whitespace inside an id (a token list "
				    "has one id per line)";
			continue;
		}
		if (u[i] < 0x20 || u[i] == 0x7f)
			return "control byte in an id";
		if (u[i] >= 0x80 && (l = util_utf8_len(u + i, n - i)) == 0)
			return "bytes that are not UTF-8 (binary data)";
	}
	return NULL;
}

int
rd_refuse_empty(struct rd *r, const char *scope)
{
	if (r->o->allow_empty)
		return 0;
	rd_err(r, "no ids: an empty list would un-revoke every id of scope "
	    "\"%s\" (--allow-shrink to publish it)", scope);
	return -1;
}

/*
 * Before a large list is read, room for a record per line (an id is at
 * most its line, scope and header added), so that the builder's memory is
 * prepared ahead by another thread rather than faulted in by this one.
 */
#define INPUT_RESERVE_MIN	((size_t)16 << 20)

static void
reserve_lines(struct rd *r, const char *buf, size_t len, const char *scope)
{
	const char *p = buf, *end = buf + len;
	size_t lines = 1;

	if (len < INPUT_RESERVE_MIN)
		return;
	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		lines++;
		p++;
	}
	(void)table_builder_reserve(&r->s->builder, lines, len + lines *
	    (TABLE_REC_HDR_LEN + strlen(scope) + 1));
}

int
rd_read_text(struct rd *r, const char *buf, size_t len)
{
	const char *scope = input_opts_scope(r->o), *line, *nl, *b, *e, *why, *bom;
	char kerr[256];
	struct revkey k;
	size_t pos = 0, lineno = 0, col, nids = 0;
	bool raw = !revkey_scope_is_x509(scope), plain;

	if (list_scope_ok(r, scope, "") != 0 || rd_set_scope(r, scope) != 0)
		return -1;
	/*
	 * A UTF-8 byte order mark (Notepad, many exporters) is no part of
	 * the first id: kept, it would make that id one no check ever asks
	 * about, and un-revoke it. Anywhere else the mark is refused below.
	 */
	if (len >= 3 && memcmp(buf, UTF8_BOM, 3) == 0)
		pos = 3;
	reserve_lines(r, buf, len, scope);
	while (pos < len) {
		line = buf + pos;
		nl = memchr(line, '\n', len - pos);
		e = nl != NULL ? nl : buf + len;
		pos = (size_t)(e - buf) + (nl != NULL ? 1 : 0);
		lineno++;
		b = line;
		while (b < e && input_is_space((unsigned char)*b))
			b++;
		while (e > b && input_is_space((unsigned char)e[-1]))
			e--;
		if (b == e || *b == '#')
			continue;
		/* Bytes 0x21..0x7e only: no NUL, no mark, nothing refused. */
		plain = id_plain((const unsigned char *)b, (size_t)(e - b));
		if (!plain && memchr(b, '\0', (size_t)(e - b)) != NULL) {
			rd_err_line(r, lineno, "NUL byte in id");
			return -1;
		}
		if ((size_t)(e - b) >= 5 && memcmp(b, "-----", 5) == 0) {
			rd_err_line(r, lineno, "PEM armour: a PEM file is not a "
			    "token list");
			return -1;
		}
		if (!plain && (why = input_id_refused(b, (size_t)(e - b), true,
		    &col)) != NULL) {
			rd_err_line(r, lineno, "column %zu: %s: not a token "
			    "list", col + (size_t)(b - line), why);
			return -1;
		}
		if (!plain && (bom = memmem(b, (size_t)(e - b), UTF8_BOM, 3)) !=
		    NULL) {
			rd_err_line(r, lineno, "column %zu: a byte order mark "
			    "(U+FEFF) inside an id: no check would ask for "
			    "that id", (size_t)(bom - line) + 1);
			return -1;
		}
		/*
		 * Raw ids after the first keep its checked scope; an x509
		 * scope's serials, and a refused id (for its message), go
		 * through revkey_from_text.
		 */
		if ((nids == 0 || !raw || revkey_set_id(&k, b,
		    (size_t)(e - b)) != 0) && revkey_from_text(&k, scope, b,
		    (size_t)(e - b), kerr, sizeof(kerr)) != 0) {
			rd_err_line(r, lineno, "%s", kerr);
			return -1;
		}
		if (rd_add(r, &k, 0, NULL) != 0)
			return -1;
		nids++;
	}
	return nids == 0 ? rd_refuse_empty(r, scope) : 0;
}

/* ---- JSON ------------------------------------------------------------ */

static void
offset_line(const char *buf, size_t off, size_t *line, size_t *col)
{
	const char *p = buf, *end = buf + off, *nl;

	*line = 1;
	*col = 1;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		(*line)++;
		p = nl + 1;
	}
	*col = (size_t)(end - p) + 1;
}

bool
input_reason_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return i < TABLE_REASON_MAX;
}

/*
 * The known member a key is a near miss of ("Scope", "revokedAt",
 * " id"): equal to it once case and everything but letters and digits are
 * set aside, but not equal. NULL when none. Other unknown keys are an
 * exporter's own fields and are ignored; a near miss is a typo that would
 * put an id in the default scope or drop its reason, and is refused.
 */
static const char *
json_near_miss(const char *key)
{
	static const char *const known[] = { "id", "scope", "revoked_at",
	    "reason", "sub", "sid", "before" };
	char a[32], b[32];
	size_t i, n;
	const char *p;

	for (n = 0, p = key; *p != '\0' && n < sizeof(a) - 1; p++)
		if (isalnum((unsigned char)*p))
			a[n++] = (char)tolower((unsigned char)*p);
	if (*p != '\0')
		return NULL;
	a[n] = '\0';
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		for (n = 0, p = known[i]; *p != '\0'; p++)
			if (*p != '_')
				b[n++] = *p;
		b[n] = '\0';
		if (strcmp(a, b) == 0)
			return known[i];
	}
	return NULL;
}

/* The keys of an object element that mean something here; NULL if absent. */
struct json_keys {
	const cJSON	*id, *scope, *at, *reason, *sub, *sid, *before;
};

/* What one element adds to the set. */
struct json_rec {
	const char	*id;
	const char	*scope;
	const char	*reason;	/* NULL: none */
	const char	*prefix;	/* a cutoff's scope prefix, or NULL */
	int64_t		 at;		/* 0: not given */
};

/*
 * Sorts an object's keys into k: a near miss of a known key, a key given
 * twice, and anything but exactly one of "id", "sub" and "sid" are
 * refused; an exporter's own fields are skipped. 0, or -1 with err.
 */
static int
json_keys(struct rd *r, const cJSON *el, size_t idx, struct json_keys *k)
{
	const cJSON *it, **slot;
	const char *why;

	memset(k, 0, sizeof(*k));
	for (it = el->child; it != NULL; it = it->next) {
		if (it->string == NULL)
			continue;
		if (strcmp(it->string, "id") == 0)
			slot = &k->id;
		else if (strcmp(it->string, "scope") == 0)
			slot = &k->scope;
		else if (strcmp(it->string, "revoked_at") == 0)
			slot = &k->at;
		else if (strcmp(it->string, "reason") == 0)
			slot = &k->reason;
		else if (strcmp(it->string, "sub") == 0)
			slot = &k->sub;
		else if (strcmp(it->string, "sid") == 0)
			slot = &k->sid;
		else if (strcmp(it->string, "before") == 0)
			slot = &k->before;
		else if ((why = json_near_miss(it->string)) != NULL) {
			rd_err(r, "element %zu: unknown key \"%.40s\" "
			    "(did you mean \"%s\"?)", idx, it->string, why);
			return -1;
		} else
			continue;	/* an exporter's own field */
		if (*slot != NULL) {
			rd_err(r, "element %zu: duplicate key \"%s\"", idx,
			    it->string);
			return -1;
		}
		*slot = it;
	}
	if ((k->id != NULL) + (k->sub != NULL) + (k->sid != NULL) != 1) {
		rd_err(r, "element %zu: %s", idx, k->id == NULL &&
		    k->sub == NULL && k->sid == NULL ? "object has no "
		    "\"id\" (nor \"sub\" or \"sid\")" : "only one of "
		    "\"id\", \"sub\" and \"sid\" may be given");
		return -1;
	}
	return 0;
}

/*
 * A subject or session cutoff: every token of that sub (sid) from the
 * issuer named by scope, issued before "before". Sets v's prefix and date,
 * and k->id to the sub or sid. 0, or -1 with err.
 */
static int
json_cutoff(struct rd *r, struct json_keys *k, size_t idx,
    struct json_rec *v)
{
	v->prefix = k->sub != NULL ? REVKEY_SUB_PREFIX : REVKEY_SID_PREFIX;
	k->id = k->sub != NULL ? k->sub : k->sid;
	if (k->before == NULL || !cJSON_IsString(k->before) ||
	    util_parse_rfc3339(k->before->valuestring, &v->at) != 0 ||
	    v->at <= 0) {
		rd_err(r, "element %zu: a \"%s\" cutoff needs \"before\", an "
		    "RFC 3339 date after 1970", idx,
		    k->sub != NULL ? "sub" : "sid");
		return -1;
	}
	if (k->at != NULL) {
		rd_err(r, "element %zu: a cutoff takes \"before\", not "
		    "\"revoked_at\"", idx);
		return -1;
	}
	return 0;
}

/* An object element's id and optionals into v. 0, or -1 with err. */
static int
json_object(struct rd *r, const cJSON *el, size_t idx, struct json_rec *v)
{
	struct json_keys k;

	if (json_keys(r, el, idx, &k) != 0)
		return -1;
	if (k.id == NULL) {
		if (json_cutoff(r, &k, idx, v) != 0)
			return -1;
	} else if (k.before != NULL) {
		rd_err(r, "element %zu: \"before\" goes with \"sub\" or \"sid\" "
		    "only", idx);
		return -1;
	}
	if (!cJSON_IsString(k.id)) {
		rd_err(r, "element %zu: \"%s\" is not a string", idx,
		    k.id->string);
		return -1;
	}
	v->id = k.id->valuestring;
	if (k.scope != NULL && !cJSON_IsNull(k.scope)) {
		if (!cJSON_IsString(k.scope)) {
			rd_err(r, "element %zu: \"scope\" is not a string",
			    idx);
			return -1;
		}
		v->scope = k.scope->valuestring;
	}
	if (k.at != NULL && !cJSON_IsNull(k.at)) {
		if (!cJSON_IsString(k.at) ||
		    util_parse_rfc3339(k.at->valuestring, &v->at) != 0 ||
		    v->at <= 0) {
			rd_err(r, "element %zu: \"revoked_at\" is not an RFC "
			    "3339 date after 1970 (like "
			    "\"2026-01-31T12:00:00Z\")", idx);
			return -1;
		}
	}
	if (k.reason != NULL && !cJSON_IsNull(k.reason)) {
		if (!cJSON_IsString(k.reason) ||
		    !input_reason_valid(k.reason->valuestring)) {
			rd_err(r, "element %zu: \"reason\" is not a string of "
			    "at most %d printable ASCII characters", idx,
			    TABLE_REASON_MAX - 1);
			return -1;
		}
		v->reason = k.reason->valuestring;
	}
	return 0;
}

/*
 * A cutoff's scope into cscope: its prefix and the token issuer's scope,
 * which may be neither an X.509 nor a cutoff scope. 0, or -1 with err.
 */
static int
json_cutoff_scope(struct rd *r, size_t idx, struct json_rec *v,
    char *cscope, size_t cap)
{
	size_t n;

	if (revkey_scope_is_x509(v->scope) ||
	    revkey_scope_is_cutoff(v->scope)) {
		rd_err(r, "element %zu: a cutoff's scope is a token issuer, "
		    "not an X.509 or cutoff scope", idx);
		return -1;
	}
	n = (size_t)snprintf(cscope, cap, "%s%s", v->prefix, v->scope);
	if (n >= cap) {
		rd_err(r, "element %zu: the issuer is too long for a cutoff "
		    "(at most %zu bytes)", idx,
		    REVKEY_SCOPE_MAX - strlen(v->prefix));
		return -1;
	}
	v->scope = cscope;
	return 0;
}

/* One array element: a string id, or an object with id and optionals. */
static int
json_element(struct rd *r, const cJSON *el, size_t idx)
{
	struct json_rec v = { .scope = input_opts_scope(r->o) };
	char cscope[REVKEY_SCOPE_MAX + 1], kerr[256];
	const char *why;
	struct revkey k;
	size_t col;

	if (cJSON_IsString(el)) {
		v.id = el->valuestring;
	} else if (cJSON_IsObject(el)) {
		if (json_object(r, el, idx, &v) != 0)
			return -1;
	} else {
		rd_err(r, "element %zu: neither a string nor an object", idx);
		return -1;
	}
	if (!revkey_scope_valid(v.scope, strnlen(v.scope,
	    REVKEY_SCOPE_MAX + 1))) {
		rd_err(r, "element %zu: invalid scope (1-%d printable "
		    "characters without spaces, or x509: and 64 lowercase hex "
		    "digits)", idx, REVKEY_SCOPE_MAX);
		return -1;
	}
	if (v.prefix != NULL &&
	    json_cutoff_scope(r, idx, &v, cscope, sizeof(cscope)) != 0)
		return -1;
	(void)snprintf(kerr, sizeof(kerr), "element %zu: ", idx);
	if (list_scope_ok(r, v.scope, kerr) != 0 ||
	    rd_set_scope(r, v.scope) != 0)
		return -1;
	if ((why = input_id_refused(v.id, strlen(v.id), false, &col)) != NULL) {
		rd_err(r, "element %zu: \"id\" column %zu: %s", idx, col, why);
		return -1;
	}
	if (revkey_from_text(&k, v.scope, v.id, strlen(v.id), kerr,
	    sizeof(kerr)) != 0) {
		rd_err(r, "element %zu: %s", idx, kerr);
		return -1;
	}
	return rd_add(r, &k, v.at, v.reason);
}

int
rd_read_json(struct rd *r, const char *buf, size_t len)
{
	const char *end = NULL, *nul, *why;
	const cJSON *el;
	cJSON *root;
	size_t idx = 0, line, col, off;
	int rc = -1;

	/* cJSON stops at a NUL: one inside the text would hide the rest. */
	if ((nul = memchr(buf, '\0', len)) != NULL) {
		offset_line(buf, (size_t)(nul - buf), &line, &col);
		rd_err_line(r, line, "NUL byte at offset %zu (column %zu): not "
		    "JSON text", (size_t)(nul - buf), col);
		return -1;
	}
	if ((why = util_json_refused(buf, len)) != NULL) {
		rd_err_line(r, 0, "%s: not accepted in a revocation list", why);
		return -1;
	}
	/* The buffer is NUL-terminated (util_read_file), so len + 1 is valid. */
	root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (root == NULL) {
		off = end != NULL && end >= buf && end <= buf + len ?
		    (size_t)(end - buf) : len;
		offset_line(buf, off, &line, &col);
		rd_err_line(r, line, "invalid JSON at offset %zu (column %zu)",
		    off, col);
		return -1;
	}
	if (!cJSON_IsArray(root)) {
		rd_err(r, "JSON top level is not an array");
		goto out;
	}
	if (root->child == NULL && (list_scope_ok(r, input_opts_scope(r->o), "") !=
	    0 || rd_set_scope(r, input_opts_scope(r->o)) != 0 ||
	    rd_refuse_empty(r, input_opts_scope(r->o)) != 0))
		goto out;
	for (el = root->child; el != NULL; el = el->next, idx++)
		if (json_element(r, el, idx) != 0)
			goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}
