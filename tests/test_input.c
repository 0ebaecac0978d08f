/* test_input.c - tests of the revocation list readers (text, JSON, CRLs) */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "crl.h"
#include "input.h"
#include "util.h"

#define X509_ZERO_SCOPE \
	"x509:0000000000000000000000000000000000000000000000000000000000000000"

/* ---- helpers ------------------------------------------------------------- */

static const char *
src_root(void)
{
	const char *s = getenv("REVCHECK_SRC");

	return s != NULL && *s != '\0' ? s : ".";
}

static void
data_path(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/tests/data/%s", src_root(), name);

	cr_assert(n > 0 && (size_t)n < cap);
}

/* The CAs of tests/pki.sh, loaded by the input_crl suite's init. */
static X509 *pki_cas[2];

static struct input_opts
opts(const char *scope)
{
	struct input_opts o;

	memset(&o, 0, sizeof(o));
	o.scope = scope;
	o.format = INPUT_AUTO;
	o.now = (int64_t)time(NULL);
	o.quiet = true;
	o.clock_skew = 300;
	if (pki_cas[0] != NULL) {
		o.issuers = pki_cas;
		o.nissuers = 2;
	}
	return o;
}

/* Record i of the set's builder (in insertion order until sorted). */
static struct table_rec
rec_at(const struct input_set *s, size_t i)
{
	struct table_rec r;

	cr_assert_eq(table_builder_get(&s->builder, i, &r), 0, "record %zu", i);
	return r;
}

/* Index of the record (scope, id) in s, or -1. */
static long
find(const struct input_set *s, const char *scope, const void *id,
    size_t idlen)
{
	struct table_rec r;
	size_t i;

	for (i = 0; i < input_set_records(s); i++) {
		r = rec_at(s, i);
		if (strcmp(r.key.scope, scope) == 0 && r.key.id_len == idlen &&
		    memcmp(r.key.id, id, idlen) == 0)
			return (long)i;
	}
	return -1;
}

static long
find_str(const struct input_set *s, const char *scope, const char *id)
{
	return find(s, scope, id, strlen(id));
}

static const struct ffile_scope *
scope_of(const struct input_set *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return &s->scopes[i];
	return NULL;
}

static void
write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "cannot create %s", path);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

static unsigned char *
slurp(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	char err[256];

	cr_assert_eq(util_read_file(path, 1 << 24, &buf, len, err, sizeof(err)),
	    0, "%s", err);
	return buf;
}

/* A deep copy of the set's visible state, to prove a failure changed nothing. */
struct snap {
	size_t nrecs, nscopes;
	struct table_rec *recs;
	struct ffile_scope *scopes;
};

/* The set's records, copied out of its builder (n + 1 entries). */
static struct table_rec *
recs_copy(const struct input_set *s, size_t n)
{
	struct table_rec *recs = calloc(n + 1, sizeof(*recs));
	size_t i;

	cr_assert_not_null(recs);
	for (i = 0; i < n; i++)
		recs[i] = rec_at(s, i);
	return recs;
}

static void
snap_take(struct snap *sn, const struct input_set *s)
{
	sn->nrecs = input_set_records(s);
	sn->nscopes = s->nscopes;
	sn->recs = recs_copy(s, sn->nrecs);
	sn->scopes = malloc(s->nscopes * sizeof(*s->scopes) + 1);
	cr_assert(sn->scopes != NULL);
	if (s->nscopes > 0)
		memcpy(sn->scopes, s->scopes, s->nscopes * sizeof(*s->scopes));
}

static void
snap_check(struct snap *sn, const struct input_set *s)
{
	struct table_rec *now;
	size_t n = input_set_records(s);

	cr_assert_eq(n, sn->nrecs, "records %zu, were %zu", n, sn->nrecs);
	cr_assert_eq(s->nscopes, sn->nscopes, "scopes %zu, were %zu",
	    s->nscopes, sn->nscopes);
	now = recs_copy(s, n);
	if (n > 0)
		cr_assert_eq(memcmp(sn->recs, now, n * sizeof(*now)), 0);
	free(now);
	if (s->nscopes > 0)
		cr_assert_eq(memcmp(sn->scopes, s->scopes, s->nscopes *
		    sizeof(*s->scopes)), 0);
	free(sn->recs);
	free(sn->scopes);
}

/* ---- text ---------------------------------------------------------------- */

Test(input, text_comments_crlf_whitespace)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";
	static const char *const want[] = {
		"tok-1", "tok-2", "tok-3", "tok-4", "tok-5", "tok-6",
	};
	size_t i;

	input_set_init(&s);
	data_path(path, sizeof(path), "tokens.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	/* Seven id lines (tok-1 twice: duplicates collapse later). */
	cr_assert_eq(input_set_records(&s), 7);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(find_str(&s, "default", want[i]) >= 0, "%s missing",
		    want[i]);
	for (i = 0; i < input_set_records(&s); i++) {
		cr_assert_eq(rec_at(&s, i).revoked_at, 0);
		cr_assert_str_eq(rec_at(&s, i).reason, "");
		cr_assert_null(memchr(rec_at(&s, i).key.id, '\r',
		    rec_at(&s, i).key.id_len));
		cr_assert_null(memchr(rec_at(&s, i).key.id, '#',
		    rec_at(&s, i).key.id_len));
	}
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "default");
	cr_assert_eq(s.scopes[0].source, FFILE_SRC_LIST);
	input_set_free(&s);
}

Test(input, text_blank_and_empty_files_cover_scope)
{
	struct input_set s;
	struct input_opts o = opts("tokens-a");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/empty.txt", dir);
	write_file(path, "", 0);
	input_set_init(&s);
	/* By default an empty list is refused: it would un-revoke the scope. */
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "empty.txt: no ids") != NULL, "%s", err);
	cr_assert(strstr(err, "\"tokens-a\"") != NULL, "%s", err);
	write_file(path, "\n\r\n  \t\n# only comments\n", 23);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

Test(input, text_empty_files_cover_scope_when_allowed)
{
	struct input_set s;
	struct input_opts o = opts("tokens-a");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	o.allow_empty = true;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/empty.txt", dir);
	write_file(path, "", 0);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "tokens-a");

	write_file(path, "\n\r\n  \t\n# only comments\n", 23);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 1);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

Test(input, text_x509_serials)
{
	struct input_set s;
	struct input_opts o = opts(X509_ZERO_SCOPE);
	char path[1024], err[512] = "";

	input_set_init(&s);
	data_path(path, sizeof(path), "serials.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 6);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x01", 1) >= 0);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x7f", 1) >= 0);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x80", 1) >= 0, "00:80 -> 80");
	cr_assert(find(&s, X509_ZERO_SCOPE, "\xde\xad\xbe\xef", 4) >= 0);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x01\x00", 2) >= 0);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x01\x23\x45\x67\x89\xab\xcd\xef"
	    "\x01\x23\x45\x67\x89\xab\xcd\xef\x01", 17) >= 0);
	input_set_free(&s);
}

Test(input, text_bad_hex_names_file_and_line)
{
	struct input_set s;
	struct input_opts o = opts(X509_ZERO_SCOPE);
	char path[1024], want[1100], err[512] = "";

	input_set_init(&s);
	data_path(path, sizeof(path), "serials-badhex.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:4: ", path);
	cr_assert(strncmp(err, want, strlen(want)) == 0, "got: %s", err);
	cr_assert(strstr(err, "hex") != NULL, "got: %s", err);
	/* Nothing from lines 1-2 stays behind, not even the scope. */
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
}

Test(input, text_same_file_as_tokens_is_not_hex_checked)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";

	/* Outside x509 scopes, "zz01" is just an id. */
	input_set_init(&s);
	data_path(path, sizeof(path), "serials-badhex.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 4);
	cr_assert(find_str(&s, "default", "zz01") >= 0);
	input_set_free(&s);
}

Test(input, text_invalid_scope_and_long_id)
{
	struct input_set s;
	struct input_opts o = opts("bad scope");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";
	char *big;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	write_file(path, "a\nb\n", 4);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "scope") != NULL, "%s", err);

	big = malloc(REVKEY_ID_MAX + 8);
	cr_assert_not_null(big);
	memcpy(big, "ok\n", 3);
	memset(big + 3, 'x', REVKEY_ID_MAX + 1);
	big[REVKEY_ID_MAX + 4] = '\n';
	write_file(path, big, REVKEY_ID_MAX + 5);
	o = opts("default");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, ":2: ") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	/* One byte shorter is accepted. */
	big[REVKEY_ID_MAX + 3] = '\n';
	write_file(path, big, REVKEY_ID_MAX + 4);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	free(big);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

Test(input, text_nul_byte_is_an_error)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	write_file(path, "a\nb\0c\n", 6);
	input_set_init(&s);
	o.format = INPUT_TEXT;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, ":2: ") != NULL && strstr(err, "NUL") != NULL,
	    "%s", err);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

/* A UTF-8 byte order mark starts a text list; it is not the first id's. */
Test(input, text_byte_order_mark_skipped)
{
	static const char text[] = "\xef\xbb\xbftok-bom\r\ntok-2\r\n";
	static const char comment[] = "\xef\xbb\xbf# a comment\ntok-3\n";
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	write_file(path, text, sizeof(text) - 1);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	cr_assert(find_str(&s, "default", "tok-bom") >= 0,
	    "the first id kept the byte order mark");
	cr_assert(find_str(&s, "default", "tok-2") >= 0);
	input_set_free(&s);

	/* A comment behind the mark is still a comment. */
	write_file(path, comment, sizeof(comment) - 1);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 1);
	cr_assert(find_str(&s, "default", "tok-3") >= 0);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

/* Anywhere but the start, U+FEFF is refused: it hides inside an id. */
Test(input, text_byte_order_mark_inside_refused)
{
	static const char *const bad[] = {
		"tok-1\n\xef\xbb\xbftok-2\n",	/* a second mark */
		"tok-1\ntok\xef\xbb\xbf-2\n",	/* inside */
		"tok-1\ntok-2\xef\xbb\xbf\n",	/* at its end */
	};
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512];
	size_t i;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i], strlen(bad[i]));
		input_set_init(&s);
		err[0] = '\0';
		o.format = INPUT_TEXT;
		cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1,
		    "case %zu accepted", i);
		cr_assert(strstr(err, ":2: ") != NULL &&
		    strstr(err, "byte order mark") != NULL, "case %zu: %s", i,
		    err);
		input_set_free(&s);
	}
	unlink(path);
	rmdir(dir);
}

Test(input, stdin_dash)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";

	data_path(path, sizeof(path), "tokens.json");
	cr_assert_not_null(freopen(path, "r", stdin));
	input_set_init(&s);
	cr_assert_eq(input_read(&s, "-", &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 3);
	cr_assert(find_str(&s, "default", "tok-b") >= 0);
	input_set_free(&s);
}

Test(input, missing_file)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char err[512] = "";

	input_set_init(&s);
	cr_assert_eq(input_read(&s, "/nonexistent/ids.txt", &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "/nonexistent/ids.txt") != NULL, "%s", err);
	input_set_free(&s);
}

/* ---- JSON ---------------------------------------------------------------- */

Test(input, json_strings)
{
	struct input_set s;
	struct input_opts o = opts("tokens");
	char path[1024], err[512] = "";

	input_set_init(&s);
	data_path(path, sizeof(path), "tokens.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 3);
	cr_assert(find_str(&s, "tokens", "tok-a") >= 0);
	cr_assert(find_str(&s, "tokens", "tok-b") >= 0);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "tokens");
	input_set_free(&s);
}

Test(input, json_objects)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";
	long i;
	int64_t t;

	input_set_init(&s);
	data_path(path, sizeof(path), "tokens-objects.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 5);
	cr_assert(find_str(&s, "default", "plain-id") >= 0);
	cr_assert(find_str(&s, "default", "obj-1") >= 0);
	i = find_str(&s, "https://idp.example", "obj-2");
	cr_assert(i >= 0);
	cr_assert_eq(util_parse_rfc3339("2026-01-31T12:00:00Z", &t), 0);
	cr_assert_eq(rec_at(&s, i).revoked_at, t);
	cr_assert_str_eq(rec_at(&s, i).reason, "keyCompromise");
	i = find_str(&s, "default", "obj-3");
	cr_assert(i >= 0);
	cr_assert_eq(util_parse_rfc3339("2026-01-31T23:00:00Z", &t), 0);
	cr_assert_eq(rec_at(&s, i).revoked_at, t, "offset +01:00 applied");
	cr_assert_str_eq(rec_at(&s, i).reason, "");
	/* An id in an x509 scope is a hex serial. */
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x01\x00", 2) >= 0);
	cr_assert_eq(s.nscopes, 3);
	cr_assert_not_null(scope_of(&s, "default"));
	cr_assert_not_null(scope_of(&s, "https://idp.example"));
	cr_assert_not_null(scope_of(&s, X509_ZERO_SCOPE));
	input_set_free(&s);
}

Test(input, json_empty_array_covers_scope)
{
	struct input_set s;
	struct input_opts o = opts("tokens-b");
	char path[1024], err[512] = "";

	input_set_init(&s);
	data_path(path, sizeof(path), "empty.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no ids") != NULL, "%s", err);
	cr_assert_eq(s.nscopes, 0);
	o.allow_empty = true;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "tokens-b");
	input_set_free(&s);
}

/*
 * What is not a token list is refused at its first bad line, and the set
 * is left as it was: a PEM certificate, a document (words), binary data,
 * control bytes; JSON ids with control bytes.
 */
Test(input, text_not_a_token_list_refused)
{
	static const struct {
		const char *text;
		size_t len;
		const char *want;
	} cases[] = {
		{ "tok-1\n-----BEGIN CERTIFICATE-----\nMIIB\n", 0,
		    ":2: PEM armour" },
		{ "# README\n\nrevcheck answers fast\n", 0,
		    ":3: column 9: whitespace inside an id" },
		{ "tok-1\ntok-2\x01x\n", 0, ":2: column 6: control byte" },
		{ "tok-1\ntok\x1b[0m\n", 0, ":2: column 4: control byte" },
		{ "ok\n\xff\xfe\x80\n", 0, ":2: column 1: bytes that are not "
		    "UTF-8" },
		{ "a\nb\0" "c\n", 6, ":2: NUL byte" },
	};
	struct input_set s;
	struct input_opts o = opts("t");
	char err[512];
	size_t i, len;

	input_set_init(&s);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = cases[i].len != 0 ? cases[i].len : strlen(cases[i].text);
		err[0] = '\0';
		cr_assert_eq(input_read_buf(&s, "list.txt", cases[i].text, len,
		    &o, err, sizeof(err)), -1, "case %zu accepted", i);
		cr_assert(strstr(err, cases[i].want) != NULL, "case %zu: %s", i,
		    err);
		cr_assert_eq(input_set_records(&s), 0);
		cr_assert_eq(s.nscopes, 0);
	}
	/* UTF-8 ids are ids. */
	cr_assert_eq(input_read_buf(&s, "list.txt", "t\xc3\xa9st\n", 6, &o,
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 1);
	cr_assert_eq(input_read_buf(&s, "l.json", "[\"a\\u0007b\"]", 12, &o,
	    err, sizeof(err)), -1);
	cr_assert(strstr(err, "element 0: \"id\" column 2: control byte") !=
	    NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 1);
	input_set_free(&s);
}

Test(input, json_scoped_objects_do_not_claim_default)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";
	static const char j[] = "[{\"id\":\"a\",\"scope\":\"s1\"}]";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/l.json", dir);
	write_file(path, j, sizeof(j) - 1);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "s1");
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

/* Reads a bad JSON sample and checks the error names file and place. */
static void
json_bad(const char *name, const char *where, const char *what)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";

	input_set_init(&s);
	data_path(path, sizeof(path), name);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1,
	    "%s accepted", name);
	cr_assert(strncmp(err, path, strlen(path)) == 0, "no file: %s", err);
	cr_assert(strstr(err, where) != NULL, "want \"%s\" in: %s", where, err);
	cr_assert(strstr(err, what) != NULL, "want \"%s\" in: %s", what, err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
}

Test(input, json_errors)
{
	/* "b" then "c" without a comma: the parser stops on line 4. */
	json_bad("bad-syntax.json", ":4: ", "invalid JSON at offset 17 (column 3)");
	json_bad("bad-type.json", "element 2", "neither a string nor an object");
	json_bad("bad-date.json", "element 1", "revoked_at");
	json_bad("bad-noid.json", "element 1", "no \"id\"");
	json_bad("bad-scope.json", "element 0", "invalid scope");
	json_bad("bad-dupkey.json", "element 0", "duplicate key \"id\"");
	json_bad("bad-toplevel.json", ": ", "not an array");
	json_bad("bad-reason.json", "element 0", "reason");
}

Test(input, json_forced_format_and_nul)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/l.json", dir);
	write_file(path, "[\"a\"]\0[", 7);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "NUL byte at offset 5") != NULL, "%s", err);
	/* Forced JSON on a text list is a JSON error, not a silent list. */
	write_file(path, "a\nb\n", 4);
	o.format = INPUT_JSON;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "invalid JSON") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

Test(input, json_failure_leaves_set_unchanged)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";
	struct snap sn;

	input_set_init(&s);
	data_path(path, sizeof(path), "tokens-objects.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	snap_take(&sn, &s);
	data_path(path, sizeof(path), "bad-date.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	data_path(path, sizeof(path), "bad-scope.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	snap_check(&sn, &s);
	input_set_free(&s);
}

/* ---- CRLs from tests/pki.sh ----------------------------------------------- */

/*
 * tests/pki.sh takes seconds, so it runs once for the whole binary, in
 * the runner before any test (Criterion runs each test in a new process:
 * the directory reaches them through the environment), and is removed
 * after the last one.
 */
#define PKI_ENV "REVCHECK_TEST_INPUT_PKI"

static char pki[128];

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	char cmd[1024], dir[] = "/tmp/revcheck-pki-XXXXXX";
	int n;

	(void)set;
	if (mkdtemp(dir) == NULL)
		return;
	n = snprintf(cmd, sizeof(cmd), "'%s/tests/pki.sh' '%s' >/dev/null",
	    src_root(), dir);
	if (n > 0 && (size_t)n < sizeof(cmd) && system(cmd) == 0)
		(void)setenv(PKI_ENV, dir, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	const char *dir = getenv(PKI_ENV);
	char cmd[256];

	(void)stats;
	if (dir != NULL && strncmp(dir, "/tmp/revcheck-pki-", 18) == 0 &&
	    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir) <
	    (int)sizeof(cmd) && system(cmd) != 0)
		fprintf(stderr, "test_input: could not remove %s\n", dir);
}

static X509 *load_cert(const char *name);

static void
pki_setup(void)
{
	const char *dir = getenv(PKI_ENV);

	cr_assert_not_null(dir, "tests/pki.sh failed before the tests");
	cr_assert(strlen(dir) < sizeof(pki));
	memcpy(pki, dir, strlen(dir) + 1);
	pki_cas[0] = load_cert("ca.pem");
	pki_cas[1] = load_cert("other.pem");
}

static void
pki_teardown(void)
{
	X509_free(pki_cas[0]);
	X509_free(pki_cas[1]);
	pki_cas[0] = pki_cas[1] = NULL;
}

static void
pki_path(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", pki, name);

	cr_assert(n > 0 && (size_t)n < cap);
}

static X509 *
load_cert(const char *name)
{
	char path[512];
	X509 *c;
	FILE *f;

	pki_path(path, sizeof(path), name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	c = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(c, "%s", path);
	return c;
}

struct mline {
	char file[64], serial[80], status[16], reason[40], date[32];
};

/* Reads a manifest (certs.tsv) into m; returns the line count. */
static size_t
load_manifest(const char *name, struct mline *m, size_t cap)
{
	char path[512], line[512];
	size_t n = 0;
	FILE *f;

	pki_path(path, sizeof(path), name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		cr_assert(n < cap);
		cr_assert_eq(sscanf(line, "%63[^\t]\t%79[^\t]\t%15[^\t]\t%39[^\t]"
		    "\t%31[^\t\n]", m[n].file, m[n].serial, m[n].status,
		    m[n].reason, m[n].date), 5, "bad manifest line: %s", line);
		n++;
	}
	fclose(f);
	return n;
}

/* Every revoked certificate of the manifest is in s with date and reason;
 * no valid one is. Returns the number of revoked certificates. */
static size_t
check_manifest(const struct input_set *s, const char *manifest)
{
	struct mline m[32];
	struct revkey k;
	char err[256], idtext[REVKEY_ID_TEXT_MAX];
	size_t n, i, nrev = 0;
	int64_t at;
	long r;
	X509 *c;

	n = load_manifest(manifest, m, 32);
	cr_assert(n > 0);
	for (i = 0; i < n; i++) {
		c = load_cert(m[i].file);
		cr_assert_eq(revkey_from_cert(&k, c, err, sizeof(err)), 0, "%s",
		    err);
		X509_free(c);
		revkey_id_text(&k, idtext);
		cr_assert_str_eq(idtext, m[i].serial, "%s", m[i].file);
		r = find(s, k.scope, k.id, k.id_len);
		if (strcmp(m[i].status, "valid") == 0) {
			cr_assert_eq(r, -1, "%s is valid but listed", m[i].file);
			continue;
		}
		nrev++;
		cr_assert(r >= 0, "%s (serial %s) revoked but missing",
		    m[i].file, m[i].serial);
		cr_assert_eq(util_parse_rfc3339(m[i].date, &at), 0);
		cr_assert_eq(rec_at(s, r).revoked_at, at, "%s date", m[i].file);
		cr_assert_str_eq(rec_at(s, r).reason,
		    strcmp(m[i].reason, "-") == 0 ? "" : m[i].reason,
		    "%s reason", m[i].file);
	}
	return nrev;
}

/* The scope of a CA's certificates, from its first leaf. */
static void
leaf_scope(char *out, const char *leaf)
{
	struct revkey k;
	char err[256];
	X509 *c = load_cert(leaf);

	cr_assert_eq(revkey_from_cert(&k, c, err, sizeof(err)), 0, "%s", err);
	X509_free(c);
	memcpy(out, k.scope, k.scope_len + 1);
}

TestSuite(input_crl, .init = pki_setup, .fini = pki_teardown);

Test(input_crl, pem_every_revoked_serial)
{
	struct input_set s;
	struct input_opts o = opts("ignored");
	char path[512], err[512] = "", scope[REVKEY_SCOPE_MAX + 1];
	unsigned char *der, md[32];
	const struct ffile_scope *sc;
	size_t derlen, nrev;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	nrev = check_manifest(&s, "certs.tsv");
	cr_assert_eq(nrev, 7);
	cr_assert_eq(input_set_records(&s), nrev, "only the revoked serials");

	leaf_scope(scope, "certs/leaf01.pem");
	cr_assert_eq(s.nscopes, 1);
	sc = &s.scopes[0];
	cr_assert_str_eq(sc->name, scope);
	cr_assert_eq(sc->source, FFILE_SRC_CRL);
	cr_assert_str_eq(sc->issuer, "CN=revcheck Test CA,O=revcheck tests");
	cr_assert_str_eq(sc->crl_number, "1000");
	cr_assert(sc->this_update > 0);
	cr_assert_eq(sc->next_update - sc->this_update, 30 * 86400);
	pki_path(path, sizeof(path), "crl.der");
	der = slurp(path, &derlen);
	util_sha256(md, der, derlen);
	free(der);
	cr_assert_eq(memcmp(md, sc->crl_sha256, 32), 0, "SHA-256 of the DER");
	input_set_free(&s);
}

Test(input_crl, der_same_as_pem)
{
	struct input_set a, b;
	struct input_opts o = opts("default");
	char path[512], err[512] = "";
	size_t i;

	input_set_init(&a);
	input_set_init(&b);
	pki_path(path, sizeof(path), "crl.pem");
	cr_assert_eq(input_read(&a, path, &o, err, sizeof(err)), 0, "%s", err);
	pki_path(path, sizeof(path), "crl.der");
	cr_assert_eq(input_read(&b, path, &o, err, sizeof(err)), 0, "%s", err);
	o.format = INPUT_CRL;
	cr_assert_eq(check_manifest(&b, "certs.tsv"), 7);
	cr_assert_eq(input_set_records(&a), input_set_records(&b));
	for (i = 0; i < input_set_records(&a); i++) {
		struct table_rec ra = rec_at(&a, i), rb = rec_at(&b, i);

		cr_assert_eq(memcmp(&ra, &rb, sizeof(ra)), 0);
	}
	cr_assert_eq(memcmp(a.scopes, b.scopes, sizeof(*a.scopes)), 0);
	input_set_free(&a);
	input_set_free(&b);
}

Test(input_crl, bundle_of_two_issuers)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "", ca[REVKEY_SCOPE_MAX + 1];
	char other[REVKEY_SCOPE_MAX + 1];

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl-bundle.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(check_manifest(&s, "certs.tsv"), 7);
	cr_assert_eq(check_manifest(&s, "other-certs.tsv"), 1);
	cr_assert_eq(input_set_records(&s), 8);
	leaf_scope(ca, "certs/leaf01.pem");
	leaf_scope(other, "certs/other01.pem");
	cr_assert_str_neq(ca, other);
	/* Serial 02 is revoked by other, not by ca. */
	cr_assert(find(&s, other, "\x02", 1) >= 0);
	cr_assert(find(&s, ca, "\x02", 1) < 0);
	cr_assert_eq(s.nscopes, 2);
	cr_assert_str_eq(scope_of(&s, other)->issuer,
	    "CN=revcheck Other CA,O=revcheck tests");
	input_set_free(&s);
}

Test(input_crl, empty_crl_covers_its_issuer)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "", other[REVKEY_SCOPE_MAX + 1];

	input_set_init(&s);
	pki_path(path, sizeof(path), "other-crl-empty.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 1);
	leaf_scope(other, "certs/other01.pem");
	cr_assert_str_eq(s.scopes[0].name, other);
	cr_assert_eq(s.scopes[0].source, FFILE_SRC_CRL);
	input_set_free(&s);
}

Test(input_crl, issuer_verification)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "";
	X509 *ca = load_cert("ca.pem"), *other = load_cert("other.pem");
	X509 *both[2] = { other, ca };

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.pem");
	o.issuers = &ca;
	o.nissuers = 1;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 7);

	/* The right one among several. */
	o.issuers = both;
	o.nissuers = 2;
	pki_path(path, sizeof(path), "crl-bundle.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 15);

	/* ca's CRL when only other is trusted. */
	o.issuers = &other;
	o.nissuers = 1;
	pki_path(path, sizeof(path), "crl.der");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "crl.der: ") != NULL, "%s", err);
	cr_assert(strstr(err, "no --issuer certificate for CRL issuer") !=
	    NULL, "%s", err);
	cr_assert(strstr(err, "CN=revcheck Test CA") != NULL, "%s", err);

	/* A CRL naming ca as issuer, signed by another key. */
	o.issuers = &ca;
	pki_path(path, sizeof(path), "impostor-crl.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "signature does not verify against") != NULL,
	    "%s", err);
	cr_assert(strstr(err, "CN=revcheck Test CA") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 15);
	X509_free(ca);
	X509_free(other);
	input_set_free(&s);
}

Test(input_crl, expired_crl)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "";

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl-expired.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "expired at 2020-01-02T00:00:00Z") != NULL, "%s",
	    err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	o.allow_expired = true;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 7);
	cr_assert_eq(s.scopes[0].next_update, 1577923200);
	/* A clock before nextUpdate accepts it without the flag. */
	o.allow_expired = false;
	o.now = 1577836800;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	input_set_free(&s);
}

Test(input_crl, newest_crl_describes_the_scope)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "";

	input_set_init(&s);
	o.allow_expired = true;
	pki_path(path, sizeof(path), "crl.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	pki_path(path, sizeof(path), "crl-expired.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].crl_number, "1000");
	cr_assert_eq(input_set_records(&s), 14);
	input_set_free(&s);
}

Test(input_crl, truncated_der)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], cut[512], err[512] = "";
	unsigned char *der;
	size_t len, n;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.der");
	der = slurp(path, &len);
	pki_path(cut, sizeof(cut), "cut.der");
	o.format = INPUT_CRL;
	/* Every prefix fails, with the file named and no record left. */
	for (n = 1; n < len; n++) {
		write_file(cut, der, n);
		cr_assert_eq(input_read(&s, cut, &o, err, sizeof(err)), -1,
		    "prefix of %zu bytes accepted", n);
		cr_assert(strncmp(err, cut, strlen(cut)) == 0, "%s", err);
		cr_assert_eq(input_set_records(&s), 0);
		cr_assert_eq(s.nscopes, 0);
	}
	/* Cut inside the revoked list: the offset points into it. */
	write_file(cut, der, len - 100);
	o.format = INPUT_AUTO;
	cr_assert_eq(input_read(&s, cut, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "truncated or malformed DER at offset") != NULL,
	    "%s", err);
	cr_assert(strstr(err, "at offset 0") == NULL, "deeper offset: %s", err);
	/* Trailing garbage. */
	der = realloc(der, len + 3);
	cr_assert_not_null(der);
	memcpy(der + len, "xyz", 3);
	write_file(cut, der, len + 3);
	cr_assert_eq(input_read(&s, cut, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "DER at offset") != NULL, "%s", err);
	free(der);
	input_set_free(&s);
}

Test(input_crl, corrupt_pem)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], cut[512], err[512] = "";
	unsigned char *pem;
	size_t len;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.pem");
	pem = slurp(path, &len);
	pki_path(cut, sizeof(cut), "cut.pem");
	/* No END line. */
	write_file(cut, pem, len / 2);
	cr_assert_eq(input_read(&s, cut, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "PEM block 1") != NULL, "%s", err);
	/* A certificate where a CRL should be. */
	free(pem);
	pki_path(path, sizeof(path), "ca.pem");
	pem = slurp(path, &len);
	o.format = INPUT_CRL;
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "without an X509 CRL") != NULL, "%s", err);
	free(pem);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
}

/*
 * PEM_read_bio() skips whatever text lies around the blocks: a token list
 * with a CRL pasted after it lost its ids unseen. Only blank lines and
 * what `openssl crl -text` writes may be there.
 */
Test(input_crl, text_around_pem_blocks)
{
	static const char *const bad[] = { "tok-1\ntok-2\n", "# ids\n",
	    "Certificate Revocation List (CRL): tok-3\n" };
	static const char textform[] = "Certificate Revocation List (CRL):\r\n"
	    "        Version 2 (0x1)\r\n\r\nRevoked Certificates:\r\n"
	    "    Serial Number: 01\r\n\tRevocation Date: x\r\n";
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], err[512] = "";
	unsigned char *pem, *buf;
	size_t len, i, n;

	pki_path(path, sizeof(path), "crl.pem");
	pem = slurp(path, &len);
	cr_assert_not_null(buf = malloc(len + 256));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		/* Before the block, and after it. */
		n = strlen(bad[i]);
		memcpy(buf, bad[i], n);
		memcpy(buf + n, pem, len);
		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "mixed.pem", buf, n + len, &o,
		    err, sizeof(err)), -1, "case %zu accepted", i);
		cr_assert(strstr(err, "mixed.pem:1: text outside the PEM "
		    "blocks") != NULL, "%s", err);
		cr_assert_eq(input_set_records(&s), 0);
		input_set_free(&s);
		memcpy(buf, pem, len);
		memcpy(buf + len, bad[i], n);
		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "mixed.pem", buf, n + len, &o,
		    err, sizeof(err)), -1, "case %zu after accepted", i);
		cr_assert(strstr(err, "text outside the PEM blocks") != NULL,
		    "%s", err);
		input_set_free(&s);
	}
	/* openssl crl -text output (here with CRLF line ends) is read. */
	n = sizeof(textform) - 1;
	memcpy(buf, textform, n);
	memcpy(buf + n, pem, len);
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "text.pem", buf, n + len, &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_gt(input_set_records(&s), 0);
	input_set_free(&s);
	free(buf);
	free(pem);
}

/*
 * The sniffing for a PEM CRL block finds its tag anywhere, up to the last
 * byte, among capitals that begin nothing; a tag cut short is no block.
 */
Test(input_crl, pem_tag_found_at_every_place)
{
	static const char tag[] = "-----BEGIN X509 CRL-----";
	struct input_set s;
	struct input_opts o = opts("default");
	char buf[256], err[512];
	size_t n;

	/* Capitals and X alone: a token list. */
	n = (size_t)snprintf(buf, sizeof(buf), "X\nXX\ntok-X509\nX509-CRL\n");
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "ids.txt", buf, n, &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 4);
	input_set_free(&s);
	/* The tag as the last bytes: sniffed as a CRL, refused as one. */
	n = (size_t)snprintf(buf, sizeof(buf), "X\ntok-1\n%s", tag);
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "end.pem", buf, n, &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "PEM armour") == NULL, "read as text: %s", err);
	input_set_free(&s);
	/* One byte short: a token list with a line of armour, refused so. */
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "short.txt", buf, n - 1, &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "PEM armour") != NULL, "%s", err);
	input_set_free(&s);
	/* The tag alone, and at offset 0 of a longer buffer. */
	for (n = 0; n < 2; n++) {
		size_t len = (size_t)snprintf(buf, sizeof(buf), "%s%s", tag,
		    n ? "\nXXXXXXXXXXXX\n" : "");

		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "start.pem", buf, len, &o, err,
		    sizeof(err)), -1);
		cr_assert(strstr(err, "PEM armour") == NULL, "%zu: %s", n, err);
		input_set_free(&s);
	}
}

Test(input_crl, failure_leaves_set_unchanged)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[512], mixed[512], err[512] = "";
	unsigned char *a, *b, *both;
	size_t alen, blen;
	struct snap sn;
	X509 *ca = load_cert("ca.pem");

	input_set_init(&s);
	data_path(path, sizeof(path), "tokens.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	pki_path(path, sizeof(path), "other-crl.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	snap_take(&sn, &s);

	/* A good CRL of ca, then the impostor's: the second fails late. */
	pki_path(path, sizeof(path), "crl.pem");
	a = slurp(path, &alen);
	pki_path(path, sizeof(path), "impostor-crl.pem");
	b = slurp(path, &blen);
	both = malloc(alen + blen);
	cr_assert_not_null(both);
	memcpy(both, a, alen);
	memcpy(both + alen, b, blen);
	pki_path(mixed, sizeof(mixed), "mixed.pem");
	write_file(mixed, both, alen + blen);
	o.issuers = &ca;
	o.nissuers = 1;
	cr_assert_eq(input_read(&s, mixed, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "PEM block 2") != NULL, "%s", err);
	/* Expired, and truncated. */
	o.issuers = pki_cas;
	o.nissuers = 2;
	pki_path(path, sizeof(path), "crl-expired.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	write_file(mixed, both, alen - 60);
	cr_assert_eq(input_read(&s, mixed, &o, err, sizeof(err)), -1);
	snap_check(&sn, &s);
	free(a);
	free(b);
	free(both);
	X509_free(ca);
	input_set_free(&s);
}

/* ---- mixing and counting ---------------------------------------------------- */

Test(input_crl, auto_detect_and_count_scopes)
{
	struct input_set s;
	struct input_opts o = opts("tokens");
	char path[512], err[512] = "", ca[REVKEY_SCOPE_MAX + 1];
	const struct ffile_scope *sc;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.der");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	data_path(path, sizeof(path), "tokens.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	data_path(path, sizeof(path), "tokens.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 7 + 7 + 3);
	cr_assert_eq(s.nscopes, 2);

	/* Sort and collapse as a build does, then count. */
	table_builder_sort_unique(&s.builder);
	input_count_scopes(&s);
	leaf_scope(ca, "certs/leaf01.pem");
	sc = scope_of(&s, ca);
	cr_assert_not_null(sc);
	cr_assert_eq(sc->keys, 7);
	sc = scope_of(&s, "tokens");
	cr_assert_not_null(sc);
	/* tok-1..tok-4, "tok 5 ...", tok-6, tok-a, tok-b. */
	cr_assert_eq(sc->keys, 8);
	input_set_free(&s);
}

Test(input, text_starting_with_zero_is_text)
{
	struct input_set s;
	struct input_opts o = opts(X509_ZERO_SCOPE);
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";

	/* '0' is 0x30, the DER SEQUENCE tag: sniffing must not be fooled. */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.txt", dir);
	write_file(path, "0a\n0b\n", 6);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	cr_assert(find(&s, X509_ZERO_SCOPE, "\x0b", 1) >= 0);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

static void
count_progress(void *arg, uint64_t n)
{
	*(uint64_t *)arg = n;
}

Test(input, progress_callback)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char path[1024], err[512] = "";
	uint64_t seen = 0;

	o.progress = count_progress;
	o.progress_arg = &seen;
	input_set_init(&s);
	data_path(path, sizeof(path), "tokens.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(seen, 7);
	input_set_free(&s);
}

/* A JSON list with n objects cycling over nscopes scopes "s<i>". */
static void
write_scoped_json(const char *path, size_t n, size_t nscopes)
{
	FILE *f = fopen(path, "w");
	size_t i;

	cr_assert_not_null(f);
	fputc('[', f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s{\"id\":\"id%zu\",\"scope\":\"s%zu\"}",
		    i == 0 ? "" : ",", i, i % nscopes);
	fputs("]\n", f);
	cr_assert_eq(fclose(f), 0);
}

Test(input, many_scopes_and_counts)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";
	struct snap sn;
	size_t i;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/many.json", dir);
	write_scoped_json(path, 9000, 3000);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 9000);
	cr_assert_eq(s.nscopes, 3000);
	/* Reading it again finds every scope already there. */
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.nscopes, 3000);
	/* Sorting collapses the second read's records: 3 keys a scope. */
	table_builder_sort_unique(&s.builder);
	input_count_scopes(&s);
	for (i = 0; i < s.nscopes; i++)
		cr_assert_eq(s.scopes[i].keys, 3, "%s", s.scopes[i].name);

	/* Over the scope cap: an error, and the set as it was. */
	snap_take(&sn, &s);
	write_scoped_json(path, FFILE_MAX_SCOPES + 10, FFILE_MAX_SCOPES + 10);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "scopes") != NULL, "%s", err);
	snap_check(&sn, &s);
	input_set_free(&s);
	unlink(path);
	rmdir(dir);
}

/*
 * A hang guard, not a speed target: the worst cases below took 17-49 s
 * in a plain build and minutes under ASan while quadratic, and take a few
 * seconds (under 8 s with ASan) since; the limit is far above that, so
 * only the quadratic form trips it (surely in CI's ASan pass).
 */
#define LINEAR_LIMIT	60

/*
 * A list that names many scopes chosen so that an unseeded FNV-1a sends
 * them all to one cluster of the scope index (the low 16 bits under 512:
 * one name in 128, found by trying) must still read in linear time. With
 * the index's hash unseeded, 65,536 names (the scope cap) took 27 s in
 * a plain build, minutes under ASan; seeded, 2.3 s (3.2 s under ASan),
 * the list's parse included.
 */
static uint64_t
fnv1a(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * UINT64_C(1099511628211);
	return h;
}

Test(input, colliding_scope_names_stay_linear, .timeout = LINEAR_LIMIT)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char name[32], err[512] = "";
	size_t n = 0, want = FFILE_MAX_SCOPES, len = 0, cap = want * 40 + 16;
	uint64_t k;
	char *buf;

	cr_assert_not_null(buf = malloc(cap));
	buf[len++] = '[';
	for (k = 0; n < want; k++) {
		snprintf(name, sizeof(name), "s%" PRIx64, k);
		if ((fnv1a(name) & 0xffff) >= 512)
			continue;
		len += (size_t)snprintf(buf + len, cap - len,
		    "%s{\"id\":\"a\",\"scope\":\"%s\"}", n == 0 ? "" : ",", name);
		n++;
	}
	buf[len++] = ']';
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "flood", buf, len, &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.nscopes, want);
	input_set_free(&s);
	free(buf);
}

static int
scope_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ffile_scope *)a)->name,
	    ((const struct ffile_scope *)b)->name);
}

/*
 * The check against the previous version finds each of its scopes in the
 * new set: with a linear search per scope, a set at the scope cap took
 * about n^2/2 comparisons of 1.2 kB scope records, every build.
 */
Test(input, check_previous_at_the_scope_cap_stays_linear, .timeout = LINEAR_LIMIT)
{
	struct input_set s;
	struct input_opts o = opts("default");
	struct input_prev_opts po;
	struct ffile_info prev;
	size_t n = FFILE_MAX_SCOPES, len = 0, cap = n * 40 + 16, i;
	char err[512] = "", *buf;

	cr_assert_not_null(buf = malloc(cap));
	buf[len++] = '[';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len,
		    "%s{\"id\":\"a\",\"scope\":\"s%zu\"}", i == 0 ? "" : ",",
		    i);
	buf[len++] = ']';
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "many", buf, len, &o, err,
	    sizeof(err)), 0, "%s", err);
	table_builder_sort_unique(&s.builder);
	input_count_scopes(&s);
	/* The previous version: the same scopes, sorted by name. */
	memset(&prev, 0, sizeof(prev));
	prev.version = 1;
	prev.nscopes = (uint32_t)s.nscopes;
	cr_assert_not_null(prev.scopes = malloc(s.nscopes *
	    sizeof(*prev.scopes)));
	memcpy(prev.scopes, s.scopes, s.nscopes * sizeof(*prev.scopes));
	qsort(prev.scopes, prev.nscopes, sizeof(*prev.scopes), scope_name_cmp);
	memset(&po, 0, sizeof(po));
	po.max_shrink_pct = 10;
	po.quiet = true;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	/* A scope of the previous version missing now is still found out. */
	prev.scopes[prev.nscopes / 2].name[0] = 'z';
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "is not in the inputs") != NULL, "%s", err);
	free(prev.scopes);
	input_set_free(&s);
	free(buf);
}

/* input_prev_opts.authoritative: every scope a database source speaks for. */
static bool
all_db_scopes(void *arg, const char *scope)
{
	(void)arg;
	(void)scope;
	return true;
}

/*
 * A database source's scope whose last row expired or was deleted: the
 * shrink check refused the re-base for good (a wedged follower). It is
 * kept covered with no keys, and only a database's scope may shrink so;
 * a CRL scope is never added back.
 */
Test(input, emptied_database_scope_stays_covered)
{
	static const char list[] = "[{\"id\":\"a\",\"scope\":\"stay\"}]";
	struct input_set s;
	struct input_opts o = opts("default");
	struct input_prev_opts po;
	struct ffile_scope ps[3];
	struct ffile_info prev;
	char err[512] = "";
	size_t added = 9, i;

	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "db", list, strlen(list), &o, err,
	    sizeof(err)), 0, "%s", err);
	table_builder_sort_unique(&s.builder);
	input_count_scopes(&s);
	memset(ps, 0, sizeof(ps));
	snprintf(ps[0].name, sizeof(ps[0].name), "crl");
	ps[0].source = FFILE_SRC_CRL;
	ps[0].keys = 4;
	snprintf(ps[1].name, sizeof(ps[1].name), "gone");
	ps[1].keys = 1;
	snprintf(ps[2].name, sizeof(ps[2].name), "stay");
	ps[2].keys = 5;
	memset(&prev, 0, sizeof(prev));
	prev.version = 3;
	prev.nscopes = 3;
	prev.scopes = ps;
	memset(&po, 0, sizeof(po));
	po.max_shrink_pct = 50;
	po.quiet = true;
	/* Without the database's word: "gone" is missing, "stay" shrank. */
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	po.authoritative = all_db_scopes;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "\"crl\"") != NULL, "%s", err);
	cr_assert_eq(input_cover_scopes(&s, &prev, &added, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(added, 1);
	cr_assert_eq(s.nscopes, 2);
	for (i = 0; i < s.nscopes; i++)
		if (strcmp(s.scopes[i].name, "gone") == 0)
			break;
	cr_assert_lt(i, s.nscopes, "gone is covered again");
	cr_assert_eq(s.scopes[i].keys, 0);
	cr_assert_eq(s.scopes[i].source, FFILE_SRC_LIST);
	/* Only the CRL scope is missing now: still refused, then allowed. */
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "\"crl\"") != NULL, "%s", err);
	prev.nscopes = 2;
	prev.scopes = ps + 1;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	/* A second cover adds nothing. */
	cr_assert_eq(input_cover_scopes(&s, &prev, &added, err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(added, 0);
	cr_assert_eq(s.nscopes, 2);
	input_set_free(&s);
}

Test(input, read_buf)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char err[512] = "";
	static const char good[] = "[\"m1\", {\"id\": \"m2\"}]";
	static const char bad[] = "m3\n\n[\n";

	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "mem", good, sizeof(good) - 1, &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	cr_assert(find_str(&s, "default", "m2") >= 0);
	o.format = INPUT_JSON;
	cr_assert_eq(input_read_buf(&s, "mem2", bad, sizeof(bad) - 1, &o, err,
	    sizeof(err)), -1);
	cr_assert(strncmp(err, "mem2:1: invalid JSON", 20) == 0, "%s", err);
	o.format = INPUT_CRL;
	cr_assert_eq(input_read_buf(&s, "mem3", "", 0, &o, err, sizeof(err)),
	    -1);
	cr_assert(strstr(err, "mem3: ") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	input_set_free(&s);
}

Test(input_crl, builder_mode)
{
	struct input_set s;
	struct input_opts o = opts("tokens");
	char path[512], err[512] = "", ca[REVKEY_SCOPE_MAX + 1];
	struct table_rec rec;
	size_t i, n0;
	bool found = false;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	data_path(path, sizeof(path), "tokens.txt");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(table_builder_count(&s.builder), 14);

	/* A failure truncates the builder back. */
	n0 = table_builder_count(&s.builder);
	pki_path(path, sizeof(path), "crl-expired.pem");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	data_path(path, sizeof(path), "bad-date.json");
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	cr_assert_eq(table_builder_count(&s.builder), n0);
	cr_assert_eq(s.nscopes, 2);

	table_builder_sort_unique(&s.builder);
	input_count_scopes(&s);
	leaf_scope(ca, "certs/leaf01.pem");
	cr_assert_eq(scope_of(&s, ca)->keys, 7);
	cr_assert_eq(scope_of(&s, "tokens")->keys, 6);
	/* Dates and reasons survive: leaf01 is keyCompromise. */
	for (i = 0; i < table_builder_count(&s.builder); i++) {
		cr_assert_eq(table_builder_get(&s.builder, i, &rec), 0);
		if (strcmp(rec.key.scope, ca) == 0 && rec.key.id_len == 1 &&
		    rec.key.id[0] == 1) {
			cr_assert_str_eq(rec.reason, "keyCompromise");
			cr_assert(rec.revoked_at > 0);
			found = true;
		}
	}
	cr_assert(found);
	input_set_free(&s);
}

/* Regression: cJSON cut ids at \u0000, so "abc\u0000def" was listed as "abc". */
Test(input, json_escaped_nul_refused)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char err[512] = "";
	static const char nul[] = "[{\"id\": \"abc\\u0000def\"}]";
	static const char ctl[] = "[\"a\x01" "b\"]";

	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "nul.json", nul, sizeof(nul) - 1, &o,
	    err, sizeof(err)), -1);
	cr_assert(strstr(err, "nul.json") != NULL && strstr(err, "u0000") !=
	    NULL, "%s", err);
	cr_assert_eq(input_read_buf(&s, "ctl.json", ctl, sizeof(ctl) - 1, &o,
	    err, sizeof(err)), -1);
	cr_assert(strstr(err, "control byte") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	input_set_free(&s);
}

/* ---- RFC 5280 section 6.3: CRLs that must not be used (crl.c) ------------- */

/* What a crafted CRL looks like; zero is a plain, good CRL of ca. */
struct crlspec {
	const char	*md;		/* digest name, default sha256 */
	int64_t		 this_off;	/* thisUpdate = now + this_off - 60 */
	bool		 no_next;	/* no nextUpdate */
	bool		 crit_ext;	/* unknown critical CRL extension */
	bool		 crit_entry_ext; /* unknown critical entry extension */
	bool		 noncrit_ext;	/* unknown non-critical CRL extension */
	/* Extra entries: serial, seconds before now, reason code (-1 none). */
	struct { long serial; int64_t ago; int reason; } extra[4];
	size_t		 nextra;
	long		 number;	/* cRLNumber extension, 0: none */
	long		 delta_base;	/* deltaCRLIndicator, 0: not a delta */
	bool		 freshest;	/* announces a delta (freshestCRL) */
	bool		 no_default;	/* without the default entry 0x42 */
	int64_t		 next_off;	/* nextUpdate - thisUpdate - 60, 0: a day */
	bool		 idp_user;	/* issuingDistributionPoint onlyUser */
	bool		 idp_indirect;	/* issuingDistributionPoint indirectCRL */
	bool		 idp_ca;	/* issuingDistributionPoint onlyCA */
};

static void
crl_add_entry(X509_CRL *crl, long serial, int64_t ago, int reason)
{
	X509_REVOKED *r = X509_REVOKED_new();
	ASN1_INTEGER *sn = ASN1_INTEGER_new();
	ASN1_ENUMERATED *re;
	ASN1_TIME *t;

	cr_assert(r != NULL && sn != NULL);
	cr_assert(ASN1_INTEGER_set(sn, serial));
	cr_assert(X509_REVOKED_set_serialNumber(r, sn));
	ASN1_INTEGER_free(sn);
	t = ASN1_TIME_set(NULL, time(NULL) - (time_t)ago);
	cr_assert(X509_REVOKED_set_revocationDate(r, t));
	ASN1_TIME_free(t);
	if (reason >= 0) {
		re = ASN1_ENUMERATED_new();
		cr_assert(re != NULL && ASN1_ENUMERATED_set(re, reason));
		cr_assert(X509_REVOKED_add1_ext_i2d(r, NID_crl_reason, re, 0, 0));
		ASN1_ENUMERATED_free(re);
	}
	cr_assert(X509_CRL_add0_revoked(crl, r));
}

static X509_EXTENSION *
ext_null(const char *oid, int crit)
{
	ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
	ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
	X509_EXTENSION *e;

	cr_assert(os != NULL && obj != NULL);
	cr_assert(ASN1_OCTET_STRING_set(os, (const unsigned char *)"\x05\x00",
	    2));
	e = X509_EXTENSION_create_by_OBJ(NULL, obj, crit, os);
	cr_assert_not_null(e);
	ASN1_OBJECT_free(obj);
	ASN1_OCTET_STRING_free(os);
	return e;
}

/* A CRL of the issuer cert, signed with key, one entry (serial 0x42). */
static X509_CRL *
crl_make(X509 *issuer, EVP_PKEY *key, const struct crlspec *c)
{
	X509_CRL *crl = X509_CRL_new();
	X509_REVOKED *r = X509_REVOKED_new();
	ASN1_INTEGER *sn = ASN1_INTEGER_new();
	ASN1_TIME *t;
	time_t now = time(NULL);
	X509_EXTENSION *e;

	cr_assert(crl != NULL && r != NULL && sn != NULL);
	cr_assert(X509_CRL_set_version(crl, 1));
	cr_assert(X509_CRL_set_issuer_name(crl,
	    X509_get_subject_name(issuer)));
	t = ASN1_TIME_set(NULL, now + (time_t)c->this_off - 60);
	cr_assert(X509_CRL_set1_lastUpdate(crl, t));
	ASN1_TIME_free(t);
	if (!c->no_next) {
		t = ASN1_TIME_set(NULL, now + (time_t)c->this_off +
		    (c->next_off != 0 ? (time_t)c->next_off : 86400));
		cr_assert(X509_CRL_set1_nextUpdate(crl, t));
		ASN1_TIME_free(t);
	}
	cr_assert(ASN1_INTEGER_set(sn, 0x42));
	cr_assert(X509_REVOKED_set_serialNumber(r, sn));
	ASN1_INTEGER_free(sn);
	t = ASN1_TIME_set(NULL, now - 120);
	cr_assert(X509_REVOKED_set_revocationDate(r, t));
	ASN1_TIME_free(t);
	if (c->crit_entry_ext) {
		e = ext_null("1.3.6.1.4.1.99999.2", 1);
		cr_assert(X509_REVOKED_add_ext(r, e, -1));
		X509_EXTENSION_free(e);
	}
	if (c->no_default)
		X509_REVOKED_free(r);
	else
		cr_assert(X509_CRL_add0_revoked(crl, r));
	for (size_t i = 0; i < c->nextra; i++)
		crl_add_entry(crl, c->extra[i].serial, c->extra[i].ago,
		    c->extra[i].reason);
	if (c->number != 0) {
		ASN1_INTEGER *num = ASN1_INTEGER_new();

		cr_assert(num != NULL && ASN1_INTEGER_set(num, c->number));
		cr_assert(X509_CRL_add1_ext_i2d(crl, NID_crl_number, num, 0, 0));
		ASN1_INTEGER_free(num);
	}
	if (c->delta_base != 0) {
		ASN1_INTEGER *num = ASN1_INTEGER_new();

		cr_assert(num != NULL && ASN1_INTEGER_set(num, c->delta_base));
		cr_assert(X509_CRL_add1_ext_i2d(crl, NID_delta_crl, num, 1, 0));
		ASN1_INTEGER_free(num);
	}
	if (c->freshest) {
		e = X509V3_EXT_conf_nid(NULL, NULL, NID_freshest_crl,
		    "URI:http://ca.test/delta.crl");
		cr_assert_not_null(e);
		cr_assert(X509_CRL_add_ext(crl, e, -1));
		X509_EXTENSION_free(e);
	}
	if (c->idp_user || c->idp_indirect || c->idp_ca) {
		ISSUING_DIST_POINT *idp = ISSUING_DIST_POINT_new();

		cr_assert_not_null(idp);
		idp->onlyuser = c->idp_user;
		idp->onlyCA = c->idp_ca;
		idp->indirectCRL = c->idp_indirect;
		cr_assert(X509_CRL_add1_ext_i2d(crl,
		    NID_issuing_distribution_point, idp, 1, 0));
		ISSUING_DIST_POINT_free(idp);
	}
	if (c->crit_ext || c->noncrit_ext) {
		e = ext_null("1.3.6.1.4.1.99999.1", c->crit_ext ? 1 : 0);
		cr_assert(X509_CRL_add_ext(crl, e, -1));
		X509_EXTENSION_free(e);
	}
	cr_assert(X509_CRL_sort(crl));
	cr_assert(X509_CRL_sign(crl, key, EVP_get_digestbyname(c->md != NULL ?
	    c->md : "sha256")) > 0, "signing with %s", c->md);
	return crl;
}

/* Reads the crafted CRL through input_read_buf as "crafted.der". */
static int
crl_read(struct input_set *s, X509_CRL *crl, const struct input_opts *o,
    char *err, size_t errlen)
{
	unsigned char *der = NULL;
	int len = i2d_X509_CRL(crl, &der), rc;

	cr_assert(len > 0);
	rc = input_read_buf(s, "crafted.der", der, (size_t)len, o, err,
	    errlen);
	OPENSSL_free(der);
	return rc;
}

static EVP_PKEY *
load_key(const char *name)
{
	char path[512];
	EVP_PKEY *k;
	FILE *f;

	pki_path(path, sizeof(path), name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	cr_assert_not_null(k, "%s", path);
	return k;
}

/* A self-signed certificate for key, CN=cn, keyUsage ku (NULL: none). */
static X509 *
cert_make(EVP_PKEY *key, const char *cn, const char *ku)
{
	X509 *x = X509_new();
	X509_NAME *n = X509_NAME_new();
	X509_EXTENSION *e;

	cr_assert(x != NULL && n != NULL);
	cr_assert(X509_set_version(x, 2));
	cr_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), 7));
	cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0));
	cr_assert(X509_set_subject_name(x, n) && X509_set_issuer_name(x, n));
	X509_NAME_free(n);
	cr_assert(X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL);
	cr_assert(X509_gmtime_adj(X509_getm_notAfter(x), 86400) != NULL);
	cr_assert(X509_set_pubkey(x, key));
	if (ku != NULL) {
		e = X509V3_EXT_conf_nid(NULL, NULL, NID_key_usage, ku);
		cr_assert_not_null(e);
		cr_assert(X509_add_ext(x, e, -1));
		X509_EXTENSION_free(e);
	}
	cr_assert(X509_sign(x, key, EVP_sha256()) > 0);
	return x;
}

/*
 * One crafted CRL of ca: refused with want in the message (and the set
 * left alone), or accepted when want is NULL. Returns the scope's flags
 * when accepted.
 */
static uint8_t
crl_expect(const struct crlspec *c, const struct input_opts *o,
    const char *want)
{
	EVP_PKEY *key = load_key("ca.key");
	struct input_set s;
	char err[512] = "";
	X509_CRL *crl = crl_make(pki_cas[0], key, c);
	uint8_t flags = 0;
	int rc;

	input_set_init(&s);
	rc = crl_read(&s, crl, o, err, sizeof(err));
	if (want != NULL) {
		cr_assert_eq(rc, -1, "accepted, wanted \"%s\"", want);
		cr_assert(strstr(err, "crafted.der: ") == err, "%s", err);
		cr_assert(strstr(err, want) != NULL, "want \"%s\": %s", want,
		    err);
		cr_assert_eq(input_set_records(&s), 0);
		cr_assert_eq(s.nscopes, 0);
	} else {
		cr_assert_eq(rc, 0, "%s", err);
		cr_assert_eq(input_set_records(&s), 1);
		cr_assert_eq(s.nscopes, 1);
		flags = s.scopes[0].flags;
	}
	input_set_free(&s);
	X509_CRL_free(crl);
	EVP_PKEY_free(key);
	return flags;
}

Test(input_crl, unknown_critical_extensions_refused)
{
	struct input_opts o = opts("x");
	struct crlspec c;

	memset(&c, 0, sizeof(c));
	cr_assert_eq(crl_expect(&c, &o, NULL), 0);
	c.noncrit_ext = true;
	(void)crl_expect(&c, &o, NULL);
	memset(&c, 0, sizeof(c));
	c.crit_ext = true;
	(void)crl_expect(&c, &o, "unknown critical CRL extension "
	    "1.3.6.1.4.1.99999.1");
	memset(&c, 0, sizeof(c));
	c.crit_entry_ext = true;
	(void)crl_expect(&c, &o, "entry 0: unknown critical CRL entry "
	    "extension 1.3.6.1.4.1.99999.2");
}

Test(input_crl, weak_signature_algorithms_refused)
{
	struct input_opts o = opts("x");
	struct input_set s;
	struct crlspec c;
	EVP_PKEY *rsa;
	X509 *rca;
	X509_CRL *crl;
	char err[512];

	memset(&c, 0, sizeof(c));
	c.md = "sha1";
	(void)crl_expect(&c, &o, "ecdsa-with-SHA1, a weak digest (SHA1)");
	o.allow_weak_sig = true;
	(void)crl_expect(&c, &o, NULL);

	/* MD5 needs RSA: a throwaway RSA CA. */
	rsa = EVP_RSA_gen(2048);
	cr_assert_not_null(rsa);
	rca = cert_make(rsa, "revcheck MD5 CA", NULL);
	c.md = "md5";
	crl = crl_make(rca, rsa, &c);
	o = opts("x");
	o.issuers = &rca;
	o.nissuers = 1;
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "RSA-MD5, a weak digest (MD5)") != NULL, "%s",
	    err);
	o.allow_weak_sig = true;
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	input_set_free(&s);
	X509_CRL_free(crl);
	X509_free(rca);
	EVP_PKEY_free(rsa);
}

Test(input_crl, future_this_update_refused)
{
	struct input_opts o = opts("x");
	struct crlspec c;

	memset(&c, 0, sizeof(c));
	c.this_off = 3600;	/* an hour ahead: refused */
	(void)crl_expect(&c, &o, "is in the future (more than 300 s of clock "
	    "skew)");
	c.this_off = 240;	/* inside the allowance (thisUpdate = +180 s) */
	(void)crl_expect(&c, &o, NULL);
	o.clock_skew = 0;
	(void)crl_expect(&c, &o, "is in the future");
}

Test(input_crl, no_next_update_needs_an_explicit_validity)
{
	struct input_opts o = opts("x");
	struct input_set s;
	struct crlspec c;
	EVP_PKEY *key = load_key("ca.key");
	X509_CRL *crl;
	char err[512];

	memset(&c, 0, sizeof(c));
	c.no_next = true;
	(void)crl_expect(&c, &o, "has no nextUpdate: --crl-validity");
	o.crl_validity = 86400;
	cr_assert_eq(crl_expect(&c, &o, NULL), FFILE_SCOPE_ASSUMED_NEXT);
	/* The assumed nextUpdate is thisUpdate + the validity. */
	crl = crl_make(pki_cas[0], key, &c);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.scopes[0].next_update - s.scopes[0].this_update, 86400);
	input_set_free(&s);
	X509_CRL_free(crl);
	EVP_PKEY_free(key);
}

Test(input_crl, unverified_only_when_asked_and_marked)
{
	struct input_opts o = opts("x");
	struct crlspec c;

	memset(&c, 0, sizeof(c));
	o.issuers = NULL;
	o.nissuers = 0;
	(void)crl_expect(&c, &o, "no --issuer certificate for CRL issuer "
	    "\"CN=revcheck Test CA,O=revcheck tests\": its signature cannot "
	    "be verified (--unverified-crl");
	o.unverified_ok = true;
	cr_assert_eq(crl_expect(&c, &o, NULL), FFILE_SCOPE_UNVERIFIED);
	/* With its issuer given, the same CRL is verified. */
	o = opts("x");
	o.unverified_ok = true;
	cr_assert_eq(crl_expect(&c, &o, NULL), 0);
}

Test(input_crl, signer_without_crl_sign_refused)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	struct input_opts o = opts("x");
	struct input_set s;
	struct crlspec c;
	X509 *ca;
	X509_CRL *crl;
	char err[512];

	cr_assert_not_null(key);
	memset(&c, 0, sizeof(c));
	input_set_init(&s);
	ca = cert_make(key, "revcheck KU CA", "critical,keyCertSign");
	crl = crl_make(ca, key, &c);
	o.issuers = &ca;
	o.nissuers = 1;
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "has a keyUsage without cRLSign") != NULL, "%s",
	    err);
	X509_free(ca);
	X509_CRL_free(crl);
	ca = cert_make(key, "revcheck KU CA", "critical,keyCertSign,cRLSign");
	crl = crl_make(ca, key, &c);
	o.issuers = &ca;
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	X509_free(ca);
	X509_CRL_free(crl);
	input_set_free(&s);
	EVP_PKEY_free(key);
}

/*
 * A list fetched from a URL may not name an X.509 scope: served at a CRL's
 * URL in place of the CRL, it made the CA's scope list-sourced, covering
 * every serial without a signature. From a local file it still reads, and
 * a fetched list for a token scope too.
 */
Test(input, fetched_list_for_an_x509_scope_refused)
{
	static const char sc[] = "x509:"
	    "361c5cc1164bc83a3b9d4a528160f9f265d7717e93b79bfb5d89aeef8054216f";
	char json[256], err[512];
	struct input_opts o = opts("default");
	struct input_opts x = opts(sc);
	struct input_set s;

	(void)snprintf(json, sizeof(json), "[\"t-1\", {\"scope\": \"%s\", "
	    "\"id\": \"f0\"}]", sc);
	o.fetched = x.fetched = true;
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "http://h/ca.crl", json, strlen(json),
	    &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "http://h/ca.crl: element 1: X.509 scope x509:"
	    "361c") != NULL && strstr(err, "signature") != NULL, "%s", err);
	cr_assert_eq(input_read_buf(&s, "http://h/l.txt", "f0\n", 3, &x, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "http://h/l.txt: X.509 scope") != NULL, "%s",
	    err);
	cr_assert_eq(input_read_buf(&s, "http://h/e.json", "[]", 2, &x, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "X.509 scope") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	cr_assert_eq(input_read_buf(&s, "http://h/t.json", "[\"t-1\"]", 7, &o,
	    err, sizeof(err)), 0, "%s", err);
	o.fetched = x.fetched = false;
	cr_assert_eq(input_read_buf(&s, "ca.json", json, strlen(json), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_read_buf(&s, "l.txt", "f0\n", 3, &x, err,
	    sizeof(err)), 0, "%s", err);
	input_set_free(&s);
}

/* A certificate for key named cn, issued by ca (signed with cakey). */
static X509 *
cert_issue(EVP_PKEY *key, const char *cn, X509 *ca, EVP_PKEY *cakey,
    const char *bc, const char *ku, long serial)
{
	X509 *x = X509_new();
	X509_NAME *n = X509_NAME_new();
	X509_EXTENSION *e;

	cr_assert(x != NULL && n != NULL);
	cr_assert(X509_set_version(x, 2));
	cr_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), serial));
	cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0));
	cr_assert(X509_set_subject_name(x, n));
	cr_assert(X509_set_issuer_name(x, X509_get_subject_name(ca)));
	X509_NAME_free(n);
	cr_assert(X509_gmtime_adj(X509_getm_notBefore(x), -3600) != NULL);
	cr_assert(X509_gmtime_adj(X509_getm_notAfter(x), 86400) != NULL);
	cr_assert(X509_set_pubkey(x, key));
	e = X509V3_EXT_conf_nid(NULL, NULL, NID_basic_constraints, bc);
	cr_assert(e != NULL && X509_add_ext(x, e, -1));
	X509_EXTENSION_free(e);
	e = X509V3_EXT_conf_nid(NULL, NULL, NID_key_usage, ku);
	cr_assert(e != NULL && X509_add_ext(x, e, -1));
	X509_EXTENSION_free(e);
	cr_assert(X509_sign(x, cakey, EVP_sha256()) > 0);
	return x;
}

/*
 * A separate CRL signer with the CA's Name must chain to the CA's trust
 * anchor (RFC 5280 section 6.3.3 (f)), not to another CA's the operator
 * also trusts: one issued by CA B signed an empty CRL for CA A that was
 * taken for A's, and A's revoked certificates answered not_revoked. The
 * same signer issued by A is used; an indirect CRL issuer (a Name no CA
 * among the issuers has) may chain to any anchor.
 */
Test(input_crl, separate_signer_chains_to_the_cas_anchor)
{
	EVP_PKEY *ka = EVP_EC_gen("P-256"), *kb = EVP_EC_gen("P-256");
	EVP_PKEY *ks = EVP_EC_gen("P-256");
	struct input_opts o = opts("x");
	struct input_set s;
	struct crlspec c;
	X509 *certs[4];
	X509_CRL *crl;
	char err[512];

	cr_assert(ka != NULL && kb != NULL && ks != NULL);
	memset(&c, 0, sizeof(c));
	certs[0] = cert_make(ka, "revcheck A CA", "critical,keyCertSign,cRLSign");
	certs[1] = cert_make(kb, "revcheck B CA", "critical,keyCertSign,cRLSign");
	certs[2] = cert_issue(ks, "revcheck A CA", certs[1], kb,
	    "critical,CA:FALSE", "critical,cRLSign", 11);
	o.issuers = certs;
	o.nissuers = 3;
	crl = crl_make(certs[2], ks, &c);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), -1,
	    "a signer of B took A's CRL");
	cr_assert(strstr(err, "separate CRL signer \"CN=revcheck A CA\" "
	    "chains to \"CN=revcheck B CA\", not to the trust anchor") !=
	    NULL, "%s", err);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
	X509_free(certs[2]);
	/*
	 * Issued by A itself: A's CRL signer (self-issued without key
	 * identifiers, so taken as an anchor given as such; PKITS 4.4 has
	 * signers checked through A's chain).
	 */
	certs[2] = cert_issue(ks, "revcheck A CA", certs[0], ka,
	    "critical,CA:FALSE", "critical,cRLSign", 12);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	input_set_free(&s);
	X509_free(certs[2]);
	X509_CRL_free(crl);
	/* A CRL issuer of its own Name, issued by B: any anchor. */
	certs[2] = cert_issue(ks, "revcheck CRL issuer", certs[1], kb,
	    "critical,CA:FALSE", "critical,cRLSign", 13);
	crl = crl_make(certs[2], ks, &c);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	input_set_free(&s);
	X509_CRL_free(crl);
	X509_free(certs[0]);
	X509_free(certs[1]);
	X509_free(certs[2]);
	EVP_PKEY_free(ka);
	EVP_PKEY_free(kb);
	EVP_PKEY_free(ks);
}

/*
 * A near miss of a known key ("Scope", "revokedAt", " id") is a typo that
 * would put the id in the default scope or drop its time: refused, naming
 * the key meant. Other unknown keys (an exporter's own) are ignored.
 */
Test(input, json_near_miss_keys_refused)
{
	static const struct { const char *list, *want; } bad[] = {
		{ "[{\"id\": \"a\", \"Scope\": \"s\"}]", "\"Scope\" (did you mean \"scope\"" },
		{ "[{\"id\": \"a\", \"revokedAt\": \"2026-01-01T00:00:00Z\"}]", "\"revoked_at\"" },
		{ "[{\"id\": \"a\", \"revoked-at\": \"2026-01-01T00:00:00Z\"}]", "\"revoked_at\"" },
		{ "[{\"ID\": \"a\"}]", "\"id\"" },
		{ "[{\"id\": \"a\", \" scope\": \"s\"}]", "\"scope\"" },
		{ "[{\"id\": \"a\", \"REASON\": \"x\"}]", "\"reason\"" },
	};
	static const char good[] = "[{\"id\": \"a\", \"scope\": \"s\", "
	    "\"comment\": \"from the HR export\", \"scopes\": 1, "
	    "\"a_very_long_exporter_field_name_of_its_own\": 2}]";
	struct input_opts o = opts("default");
	struct input_set s;
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "l.json", bad[i].list,
		    strlen(bad[i].list), &o, err, sizeof(err)), -1,
		    "%s accepted", bad[i].list);
		cr_assert(strstr(err, "l.json") != NULL &&
		    strstr(err, "element 0") != NULL &&
		    strstr(err, bad[i].want) != NULL, "%s: %s", bad[i].list,
		    err);
		cr_assert_eq(input_set_records(&s), 0);
		input_set_free(&s);
	}
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "l.json", good, strlen(good), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 1);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "s");
	input_set_free(&s);
}

/*
 * Subject and session cutoffs: {"sub"|"sid", "scope", "before"} become
 * keys in the issuer's sub:/sid: scope with "before" as their time; a
 * cutoff without a time, or mixed with an id, is refused.
 */
Test(input, json_cutoffs)
{
	static const char list[] = "["
	    "{\"sub\": \"alice\", \"scope\": \"https://idp.example\", "
	    "\"before\": \"2026-01-31T12:00:00Z\"},"
	    "{\"sid\": \"s-1\", \"scope\": \"https://idp.example\", "
	    "\"before\": \"2026-01-31T12:00:00Z\", \"reason\": \"logout\"},"
	    "{\"id\": \"jti-1\", \"scope\": \"https://idp.example\"}]";
	static const char *const bad[] = {
		"[{\"sub\": \"alice\", \"scope\": \"i\"}]",
		"[{\"sub\": \"alice\", \"scope\": \"i\", \"before\": \"x\"}]",
		"[{\"sub\": \"a\", \"id\": \"b\", \"before\": "
		    "\"2026-01-31T12:00:00Z\"}]",
		"[{\"sub\": \"a\", \"sid\": \"b\", \"before\": "
		    "\"2026-01-31T12:00:00Z\"}]",
		"[{\"id\": \"a\", \"before\": \"2026-01-31T12:00:00Z\"}]",
		"[{\"sub\": \"a\", \"before\": \"2026-01-31T12:00:00Z\", "
		    "\"revoked_at\": \"2026-01-31T12:00:00Z\"}]",
		"[{\"sub\": \"a\", \"scope\": \"sub:i\", \"before\": "
		    "\"2026-01-31T12:00:00Z\"}]",
		"[{\"sub\": 5, \"before\": \"2026-01-31T12:00:00Z\"}]",
	};
	struct input_set s;
	struct input_opts o = opts("default");
	char err[512] = "";
	int64_t t;
	long i;
	size_t j;

	cr_assert_eq(util_parse_rfc3339("2026-01-31T12:00:00Z", &t), 0);
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "l.json", list, strlen(list), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 3);
	i = find_str(&s, "sub:https://idp.example", "alice");
	cr_assert(i >= 0);
	cr_assert_eq(rec_at(&s, i).revoked_at, t);
	i = find_str(&s, "sid:https://idp.example", "s-1");
	cr_assert(i >= 0);
	cr_assert_eq(rec_at(&s, i).revoked_at, t);
	cr_assert(find_str(&s, "https://idp.example", "jti-1") >= 0);
	cr_assert_not_null(scope_of(&s, "sub:https://idp.example"));
	cr_assert_not_null(scope_of(&s, "sid:https://idp.example"));
	input_set_free(&s);
	for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "l.json", bad[j],
		    strlen(bad[j]), &o, err, sizeof(err)), -1, "%s", bad[j]);
		cr_assert(err[0] != '\0');
		input_set_free(&s);
	}
}

/*
 * An issuer with a subject or session cutoff and no jti revoked has its
 * token scope covered all the same, with no key: its tokens are checked
 * by jti and cutoffs together, and a jti scope not covered made each one
 * not_covered. A cutoff of an issuer that is no token scope covers
 * nothing more.
 */
Test(input, json_cutoff_covers_the_issuer_scope)
{
	static const char list[] = "["
	    "{\"sub\": \"alice\", \"scope\": \"https://idp.example\", "
	    "\"before\": \"2026-01-31T12:00:00Z\"},"
	    "{\"sid\": \"s-1\", \"scope\": \"other\", "
	    "\"before\": \"2026-01-31T12:00:00Z\"}]";
	static const char text[] = "bob\n";
	struct input_set s;
	struct input_opts o = opts("default");
	const struct ffile_scope *sc;
	char err[512] = "";

	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "l.json", list, strlen(list), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	cr_assert_not_null(scope_of(&s, "sub:https://idp.example"));
	cr_assert_not_null(scope_of(&s, "sid:other"));
	cr_assert_not_null(sc = scope_of(&s, "https://idp.example"));
	cr_assert_eq(sc->keys, 0);
	cr_assert_not_null(scope_of(&s, "other"));
	cr_assert_eq(s.nscopes, 4);
	input_set_free(&s);
	/* A text list of cutoffs (--scope sub:ISSUER) too. */
	o = opts("sub:issuer-t");
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "l.txt", text, strlen(text), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_not_null(scope_of(&s, "issuer-t"));
	input_set_free(&s);
}

/*
 * A serial listed several times (certificateHold, then keyCompromise a
 * day later) gives the entry in effect, date and reason together; not the
 * hold's date with the compromise's reason. A negative serial keeps its
 * sign; removeFromCRL outside a delta CRL is refused.
 */
Test(input_crl, entries_per_rfc5280)
{
	struct input_opts o = opts("x");
	EVP_PKEY *key = load_key("ca.key");
	unsigned char neg1[2] = { 0, 1 }, pos1[1] = { 1 }, s7[1] = { 7 };
	struct input_set s;
	struct crlspec c;
	X509_CRL *crl;
	char err[512];
	long r;

	memset(&c, 0, sizeof(c));
	c.extra[0].serial = 7;
	c.extra[0].ago = 86400 * 2;
	c.extra[0].reason = 6;		/* certificateHold */
	c.extra[1].serial = 7;
	c.extra[1].ago = 86400;
	c.extra[1].reason = 1;		/* keyCompromise */
	c.extra[2].serial = -1;
	c.extra[2].ago = 600;
	c.extra[2].reason = -1;
	c.nextra = 3;
	crl = crl_make(pki_cas[0], key, &c);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 3, "0x42, 7 once, -1");
	r = find(&s, s.scopes[0].name, s7, 1);
	cr_assert(r >= 0);
	cr_assert_str_eq(rec_at(&s, r).reason, "keyCompromise");
	cr_assert_lt((int64_t)time(NULL) - 86400 - rec_at(&s, r).revoked_at, 5,
	    "the keyCompromise entry's date");
	cr_assert(find(&s, s.scopes[0].name, neg1, 2) >= 0, "-1 as 00 01");
	cr_assert_eq(find(&s, s.scopes[0].name, pos1, 1), -1, "-1 is not 1");
	input_set_free(&s);
	X509_CRL_free(crl);

	/* The order of listing does not matter: the later date wins. */
	c.extra[0].reason = 1;
	c.extra[0].ago = 86400;
	c.extra[1].reason = 6;
	c.extra[1].ago = 86400 * 2;
	crl = crl_make(pki_cas[0], key, &c);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	r = find(&s, s.scopes[0].name, s7, 1);
	cr_assert(r >= 0);
	cr_assert_str_eq(rec_at(&s, r).reason, "keyCompromise");
	input_set_free(&s);
	X509_CRL_free(crl);

	memset(&c, 0, sizeof(c));
	c.extra[0].serial = 9;
	c.extra[0].ago = 60;
	c.extra[0].reason = 8;		/* removeFromCRL */
	c.nextra = 1;
	EVP_PKEY_free(key);
	(void)crl_expect(&c, &o, "removeFromCRL in a CRL that is not a delta "
	    "CRL");
}

/*
 * Two CRLs of one issuer in one build: the newest (CRL number) wins, in
 * either order, and its entries alone are used; two different CRLs with
 * the same number are refused. Against the previous version, an older CRL
 * is a rollback, refused unless allowed.
 */
Test(input_crl, newest_crl_wins_and_rollback_refused)
{
	struct input_opts o = opts("x");
	EVP_PKEY *key = load_key("ca.key");
	unsigned char s9[1] = { 9 }, s42[1] = { 0x42 };
	struct input_prev_opts po;
	struct ffile_info prev;
	struct ffile_scope psc;
	struct crlspec c5, c6;
	struct input_set s;
	X509_CRL *a, *b, *first, *second;
	char err[512];
	int order;

	memset(&c5, 0, sizeof(c5));
	c5.number = 5;
	c5.extra[0].serial = 9;
	c5.extra[0].ago = 600;
	c5.extra[0].reason = -1;
	c5.nextra = 1;
	memset(&c6, 0, sizeof(c6));
	c6.number = 6;
	a = crl_make(pki_cas[0], key, &c5);
	b = crl_make(pki_cas[0], key, &c6);
	for (order = 0; order < 2; order++) {
		first = order == 0 ? a : b;
		second = order == 0 ? b : a;
		input_set_init(&s);
		cr_assert_eq(crl_read(&s, first, &o, err, sizeof(err)), 0, "%s",
		    err);
		cr_assert_eq(crl_read(&s, second, &o, err, sizeof(err)), 0,
		    "%s", err);
		cr_assert_eq(input_set_records(&s), 3, "a union before resolving");
		cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
		    "%s", err);
		cr_assert_eq(input_set_records(&s), 1, "order %d: only CRL 6's entry", order);
		cr_assert(find(&s, s.scopes[0].name, s42, 1) >= 0);
		cr_assert_eq(find(&s, s.scopes[0].name, s9, 1), -1,
		    "serial 9 of the older CRL 5 is not used");
		cr_assert_str_eq(s.scopes[0].crl_number, "06");
		input_set_free(&s);
	}

	/* Same number, other content: refused, both named. */
	c5.number = 6;
	X509_CRL_free(a);
	a = crl_make(pki_cas[0], key, &c5);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, a, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, b, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "two different CRLs of \"CN=revcheck Test CA") !=
	    NULL, "%s", err);
	input_set_free(&s);

	/* The previous version used CRL 7 of this issuer: 6 is a rollback. */
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, b, &o, err, sizeof(err)), 0, "%s", err);
	psc = s.scopes[0];
	memcpy(psc.crl_number, "07", 3);
	psc.crl_sha256[0] ^= 1;
	memset(&prev, 0, sizeof(prev));
	prev.version = 4;
	prev.nscopes = 1;
	prev.scopes = &psc;
	memset(&po, 0, sizeof(po));
	po.max_shrink_pct = 50;
	po.quiet = true;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "is older than the one version 4 used (CRL "
	    "number \"07\"") != NULL, "%s", err);
	cr_assert(strstr(err, "--allow-crl-rollback") != NULL, "%s", err);
	po.allow_rollback = true;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	/* The same CRL as before, or a newer one, is no rollback. */
	po.allow_rollback = false;
	memcpy(psc.crl_number, "05", 3);
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	input_set_free(&s);
	X509_CRL_free(a);
	X509_CRL_free(b);
	EVP_PKEY_free(key);
}

/*
 * One CA name, two keys (a CA renewed with a new key; AD CS then signs a
 * CRL with each key, each listing the certificates that key issued).
 * Both CRLs verify against an --issuer certificate of that name, and
 * both describe the scope: neither is an older version of the other, so
 * the newer one must not stand in for both. Serial 9, revoked on the
 * old key's CRL only, stays revoked whichever CRL is newer or read first.
 */
Test(input_crl, crls_of_two_keys_of_one_name_both_used)
{
	struct input_opts o = opts("x");
	EVP_PKEY *key = load_key("ca.key"), *key2 = load_key("impostor.key");
	unsigned char s9[1] = { 9 }, s77[1] = { 0x77 }, s42[1] = { 0x42 };
	X509 *both[3] = { pki_cas[0], pki_cas[1], NULL };
	struct crlspec c1, c2;
	struct input_set s;
	X509_CRL *a, *b;
	char err[512], path[512];
	FILE *f;
	int order, pass;

	pki_path(path, sizeof(path), "impostor.pem");
	cr_assert_not_null(f = fopen(path, "r"), "%s", path);
	cr_assert_not_null(both[2] = PEM_read_X509(f, NULL, NULL, NULL));
	fclose(f);
	o.issuers = both;
	o.nissuers = 3;
	memset(&c1, 0, sizeof(c1));
	c1.number = 5;
	c1.extra[0].serial = 9;
	c1.extra[0].ago = 600;
	c1.extra[0].reason = 1;
	c1.nextra = 1;
	c2 = c1;
	c2.number = 6;
	c2.extra[0].serial = 0x77;
	/*
	 * Pass 0: the new key's CRL is the newer. Pass 1: both signed at one
	 * instant (numbered apart), and the scope is described by a fixed
	 * choice, not by reading order: a choice that flips between builds
	 * would look like a rollback to the next build.
	 */
	for (pass = 0; pass < 2; pass++) {
		c2.this_off = pass == 0 ? 30 : 0;
		a = crl_make(pki_cas[0], key, &c1);
		b = crl_make(both[2], key2, &c2);
		for (order = 0; order < 2; order++) {
			input_set_init(&s);
			cr_assert_eq(crl_read(&s, order == 0 ? a : b, &o, err,
			    sizeof(err)), 0, "%s", err);
			cr_assert_eq(crl_read(&s, order == 0 ? b : a, &o, err,
			    sizeof(err)), 0, "%s", err);
			cr_assert_eq(input_resolve_crls(&s, true, false, err,
			    sizeof(err)), 0, "%s", err);
			cr_assert_eq(s.nscopes, 1);
			cr_assert(find(&s, s.scopes[0].name, s9, 1) >= 0,
			    "pass %d, order %d: serial 9, revoked by the old "
			    "key's CRL, was dropped", pass, order);
			cr_assert(find(&s, s.scopes[0].name, s77, 1) >= 0);
			cr_assert(find(&s, s.scopes[0].name, s42, 1) >= 0);
			cr_assert_str_eq(s.scopes[0].crl_number, "06", "pass "
			    "%d, order %d: the scope is described by CRL %s",
			    pass, order, s.scopes[0].crl_number);
			input_set_free(&s);
		}
		X509_CRL_free(a);
		X509_CRL_free(b);
	}
	X509_free(both[2]);
	EVP_PKEY_free(key);
	EVP_PKEY_free(key2);
}

/* ---- partial CRLs: which certificates a scope answers for (crl.c) -------- */

static struct revkey
cert_key(uint8_t cert, const unsigned char *dp)
{
	struct revkey k;

	memset(&k, 0, sizeof(k));
	k.cert = cert;
	if (dp != NULL) {
		memcpy(k.dp[0], dp, 32);
		k.dp_reasons[0] = REVKEY_REASONS_ALL;
		k.ndp = 1;
	}
	return k;
}

Test(crl, coverage_parts)
{
	unsigned char dp1[32], dp2[32];
	struct ffile_scope sc;
	struct revkey bare, user, ca, user_dp1, user_dp2;
	const uint16_t kc = 1u << 1, other = FFILE_REASONS_ALL & ~(1u << 1);

	memset(dp1, 1, sizeof(dp1));
	memset(dp2, 2, sizeof(dp2));
	bare = cert_key(0, NULL);
	user = cert_key(REVKEY_CERT_KNOWN, NULL);
	ca = cert_key(REVKEY_CERT_KNOWN | REVKEY_CERT_CA, NULL);
	user_dp1 = cert_key(REVKEY_CERT_KNOWN, dp1);
	user_dp2 = cert_key(REVKEY_CERT_KNOWN, dp2);
	memset(&sc, 0, sizeof(sc));
	sc.source = FFILE_SRC_CRL;

	/* Whole: everything. */
	cr_assert(crl_key_covered(&sc, &bare) && crl_key_covered(&sc, &ca));
	/* User certificates only: not a CA, not a bare serial. */
	sc.npart = 1;
	sc.part[0].kind = FFILE_PART_USER;
	sc.part[0].reasons = FFILE_REASONS_ALL;
	cr_assert(crl_key_covered(&sc, &user));
	cr_assert(!crl_key_covered(&sc, &ca));
	cr_assert(!crl_key_covered(&sc, &bare));
	/* Plus a CA-only CRL: together everything, a bare serial too. */
	sc.npart = 2;
	sc.part[1].kind = FFILE_PART_CA;
	sc.part[1].reasons = FFILE_REASONS_ALL;
	cr_assert(crl_key_covered(&sc, &ca) && crl_key_covered(&sc, &bare));
	/* Reason partitions: only when they add up to every reason. */
	memset(&sc.part, 0, sizeof(sc.part));
	sc.npart = 1;
	sc.part[0].kind = FFILE_PART_ANY;
	sc.part[0].reasons = kc;
	cr_assert(!crl_key_covered(&sc, &user));
	sc.npart = 2;
	sc.part[1].kind = FFILE_PART_ANY;
	sc.part[1].reasons = (uint16_t)(other & ~(1u << 8));
	cr_assert(!crl_key_covered(&sc, &user), "aACompromise missing");
	sc.part[1].reasons = other;
	cr_assert(crl_key_covered(&sc, &user));
	cr_assert(crl_key_covered(&sc, &bare));
	/* A named distribution point covers only certificates naming it. */
	memset(&sc.part, 0, sizeof(sc.part));
	sc.npart = 1;
	sc.part[0].kind = FFILE_PART_ANY;
	sc.part[0].reasons = FFILE_REASONS_ALL;
	memcpy(sc.part[0].dp, dp1, 32);
	cr_assert(crl_key_covered(&sc, &user_dp1));
	cr_assert(!crl_key_covered(&sc, &user_dp2));
	cr_assert(!crl_key_covered(&sc, &user), "no distribution point");
	cr_assert(!crl_key_covered(&sc, &bare));
	/*
	 * Points with reasons fields (dp1 for keyCompromise, dp2 for the
	 * rest): a CRL of each name counts only for its point's reasons,
	 * whatever its own onlySomeReasons (RFC 5280 section 6.3.3 (d)).
	 */
	user_dp1.dp_reasons[0] = kc;
	memcpy(user_dp1.dp[1], dp2, 32);
	user_dp1.dp_reasons[1] = other;
	user_dp1.ndp = 2;
	cr_assert(!crl_key_covered(&sc, &user_dp1), "dp1 for one reason");
	sc.npart = 2;
	sc.part[1] = sc.part[0];
	memcpy(sc.part[1].dp, dp2, 32);
	cr_assert(crl_key_covered(&sc, &user_dp1), "dp1 and dp2: every reason");
	user_dp1.dp_reasons[1] = (uint16_t)(other & ~(1u << 4));
	cr_assert(!crl_key_covered(&sc, &user_dp1), "superseded on neither");
	/* A list scope is never partial. */
	sc.source = FFILE_SRC_LIST;
	sc.npart = 0;
	cr_assert(crl_key_covered(&sc, &bare));
}

/*
 * A delta CRL is applied to its base: its entries added, removeFromCRL
 * removing a held serial; a base announcing a delta needs it (or
 * no_delta); a delta alone, or one removing a serial its base revoked
 * for good, is refused.
 */
Test(input_crl, delta_applied_to_its_base)
{
	struct input_opts o = opts("x");
	EVP_PKEY *key = load_key("ca.key");
	unsigned char s5[1] = { 5 }, s9[1] = { 9 }, s42[1] = { 0x42 };
	struct crlspec cb, cd;
	struct input_set s;
	X509_CRL *base, *delta;
	char err[512];
	long r;

	memset(&cb, 0, sizeof(cb));
	cb.no_default = true;
	cb.number = 10;
	cb.freshest = true;
	cb.extra[0].serial = 0x42;
	cb.extra[0].ago = 7200;
	cb.extra[0].reason = 6;		/* certificateHold */
	cb.extra[1].serial = 9;
	cb.extra[1].ago = 7200;
	cb.extra[1].reason = 1;
	cb.nextra = 2;
	memset(&cd, 0, sizeof(cd));
	cd.no_default = true;
	cd.number = 11;
	cd.delta_base = 10;
	cd.extra[0].serial = 0x42;
	cd.extra[0].ago = 60;
	cd.extra[0].reason = 8;		/* removeFromCRL */
	cd.extra[1].serial = 5;
	cd.extra[1].ago = 60;
	cd.extra[1].reason = 1;
	cd.nextra = 2;
	base = crl_make(pki_cas[0], key, &cb);
	delta = crl_make(pki_cas[0], key, &cd);

	input_set_init(&s);
	cr_assert_eq(crl_read(&s, delta, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, base, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(input_set_records(&s), 2, "9 from the base, 5 from the delta");
	cr_assert(find(&s, s.scopes[0].name, s9, 1) >= 0);
	r = find(&s, s.scopes[0].name, s5, 1);
	cr_assert(r >= 0);
	cr_assert_str_eq(rec_at(&s, r).reason, "keyCompromise");
	cr_assert_eq(find(&s, s.scopes[0].name, s42, 1), -1,
	    "the hold was removed");
	cr_assert_str_eq(s.scopes[0].crl_number, "0b", "the delta describes");
	input_set_free(&s);

	/* The base alone: refused, unless no_delta. */
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, base, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "announces a delta CRL (freshestCRL) that is not "
	    "among the inputs: --no-delta") != NULL, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, true, err, sizeof(err)), 0,
	    "%s", err);
	input_set_free(&s);

	/* The delta alone. */
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, delta, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "without its base among the inputs") != NULL,
	    "%s", err);
	input_set_free(&s);
	X509_CRL_free(delta);

	/* A delta removing a serial its base revoked for keyCompromise. */
	cd.extra[0].serial = 9;
	delta = crl_make(pki_cas[0], key, &cd);
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, base, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, delta, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), -1);
	cr_assert(strstr(err, "removeFromCRL for a serial its base") != NULL,
	    "%s", err);
	input_set_free(&s);
	X509_CRL_free(delta);
	X509_CRL_free(base);
	EVP_PKEY_free(key);
}

/* ---- indirect CRLs (RFC 5280 sections 5.2.5, 5.3.3, 6.3.3) --------------- */

/* A PKITS certificate (DER) of tests/data/pkits/certs. */
static X509 *
pkits_cert(const char *name)
{
	char path[512], rel[256];
	X509 *c;
	FILE *f;

	cr_assert(snprintf(rel, sizeof(rel), "pkits/certs/%s", name) > 0);
	data_path(path, sizeof(path), rel);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	c = d2i_X509_fp(f, NULL);
	fclose(f);
	cr_assert_not_null(c, "%s", path);
	return c;
}

static int
pkits_crl_read(struct input_set *s, const char *name,
    const struct input_opts *o, char *err, size_t errlen)
{
	char path[512], rel[256];

	cr_assert(snprintf(rel, sizeof(rel), "pkits/crls/%s", name) > 0);
	data_path(path, sizeof(path), rel);
	return input_read(s, path, o, err, errlen);
}

/* The scope of "C=US, O=Test Certificates 2011, CN=cn". */
static void
pkits_scope(char out[REVKEY_X509_SCOPE_LEN + 1], const char *cn)
{
	X509_NAME *n = X509_NAME_new();

	cr_assert_not_null(n);
	cr_assert(X509_NAME_add_entry_by_txt(n, "C", MBSTRING_ASC,
	    (const unsigned char *)"US", -1, -1, 0));
	cr_assert(X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC,
	    (const unsigned char *)"Test Certificates 2011", -1, -1, 0));
	cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0));
	cr_assert_eq(revkey_x509_scope(out, n), 0);
	X509_NAME_free(n);
}

static const struct ffile_scope *
set_find(void *arg, const char *name)
{
	return scope_of(arg, name);
}

/* Whether a check of the certificate would be covered by the set. */
static bool
cert_covered(const struct input_set *s, X509 *x)
{
	struct revkey k;
	char err[256];

	cr_assert_eq(revkey_from_cert(&k, x, err, sizeof(err)), 0, "%s", err);
	return crl_covered_in(set_find, (void *)(uintptr_t)s, &k);
}

/*
 * PKITS indirectCRLCA5CRL: entries 01; 02 (certificateIssuer CA6), 03, 04;
 * 05 (CA7), 06, 07; 08 (CA6), 09; 0A (CA5 itself), 0B. Each lands in its
 * certificate issuer's scope, read in the CRL's order; the other issuers'
 * scopes cover nothing by themselves; a certificate naming CA5 as
 * cRLIssuer is covered by CA5's indirect CRL.
 */
Test(input_crl, indirect_entries_go_to_their_issuer)
{
	static const struct { const char *ca; unsigned char serial; } want[] = {
		{ "ca5", 0x01 }, { "ca6", 0x02 }, { "ca6", 0x03 },
		{ "ca6", 0x04 }, { "ca7", 0x05 }, { "ca7", 0x06 },
		{ "ca7", 0x07 }, { "ca6", 0x08 }, { "ca6", 0x09 },
		{ "ca5", 0x0a }, { "ca5", 0x0b },
	};
	X509 *ca5 = pkits_cert("indirectCRLCA5Cert.crt");
	X509 *ee33 = pkits_cert("ValidcRLIssuerTest33EE.crt");
	X509 *ee31 = pkits_cert("InvalidcRLIssuerTest31EE.crt");
	X509 *ee35 = pkits_cert("InvalidcRLIssuerTest35EE.crt");
	char s5[REVKEY_X509_SCOPE_LEN + 1], s6[REVKEY_X509_SCOPE_LEN + 1],
	    s7[REVKEY_X509_SCOPE_LEN + 1], err[512];
	const struct ffile_scope *sc5, *sc6, *sc7;
	struct input_opts o = opts("x");
	struct revkey bare;
	struct input_set s;
	const char *sc;
	size_t i;

	o.issuers = &ca5;
	o.nissuers = 1;
	cr_assert_eq(revkey_x509_scope(s5, X509_get_subject_name(ca5)), 0);
	pkits_scope(s6, "indirectCRL CA6");
	pkits_scope(s7, "indirectCRL CA7");
	input_set_init(&s);
	cr_assert_eq(pkits_crl_read(&s, "indirectCRLCA5CRL.crl", &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(input_set_records(&s), sizeof(want) / sizeof(want[0]));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		sc = strcmp(want[i].ca, "ca5") == 0 ? s5 :
		    strcmp(want[i].ca, "ca6") == 0 ? s6 : s7;
		cr_assert(find(&s, sc, &want[i].serial, 1) >= 0,
		    "serial %02x of %s", want[i].serial, want[i].ca);
	}
	cr_assert_eq(find(&s, s6, (const unsigned char *)"\x07", 1), -1,
	    "07 follows the entry naming CA7: not CA6's");
	sc5 = scope_of(&s, s5);
	sc6 = scope_of(&s, s6);
	sc7 = scope_of(&s, s7);
	cr_assert(sc5 != NULL && sc6 != NULL && sc7 != NULL);
	/* CA5's own scope: three named parts, flagged indirect. */
	cr_assert_eq(sc5->flags & FFILE_SCOPE_ATTRIBUTED, 0);
	cr_assert_eq(sc5->npart, 3);
	for (i = 0; i < 3; i++) {
		cr_assert_neq(sc5->part[i].flags & FFILE_PART_INDIRECT, 0);
		cr_assert_str_eq(sc5->part[i].crl_number, "01");
	}
	/* CA6 and CA7: listed for their entries, covering nothing alone. */
	cr_assert_neq(sc6->flags & FFILE_SCOPE_ATTRIBUTED, 0);
	cr_assert_eq(sc6->npart, 0);
	cr_assert_str_eq(sc6->issuer,
	    "CN=indirectCRL CA6,O=Test Certificates 2011,C=US");
	cr_assert_neq(sc7->flags & FFILE_SCOPE_ATTRIBUTED, 0);
	memset(&bare, 0, sizeof(bare));
	cr_assert(!crl_key_covered(sc6, &bare), "a bare serial of CA6");
	cr_assert(!crl_key_covered(sc5, &bare), "CA5's partial CRL, bare");
	/* Certificates of CA6 naming CA5 as cRLIssuer: covered. */
	cr_assert(cert_covered(&s, ee33), "PKITS 4.14.33");
	cr_assert(cert_covered(&s, ee31), "PKITS 4.14.31");
	/* A certificate of CA5 naming CA6, which has no CRL: not covered. */
	cr_assert(!cert_covered(&s, ee35), "PKITS 4.14.35");
	input_set_free(&s);
	X509_free(ca5);
	X509_free(ee33);
	X509_free(ee31);
	X509_free(ee35);
}

/* Adds an IDP to crl: indirectCRL, and only user (1) or CA (2) certs. */
static void
crl_add_idp(X509_CRL *crl, bool indirect, int only)
{
	ISSUING_DIST_POINT *idp = ISSUING_DIST_POINT_new();

	cr_assert_not_null(idp);
	idp->indirectCRL = indirect ? 1 : 0;
	idp->onlyuser = only == 1 ? 1 : 0;
	idp->onlyCA = only == 2 ? 1 : 0;
	cr_assert(X509_CRL_add1_ext_i2d(crl, NID_issuing_distribution_point,
	    idp, 1, 0));
	ISSUING_DIST_POINT_free(idp);
}

/* Adds an entry with a certificateIssuer of ndn names CN=cn (0x10 + i). */
static void
crl_add_ci_entry(X509_CRL *crl, long serial, const char *cn, int ndn)
{
	GENERAL_NAMES *gens = GENERAL_NAMES_new();
	X509_REVOKED *r;
	int i;

	cr_assert_not_null(gens);
	crl_add_entry(crl, serial, 60, -1);
	r = sk_X509_REVOKED_value(X509_CRL_get_REVOKED(crl),
	    sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl)) - 1);
	for (i = 0; i < ndn; i++) {
		GENERAL_NAME *gn = GENERAL_NAME_new();
		X509_NAME *n = X509_NAME_new();

		cr_assert(gn != NULL && n != NULL);
		cr_assert(X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
		    (const unsigned char *)cn, -1, -1, 0));
		if (i > 0)
			cr_assert(X509_NAME_add_entry_by_txt(n, "O",
			    MBSTRING_ASC, (const unsigned char *)"x", -1, -1,
			    0));
		GENERAL_NAME_set0_value(gn, GEN_DIRNAME, n);
		cr_assert(sk_GENERAL_NAME_push(gens, gn));
	}
	cr_assert(X509_REVOKED_add1_ext_i2d(r, NID_certificate_issuer, gens, 1,
	    0));
	GENERAL_NAMES_free(gens);
}

/*
 * Signs crl (entries kept in the order added) as ca's CRL number num,
 * thisUpdate ago seconds before now.
 */
static void
crl_finish_at(X509_CRL *crl, EVP_PKEY *key, long num, long ago)
{
	ASN1_INTEGER *n = ASN1_INTEGER_new();
	ASN1_TIME *t;
	time_t now = time(NULL);

	cr_assert(n != NULL && ASN1_INTEGER_set(n, num));
	cr_assert(X509_CRL_add1_ext_i2d(crl, NID_crl_number, n, 0, 0));
	ASN1_INTEGER_free(n);
	cr_assert(X509_CRL_set_version(crl, 1));
	cr_assert(X509_CRL_set_issuer_name(crl,
	    X509_get_subject_name(pki_cas[0])));
	t = ASN1_TIME_set(NULL, now - ago);
	cr_assert(X509_CRL_set1_lastUpdate(crl, t));
	ASN1_TIME_free(t);
	t = ASN1_TIME_set(NULL, now + 86400);
	cr_assert(X509_CRL_set1_nextUpdate(crl, t));
	ASN1_TIME_free(t);
	cr_assert(X509_CRL_sign(crl, key, EVP_sha256()) > 0);
}

/* Signs crl as ca's CRL number num, thisUpdate a minute ago. */
static void
crl_finish(X509_CRL *crl, EVP_PKEY *key, long num)
{
	crl_finish_at(crl, key, num, 60);
}

/*
 * A certificateIssuer decides an entry's scope only in an indirect CRL:
 * in another CRL, or with no or several directory names, it refuses the
 * CRL instead of guessing. Entries after one naming the CRL's own issuer
 * are that issuer's again.
 */
Test(input_crl, certificate_issuer_rules)
{
	EVP_PKEY *key = load_key("ca.key");
	struct input_opts o = opts("x");
	char other[REVKEY_X509_SCOPE_LEN + 1], err[512];
	const char *own;
	struct input_set s;
	X509_NAME *on;
	X509_CRL *crl;
	int k;

	on = X509_NAME_new();
	cr_assert(on != NULL && X509_NAME_add_entry_by_txt(on, "CN",
	    MBSTRING_ASC, (const unsigned char *)"Elsewhere CA", -1, -1, 0));
	cr_assert_eq(revkey_x509_scope(other, on), 0);
	X509_NAME_free(on);
	for (k = 0; k < 3; k++) {
		crl = X509_CRL_new();
		cr_assert_not_null(crl);
		crl_add_idp(crl, k != 0, 0);
		crl_add_entry(crl, 1, 60, -1);
		crl_add_ci_entry(crl, 2, "Elsewhere CA", k == 2 ? 2 : 1);
		crl_add_entry(crl, 3, 60, -1);
		crl_finish(crl, key, 4);
		input_set_init(&s);
		if (k == 0) {
			cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), -1);
			cr_assert(strstr(err, "crafted.der: entry 1: certificate "
			    "issuer entry extension in a CRL that is not "
			    "indirect") != NULL, "%s", err);
			cr_assert_eq(s.nscopes, 0);
		} else if (k == 2) {
			cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), -1);
			cr_assert(strstr(err, "entry 1: certificate issuer with "
			    "no or several directory names") != NULL, "%s", err);
			cr_assert_eq(input_set_records(&s), 0);
		} else {
			cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0,
			    "%s", err);
			cr_assert_eq(input_resolve_crls(&s, true, false, err,
			    sizeof(err)), 0, "%s", err);
			own = s.scopes[0].name;
			cr_assert_eq(s.nscopes, 2);
			cr_assert(find(&s, own, "\x01", 1) >= 0);
			cr_assert(find(&s, other, "\x02", 1) >= 0);
			cr_assert(find(&s, other, "\x03", 1) >= 0,
			    "3 follows the entry naming Elsewhere CA");
			cr_assert_eq(find(&s, own, "\x03", 1), -1);
			cr_assert_eq(find(&s, own, "\x02", 1), -1);
		}
		input_set_free(&s);
		X509_CRL_free(crl);
	}
	EVP_PKEY_free(key);
}

/*
 * Without a word from the operator, an indirect CRL that lists nothing for
 * CA2 gives CA2 no scope (a certificate naming CA1 as cRLIssuer is still
 * covered through CA1's scope); --delegate CA2=CA1 copies CA1's parts
 * without a name into CA2's scope, so a bare serial of CA2 is covered.
 */
Test(input_crl, delegate_covers_bare_serials)
{
	X509 *ca1 = pkits_cert("indirectCRLCA1Cert.crt");
	X509 *ee24 = pkits_cert("ValidIDPwithindirectCRLTest24EE.crt");
	struct input_opts o = opts("x");
	struct input_delegation dg;
	const struct ffile_scope *sc2;
	char s2[REVKEY_X509_SCOPE_LEN + 1], err[512];
	struct revkey bare;
	struct input_set s;

	pkits_scope(s2, "indirectCRL CA2");
	o.issuers = &ca1;
	o.nissuers = 1;
	input_set_init(&s);
	cr_assert_eq(pkits_crl_read(&s, "indirectCRLCA1CRL.crl", &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_null(scope_of(&s, s2));
	cr_assert(cert_covered(&s, ee24), "PKITS 4.14.24, by its cRLIssuer");
	input_set_free(&s);

	memset(&dg, 0, sizeof(dg));
	memcpy(dg.ca_scope, s2, sizeof(s2));
	cr_assert_eq(revkey_x509_scope(dg.crl_issuer_scope,
	    X509_get_subject_name(ca1)), 0);
	memcpy(dg.ca_issuer, "CN=indirectCRL CA2", 19);
	o.delegations = &dg;
	o.ndelegations = 1;
	input_set_init(&s);
	cr_assert_eq(pkits_crl_read(&s, "indirectCRLCA1CRL.crl", &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	sc2 = scope_of(&s, s2);
	cr_assert_not_null(sc2);
	cr_assert_neq(sc2->flags & FFILE_SCOPE_ATTRIBUTED, 0);
	cr_assert_eq(sc2->npart, 1);
	cr_assert_eq(sc2->part[0].flags, FFILE_PART_DELEGATED);
	cr_assert_str_eq(sc2->issuer, "CN=indirectCRL CA2");
	memset(&bare, 0, sizeof(bare));
	cr_assert(crl_key_covered(sc2, &bare), "a bare serial of CA2");
	input_set_free(&s);
	X509_free(ca1);
	X509_free(ee24);
}

/*
 * CA X and CRL issuer C (both P-256, keyCertSign and cRLSign) with the
 * statement --delegate X=C: certs[0] is X, certs[1] C, as issuers of o.
 */
static void
delegate_x_to_c(EVP_PKEY *kx, EVP_PKEY *kc, X509 *certs[2],
    struct input_delegation *dg, struct input_opts *o)
{
	certs[0] = cert_make(kx, "revcheck X CA", "critical,keyCertSign,cRLSign");
	certs[1] = cert_make(kc, "revcheck C CRL issuer",
	    "critical,keyCertSign,cRLSign");
	memset(dg, 0, sizeof(*dg));
	cr_assert_eq(revkey_x509_scope(dg->ca_scope,
	    X509_get_subject_name(certs[0])), 0);
	cr_assert_eq(revkey_x509_scope(dg->crl_issuer_scope,
	    X509_get_subject_name(certs[1])), 0);
	memcpy(dg->ca_issuer, "CN=revcheck X CA", 17);
	o->issuers = certs;
	o->nissuers = 2;
	o->delegations = dg;
	o->ndelegations = 1;
}

/*
 * A CA's scope covered partly by its own CRL (user certificates) and
 * partly by the indirect CRL it is delegated to (--delegate) is good only
 * while both are: its nextUpdate is the earlier one. It was its own
 * CRL's, so --keep-going kept the scope, delegated part and all, for as
 * long as its own CRL ran, after the indirect CRL's nextUpdate had left
 * that CRL issuer's scope out: the CA's certificates answered
 * not_revoked from the expired indirect CRL.
 */
Test(input_crl, delegated_part_ends_with_its_crl)
{
	EVP_PKEY *kx = EVP_EC_gen("P-256"), *kc = EVP_EC_gen("P-256");
	struct input_opts o = opts("x");
	struct input_delegation dg;
	const struct ffile_scope *sx, *sci;
	struct crlspec cx, cc;
	struct input_set s;
	X509 *certs[2];
	X509_CRL *crl;
	char err[512];
	unsigned i, ndg = 0;

	cr_assert(kx != NULL && kc != NULL);
	delegate_x_to_c(kx, kc, certs, &dg, &o);
	memset(&cx, 0, sizeof(cx));
	cx.number = 5;
	cx.idp_user = true;
	cx.next_off = 30 * 86400;
	memset(&cc, 0, sizeof(cc));
	cc.number = 3;
	cc.idp_indirect = true;
	cc.no_default = true;
	cc.next_off = 3600;
	input_set_init(&s);
	crl = crl_make(certs[0], kx, &cx);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	X509_CRL_free(crl);
	crl = crl_make(certs[1], kc, &cc);
	cr_assert_eq(crl_read(&s, crl, &o, err, sizeof(err)), 0, "%s", err);
	X509_CRL_free(crl);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	sx = scope_of(&s, dg.ca_scope);
	sci = scope_of(&s, dg.crl_issuer_scope);
	cr_assert(sx != NULL && sci != NULL);
	cr_assert_eq(sx->npart, 2);
	for (i = 0; i < sx->npart; i++)
		if (sx->part[i].flags == FFILE_PART_DELEGATED)
			ndg++;
	cr_assert_eq(ndg, 1, "one part is the indirect CRL's");
	cr_assert_lt(sci->next_update, (int64_t)time(NULL) + 7200);
	cr_assert_eq(sx->next_update, sci->next_update,
	    "the CA's nextUpdate %lld, the indirect CRL's %lld",
	    (long long)sx->next_update, (long long)sci->next_update);
	input_set_free(&s);
	X509_free(certs[0]);
	X509_free(certs[1]);
	EVP_PKEY_free(kx);
	EVP_PKEY_free(kc);
}

/* The prev table of a resolved set, written to a temporary file. */
static struct table *
table_of(struct input_set *s)
{
	char path[] = "/tmp/revcheck-test-keep-XXXXXX", err[256];
	unsigned char sha[32];
	uint64_t len;
	struct table *t;
	int fd;

	table_builder_sort_unique(&s->builder);
	input_count_scopes(s);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(table_builder_write(&s->builder, fd, sha, &len, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(close(fd), 0);
	t = table_open(path, err, sizeof(err));
	cr_assert_not_null(t, "%s", err);
	unlink(path);
	return t;
}

/* Reads the CRLs of specs (signed by certs[who[i]], keys[who[i]]), resolved. */
static void
keep_set(struct input_set *s, const struct input_opts *o, X509 **certs,
    EVP_PKEY **keys, const struct crlspec *specs, const int *who, size_t n)
{
	X509_CRL *crl;
	char err[512];
	size_t i;

	input_set_init(s);
	for (i = 0; i < n; i++) {
		crl = crl_make(certs[who[i]], keys[who[i]], &specs[i]);
		cr_assert_eq(crl_read(s, crl, o, err, sizeof(err)), 0, "%s", err);
		X509_CRL_free(crl);
	}
	cr_assert_eq(input_resolve_crls(s, true, false, err, sizeof(err)), 0,
	    "%s", err);
}

/*
 * --keep-going, a CA X covered by its own CRL and by an indirect CRL of C
 * delegated to it (--delegate X=C): when X's own CRL fails, the build
 * still names X's scope through C's CRL. It was left to C's delegated
 * parts alone: X's own CRL's revocation 0x42 (C lists nothing for X)
 * answered not_revoked for its bare serial and its certificates, while
 * that CRL's nextUpdate lay ahead and after it. Now X's own part is kept
 * from the previous version while its nextUpdate lies ahead (0x42 stays
 * revoked), and after it what X's own CRL covered is not_covered; a
 * delegated part over certificates X's own CRL did not cover (C's CRL for
 * CA certificates, X's for users) still answers. So too when one of X's
 * own partitions fails. Cases: X's own CRL user-only (k 0), whole (k 1),
 * user-only with C's CA-only (k 2); X's user and CA partitions, the CA
 * one failing (k 3).
 */
Test(input_crl, own_crl_lost_not_left_to_the_delegated_crl)
{
	EVP_PKEY *keys[2];
	X509 *certs[2];
	struct input_opts o = opts("x");
	struct input_delegation dg;
	struct crlspec v1[3], v2[2];
	int who1[3] = { 0, 1, 0 }, who2[2] = { 1, 0 };
	const struct ffile_scope *sx;
	struct ffile_scope px;
	struct input_set s;
	struct revkey bare, user, ca;
	struct table *prev;
	enum input_kept what;
	char err[512];
	int64_t now = (int64_t)time(NULL);
	size_t n1, n2;
	int k;

	keys[0] = EVP_EC_gen("P-256");
	keys[1] = EVP_EC_gen("P-256");
	cr_assert(keys[0] != NULL && keys[1] != NULL);
	delegate_x_to_c(keys[0], keys[1], certs, &dg, &o);
	memset(&bare, 0, sizeof(bare));
	user = cert_key(REVKEY_CERT_KNOWN, NULL);
	ca = cert_key(REVKEY_CERT_KNOWN | REVKEY_CERT_CA, NULL);
	for (k = 0; k < 4; k++) {
		/* v1: X's own CRL(s), revoking 0x42, and C's (no entry). */
		memset(v1, 0, sizeof(v1));
		v1[0].number = 5;
		v1[0].idp_user = k != 1;
		v1[0].next_off = 30 * 86400;
		v1[1].number = 3;
		v1[1].idp_indirect = true;
		v1[1].idp_ca = k == 2;
		v1[1].no_default = true;
		v1[1].next_off = 7 * 86400;
		v1[2].number = 6;
		v1[2].idp_ca = true;
		v1[2].no_default = true;
		v1[2].extra[0].serial = 0x43;
		v1[2].extra[0].ago = 60;
		v1[2].extra[0].reason = 1;
		v1[2].nextra = 1;
		v1[2].next_off = 30 * 86400;
		n1 = k == 3 ? 3 : 2;
		keep_set(&s, &o, certs, keys, v1, who1, n1);
		sx = scope_of(&s, dg.ca_scope);
		cr_assert_not_null(sx);
		cr_assert(crl_key_covered(sx, &bare),
		    "case %d: v1 covers X", k);
		prev = table_of(&s);
		px = *scope_of(&s, dg.ca_scope);
		cr_assert_eq(px.keys, k == 3 ? 2 : 1, "case %d", k);
		input_set_free(&s);

		/*
		 * v2: X's own CRL failed (k 3: its CA partition); C's CRL is
		 * still good and still lists nothing for X.
		 */
		memcpy(v2, &v1[1], sizeof(v2[0]));
		memcpy(&v2[1], &v1[0], sizeof(v2[1]));
		n2 = k == 3 ? 2 : 1;
		keep_set(&s, &o, certs, keys, v2, who2, n2);
		cr_assert_eq(input_keep_previous(&s, &px, prev, now, &what, err,
		    sizeof(err)), 0, "%s", err);
		table_builder_sort_unique(&s.builder);
		input_count_scopes(&s);
		sx = scope_of(&s, dg.ca_scope);
		cr_assert_not_null(sx);
		if (k == 3) {
			/* X's user CRL is good: a user stays covered. */
			cr_assert_eq(what, INPUT_KEPT_NARROWED);
			cr_assert(crl_key_covered(sx, &user));
			cr_assert_not(crl_key_covered(sx, &ca), "a CA "
			    "certificate of X, its own CA CRL lost: not "
			    "answered from C's CRL alone");
			cr_assert_not(crl_key_covered(sx, &bare));
			input_set_free(&s);
			table_close(prev);
			continue;
		}
		cr_assert_eq(what, INPUT_KEPT, "case %d: X's own part kept", k);
		cr_assert_neq(sx->flags & FFILE_SCOPE_KEPT, 0);
		cr_assert_eq(sx->flags & FFILE_SCOPE_ATTRIBUTED, 0);
		cr_assert(find(&s, dg.ca_scope, "\x42", 1) >= 0, "case %d: "
		    "0x42, revoked on X's own CRL, is still revoked", k);
		cr_assert(crl_key_covered(sx, &bare));
		cr_assert_leq(sx->next_update, px.next_update);
		cr_assert_str_eq(sx->crl_number, px.crl_number);
		input_set_free(&s);

		/* The same build once X's own CRL is past its nextUpdate. */
		keep_set(&s, &o, certs, keys, v2, who2, 1);
		cr_assert_eq(input_keep_previous(&s, &px, prev,
		    px.next_update, &what, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(what, INPUT_KEPT_LEFT_OUT, "case %d", k);
		sx = scope_of(&s, dg.ca_scope);
		cr_assert_not_null(sx);
		cr_assert_eq(find(&s, dg.ca_scope, "\x42", 1), -1);
		cr_assert_not(crl_key_covered(sx, &bare), "case %d: a bare "
		    "serial of X: not_covered, not answered from C's CRL", k);
		cr_assert_not(crl_key_covered(sx, &user), "case %d: a user "
		    "certificate of X: not_covered", k);
		cr_assert_eq(crl_key_covered(sx, &ca), k == 2, "case %d: a CA "
		    "certificate of X: covered only by C's CA-only part, which "
		    "X's own user CRL never covered", k);
		input_set_free(&s);
		table_close(prev);
	}
	X509_free(certs[0]);
	X509_free(certs[1]);
	EVP_PKEY_free(keys[0]);
	EVP_PKEY_free(keys[1]);
}

/*
 * Partitions: a user-only CRL (number 5) and a CA-only one (number 9) of
 * one issuer. The next build may bring newer ones, but an older CRL for
 * one partition is a rollback, refused unless allowed, even while the
 * other partition moves on.
 */
Test(input_crl, partition_rollback_refused)
{
	EVP_PKEY *key = load_key("ca.key");
	struct input_opts o = opts("x");
	struct input_prev_opts po;
	struct ffile_info prev;
	struct ffile_scope psc;
	struct input_set s;
	X509_CRL *u5, *u4, *c9, *c10;
	char err[1024];

	u5 = X509_CRL_new();
	u4 = X509_CRL_new();
	c9 = X509_CRL_new();
	c10 = X509_CRL_new();
	cr_assert(u5 != NULL && u4 != NULL && c9 != NULL && c10 != NULL);
	crl_add_idp(u5, false, 1);
	crl_add_idp(u4, false, 1);
	crl_add_idp(c9, false, 2);
	crl_add_idp(c10, false, 2);
	crl_finish(u5, key, 5);
	crl_finish(u4, key, 4);
	crl_finish(c9, key, 9);
	crl_finish(c10, key, 10);

	input_set_init(&s);
	cr_assert_eq(crl_read(&s, u5, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, c9, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_eq(s.scopes[0].npart, 2);
	psc = s.scopes[0];
	input_set_free(&s);
	memset(&prev, 0, sizeof(prev));
	prev.version = 7;
	prev.nscopes = 1;
	prev.scopes = &psc;
	memset(&po, 0, sizeof(po));
	po.max_shrink_pct = 50;
	po.quiet = true;

	/* Newer CA partition, older user partition: refused. */
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, u4, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, c10, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), -1);
	cr_assert(strstr(err, "(user certificates) has CRL number \"04\"") !=
	    NULL, "%s", err);
	cr_assert(strstr(err, "older than the one version 7 used (CRL number "
	    "\"05\"") != NULL, "%s", err);
	cr_assert(strstr(err, "--allow-crl-rollback") != NULL, "%s", err);
	po.allow_rollback = true;
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	po.allow_rollback = false;
	input_set_free(&s);

	/* The same user partition and a newer CA one: no rollback. */
	input_set_init(&s);
	cr_assert_eq(crl_read(&s, u5, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(crl_read(&s, c10, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(input_check_previous(&s, &prev, &po, err, sizeof(err)), 0,
	    "%s", err);
	input_set_free(&s);
	X509_CRL_free(u5);
	X509_CRL_free(u4);
	X509_CRL_free(c9);
	X509_CRL_free(c10);
	EVP_PKEY_free(key);
}

/*
 * The scope of one build from CRLs of ca (NULL-terminated), resolved: into
 * *sc, as a previous version would have described it.
 */
static void
resolved_scope(struct ffile_scope *sc, X509_CRL *const *crls)
{
	struct input_opts o = opts("x");
	struct input_set s;
	char err[1024];

	input_set_init(&s);
	for (; *crls != NULL; crls++)
		cr_assert_eq(crl_read(&s, *crls, &o, err, sizeof(err)), 0,
		    "%s", err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(s.nscopes, 1);
	*sc = s.scopes[0];
	input_set_free(&s);
}

/* input_check_previous of a build from crls against prev: its result. */
static int
check_against(const struct ffile_info *prev, X509_CRL *const *crls,
    bool allow, char *err, size_t errlen)
{
	struct input_opts o = opts("x");
	struct input_prev_opts po;
	struct input_set s;
	int rc;

	memset(&po, 0, sizeof(po));
	po.max_shrink_pct = 100;
	po.quiet = true;
	po.allow_rollback = allow;
	input_set_init(&s);
	for (; *crls != NULL; crls++)
		cr_assert_eq(crl_read(&s, *crls, &o, err, errlen), 0, "%s",
		    err);
	cr_assert_eq(input_resolve_crls(&s, true, false, err, errlen), 0,
	    "%s", err);
	rc = input_check_previous(&s, prev, &po, err, errlen);
	input_set_free(&s);
	return rc;
}

/*
 * A change of coverage is no way around the rollback check: an older
 * user-only partition after a newer full CRL, an older full CRL after
 * newer user-only and CA-only partitions, and an older full CRL given
 * with a newer partition are refused (across coverages by thisUpdate);
 * newer CRLs of another coverage are not.
 */
Test(input_crl, coverage_change_rollback_refused)
{
	EVP_PKEY *key = load_key("ca.key");
	struct ffile_info prev;
	struct ffile_scope psc;
	X509_CRL *f5, *u10, *f11, *u12, *c13, *f14;
	char err[1024];

	f5 = X509_CRL_new();
	u10 = X509_CRL_new();
	f11 = X509_CRL_new();
	u12 = X509_CRL_new();
	c13 = X509_CRL_new();
	f14 = X509_CRL_new();
	cr_assert(f5 != NULL && u10 != NULL && f11 != NULL && u12 != NULL &&
	    c13 != NULL && f14 != NULL);
	crl_add_idp(u10, false, 1);
	crl_add_idp(u12, false, 1);
	crl_add_idp(c13, false, 2);
	crl_finish_at(f5, key, 5, 900);
	crl_finish_at(u10, key, 10, 600);
	crl_finish_at(f11, key, 11, 300);
	crl_finish_at(u12, key, 12, 200);
	crl_finish_at(c13, key, 13, 200);
	crl_finish_at(f14, key, 14, 100);
	memset(&prev, 0, sizeof(prev));
	prev.version = 3;
	prev.nscopes = 1;
	prev.scopes = &psc;

	/* Version 3 used the full CRL 11. */
	resolved_scope(&psc, (X509_CRL *[]){ f11, NULL });
	cr_assert_eq(psc.npart, 0);
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ u10, NULL }, false,
	    err, sizeof(err)), -1, "older user-only partition accepted");
	cr_assert(strstr(err, "for coverage part 0 (user certificates) (CRL "
	    "number \"0a\"") != NULL, "%s", err);
	cr_assert(strstr(err, "older than the CRL version 3 used for the "
	    "whole scope") != NULL, "%s", err);
	cr_assert(strstr(err, "--allow-crl-rollback") != NULL, "%s", err);
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ u10, NULL }, true,
	    err, sizeof(err)), 0, "%s", err);
	/* Newer partitions (CRL numbers of their own) are no rollback. */
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ u12, c13, NULL },
	    false, err, sizeof(err)), 0, "%s", err);
	/* An older full CRL given with a newer partition still is one. */
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ f5, u12, NULL },
	    false, err, sizeof(err)), -1, "older full CRL beside a partition "
	    "accepted");
	cr_assert(strstr(err, "(CRL number \"05\"") != NULL, "%s", err);

	/* Version 3 used the user-only CRL 12 and the CA-only CRL 13. */
	resolved_scope(&psc, (X509_CRL *[]){ u12, c13, NULL });
	cr_assert_eq(psc.npart, 2);
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ f11, NULL }, false,
	    err, sizeof(err)), -1, "older full CRL accepted");
	cr_assert(strstr(err, "for the whole scope (CRL number \"0b\"") !=
	    NULL, "%s", err);
	cr_assert(strstr(err, "(user certificates), which covers some of "
	    "the same certificates (CRL number \"0c\"") != NULL, "%s", err);
	cr_assert_eq(check_against(&prev, (X509_CRL *[]){ f14, NULL }, false,
	    err, sizeof(err)), 0, "%s", err);

	X509_CRL_free(f5);
	X509_CRL_free(u10);
	X509_CRL_free(f11);
	X509_CRL_free(u12);
	X509_CRL_free(c13);
	X509_CRL_free(f14);
	EVP_PKEY_free(key);
}

/*
 * Every byte value at every place of a 20-byte id (the word-at-a-time
 * check of plain ids, then the byte loop): a space, a tab, a control
 * byte, DEL and a lone byte above 0x7f are refused at their column;
 * every printable byte is an id.
 */
Test(input, every_byte_at_every_column_of_an_id)
{
	struct input_set s;
	struct input_opts o = opts("t");
	char text[32], err[512], want[64];
	unsigned c;

	o.format = INPUT_TEXT;	/* '[' or '{' first is not JSON here */
	size_t at;
	int rc;

	for (c = 0; c < 256; c++) {
		for (at = 0; at < 20; at++) {
			/* Spaces at either end are trimmed and a '#' first
			 * makes a comment: other tests cover those. */
			if ((at == 0 || at == 19) && strchr(" \t\r\v\f", (int)c)
			    != NULL)
				continue;
			if (at == 0 && c == '#')
				continue;
			memset(text, 'a', 20);
			text[at] = (char)c;
			text[20] = '\n';
			input_set_init(&s);
			err[0] = '\0';
			rc = input_read_buf(&s, "list.txt", text, 21, &o, err,
			    sizeof(err));
			if (c >= 0x21 && c <= 0x7e) {
				cr_assert_eq(rc, 0, "byte 0x%02x at %zu: %s", c,
				    at, err);
				cr_assert_eq(input_set_records(&s), 1);
			} else if (c == 0) {
				cr_assert_eq(rc, -1);
				cr_assert(strstr(err, ":1: NUL byte") != NULL,
				    "NUL at %zu: %s", at, err);
			} else if (c == '\n') {
				/* Two ids, or one and an empty line. */
				cr_assert_eq(rc, 0, "newline at %zu: %s", at,
				    err);
			} else {
				cr_assert_eq(rc, -1, "byte 0x%02x at %zu "
				    "accepted", c, at);
				cr_assert(snprintf(want, sizeof(want),
				    ":1: column %zu: ", at + 1) > 0);
				cr_assert(strstr(err, want) != NULL,
				    "byte 0x%02x at %zu: %s", c, at, err);
			}
			input_set_free(&s);
		}
	}
}

/*
 * After a list's first id only the id changes (the scope was checked
 * once): an id over REVKEY_ID_MAX bytes anywhere is still refused with
 * its line and the same message as the first, and the ids before and
 * after it are the ids, byte for byte.
 */
Test(input, long_id_refused_at_any_line)
{
	struct input_set s;
	struct input_opts o = opts("t");
	char text[3 * (REVKEY_ID_MAX + 2)], err[512], want[64];
	struct table_rec rec;
	size_t line, n, i, at;

	o.format = INPUT_TEXT;
	for (line = 1; line <= 3; line++) {
		for (at = 0, i = 1; i <= 3; i++) {
			n = i == line ? REVKEY_ID_MAX + 1 : REVKEY_ID_MAX;
			memset(text + at, 'a' + (int)i, n);
			at += n;
			text[at++] = '\n';
		}
		input_set_init(&s);
		cr_assert_eq(input_read_buf(&s, "list.txt", text, at, &o, err,
		    sizeof(err)), -1);
		cr_assert(snprintf(want, sizeof(want), ":%zu: id is %d bytes, "
		    "over the limit of %d", line, REVKEY_ID_MAX + 1,
		    REVKEY_ID_MAX) > 0);
		cr_assert(strstr(err, want) != NULL, "line %zu: %s", line, err);
		input_set_free(&s);
	}
	/* Three ids at the limit: all three, each its own bytes. */
	for (at = 0, i = 1; i <= 3; i++) {
		memset(text + at, 'a' + (int)i, REVKEY_ID_MAX - i);
		at += REVKEY_ID_MAX - i;
		text[at++] = '\n';
	}
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "list.txt", text, at, &o, err,
	    sizeof(err)), 0, "%s", err);
	table_builder_sort_unique(&s.builder);
	cr_assert_eq(input_set_records(&s), 3);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(table_builder_get(&s.builder, i, &rec), 0);
		cr_assert_str_eq(rec.key.scope, "t");
		cr_assert_eq(rec.key.id_len, REVKEY_ID_MAX - (i + 1));
		cr_assert_eq(rec.key.id[0], 'a' + (int)(i + 1));
		cr_assert_eq(rec.key.id[rec.key.id_len - 1], 'a' + (int)(i + 1));
	}
	input_set_free(&s);
}

/*
 * A list past INPUT_RESERVE_MIN (16 MB) reserves a record per line and
 * has the memory prepared ahead by threads: every id is read as from a
 * small list, and a bad line near the end is still refused with its line
 * number, nothing of the file kept.
 */
Test(input, large_text_list_reserved_ahead)
{
	struct input_set s;
	struct input_opts o = opts("default");
	char dir[] = "/tmp/revcheck-input-XXXXXX", path[256], err[512] = "";
	size_t n = 900000, i, len = 0;
	char *text = malloc(n * 24 + 64);

	cr_assert_not_null(text);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, 25, "tok-%016zx\n",
		    i * 0x9e3779b1u);
	cr_assert_gt(len, (size_t)16 << 20);
	write_file(path, text, len);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), n);
	cr_assert(find_str(&s, "default", "tok-0000000000000000") >= 0);
	snprintf(err, sizeof(err), "tok-%016zx", (n - 1) * 0x9e3779b1u);
	cr_assert(find_str(&s, "default", err) >= 0, "%s", err);
	input_set_free(&s);

	/* A mark inside the second-to-last id. */
	memcpy(text + len - 30, "\xef\xbb\xbf", 3);
	write_file(path, text, len);
	input_set_init(&s);
	cr_assert_eq(input_read(&s, path, &o, err, sizeof(err)), -1);
	snprintf(path + strlen(dir), sizeof(path) - strlen(dir), ":%zu: ",
	    n - 1);
	cr_assert(strstr(err, path + strlen(dir)) != NULL &&
	    strstr(err, "byte order mark") != NULL, "%s", err);
	cr_assert_eq(input_set_records(&s), 0);
	input_set_free(&s);
	snprintf(path, sizeof(path), "%s/ids.txt", dir);
	unlink(path);
	rmdir(dir);
	free(text);
}

/* The length of the DER header at p (short or long form). */
static size_t
der_hlen(const unsigned char *p)
{
	return p[1] < 0x80 ? 2 : 2 + (size_t)(p[1] & 0x7f);
}

/*
 * crl_content_digest: the signature algorithm inside tbsCertList does
 * not change it, any other byte does (an issuer byte here), and cut
 * anywhere the DER is refused or digested without reading past its end.
 */
Test(input_crl, content_digest_ignores_the_signature_algorithm_only)
{
	unsigned char *der, *cp, a[32], b[32];
	char path[512];
	size_t derlen, t, alg, i;

	pki_path(path, sizeof(path), "crl.der");
	der = slurp(path, &derlen);
	cr_assert_not_null(der);
	cr_assert_eq(crl_content_digest(der, derlen, a), 0);
	/* tbsCertList, its version, its signature AlgorithmIdentifier. */
	t = der_hlen(der);
	t += der_hlen(der + t);
	alg = der[t] == 0x02 ? t + der_hlen(der + t) + der[t + 1] : t;
	cr_assert_eq(der[alg], 0x30);
	cp = malloc(derlen);
	cr_assert_not_null(cp);
	memcpy(cp, der, derlen);
	cp[alg + 3 + cp[alg + 3]] ^= 1;	/* the OID's last byte */
	cr_assert_eq(crl_content_digest(cp, derlen, b), 0);
	cr_assert_eq(memcmp(a, b, 32), 0, "the signature algorithm counted");
	memcpy(cp, der, derlen);
	i = alg + 2 + der[alg + 1];	/* the issuer Name */
	cp[i + 12] ^= 1;
	cr_assert_eq(crl_content_digest(cp, derlen, b), 0);
	cr_assert_neq(memcmp(a, b, 32), 0, "an issuer byte did not count");
	for (i = 0; i < derlen; i++) {
		unsigned char *cut = malloc(i > 0 ? i : 1);

		cr_assert_not_null(cut);
		memcpy(cut, der, i);
		cr_assert_eq(crl_content_digest(cut, i, b), -1,
		    "a CRL cut at %zu bytes was digested", i);
		free(cut);
	}
	free(cp);
	free(der);
}

/* base64 of der[0..len) into a new string, a newline every wrap chars (0: none). */
static char *
b64_of(const unsigned char *der, size_t len, size_t wrap)
{
	size_t n = 4 * ((len + 2) / 3), i, o = 0;
	char *one = malloc(n + 1), *out = malloc(2 * n + 2);

	cr_assert(one != NULL && out != NULL);
	cr_assert_eq((size_t)EVP_EncodeBlock((unsigned char *)one, der,
	    (int)len), n);
	for (i = 0; i < n; i++) {
		out[o++] = one[i];
		if (wrap > 0 && (i + 1) % wrap == 0)
			out[o++] = '\n';
	}
	out[o++] = '\n';
	out[o] = '\0';
	free(one);
	return out;
}

/*
 * A CRL (or a certificate) in base64 without its PEM lines is refused
 * saying what it looks like and how to fix it, not read as a list whose
 * one id is the whole text; a list of ids that only looks like base64
 * is still a list.
 */
Test(input_crl, base64_without_armour_refused_with_advice)
{
	struct input_set s;
	struct input_opts o = opts("default");
	unsigned char *der, *cder = NULL;
	static const char ids[] = "MIIBaaaaBBBBccccDDDDeeeeFFFFggggHHHHiiii"
	    "JJJJkkkkLLLLmmmmNNNNoooo\nMIICpppp\n";
	char path[512], err[512], *b;
	size_t derlen, wraps[] = { 0, 64, 76 }, i;
	int clen;

	input_set_init(&s);
	pki_path(path, sizeof(path), "crl.der");
	der = slurp(path, &derlen);
	for (i = 0; i < sizeof(wraps) / sizeof(wraps[0]); i++) {
		b = b64_of(der, derlen, wraps[i]);
		err[0] = '\0';
		cr_assert_eq(input_read_buf(&s, "crl.b64", b, strlen(b), &o,
		    err, sizeof(err)), -1, "wrap %zu: read", wraps[i]);
		cr_assert(strstr(err, "looks like a base64 CRL without PEM "
		    "armour") != NULL && strstr(err, "-----BEGIN X509 "
		    "CRL-----") != NULL && strstr(err, "openssl crl -inform "
		    "DER") != NULL, "wrap %zu: %s", wraps[i], err);
		cr_assert_eq(input_set_records(&s), 0);
		free(b);
	}
	/* Told it is a text list, it is refused all the same. */
	b = b64_of(der, derlen, 64);
	o.format = INPUT_TEXT;
	cr_assert_eq(input_read_buf(&s, "crl.b64", b, strlen(b), &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "base64 CRL without PEM armour") != NULL, "%s",
	    err);
	o.format = INPUT_AUTO;
	/* Cut short, it is no longer one DER object: read as text. */
	b[strlen(b) - 9] = '\n';
	b[strlen(b) - 8] = '\0';
	err[0] = '\0';
	(void)input_read_buf(&s, "cut.b64", b, strlen(b), &o, err,
	    sizeof(err));
	cr_assert_null(strstr(err, "PEM armour"), "%s", err);
	free(b);
	/* A certificate says so. */
	clen = i2d_X509(pki_cas[0], &cder);
	cr_assert_gt(clen, 0);
	b = b64_of(cder, (size_t)clen, 64);
	cr_assert_eq(input_read_buf(&s, "ca.b64", b, strlen(b), &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "looks like a base64 certificate without PEM "
	    "armour") != NULL && strstr(err, "--issuer") != NULL, "%s", err);
	free(b);
	OPENSSL_free(cder);
	free(der);
	input_set_free(&s);
	/* Ids in base64's alphabet are ids. */
	input_set_init(&s);
	cr_assert_eq(input_read_buf(&s, "ids.txt", ids, strlen(ids), &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	input_set_free(&s);
}
