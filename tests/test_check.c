/* test_check.c - the check logic: coverage, negatives, fall-through, fail closed, snapshots */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdarg.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "../svc/check.h"
#include "../svc/checkio.h"
#include "../svc/metrics.h"
#include "../svc/sbuf.h"
#include "../svc/snapshot.h"
#include "stale.h"
#include "svc_fixture.h"

#define NOW 1700000000

static const struct fx_rec recs[] = {
	{ "default", "tok-revoked", "keyCompromise", 1600000000 },
	{ "default", "tok-noreason", NULL, 0 },
	{ "issuer-a", "a1", "superseded", 1600000100 },
	{ "x509:0000000000000000000000000000000000000000000000000000000000000001",
	    "0A1B", "cessationOfOperation", 1600000200 },
};
static const char *extra[] = { "empty-scope" };

static EVP_PKEY *key;

static struct snapshot *
make_snapshot(uint64_t version, uint64_t m, uint32_t k, bool with_table)
{
	struct fx_pair p;
	struct ffile *ff;
	struct table *t = NULL;
	char err[256];

	if (key == NULL)
		cr_assert_not_null(key = sign_keygen());
	cr_assert_eq(fx_build(key, version, NOW - 10, NOW + 3600, recs, 4,
	    extra, 1, m, k, &p), 0);
	ff = ffile_parse(p.filter, p.flen, true, err, sizeof(err));
	cr_assert_not_null(ff, "%s", err);
	if (with_table) {
		t = table_parse(p.table, p.tlen, true, err, sizeof(err));
		cr_assert_not_null(t, "%s", err);
	} else
		free(p.table);
	return snapshot_new(ff, t, NOW);
}

static void
key_text(struct revkey *k, const char *scope, const char *id)
{
	char err[128];

	cr_assert_eq(revkey_from_text(k, scope, id, strlen(id), err,
	    sizeof(err)), 0, "%s", err);
}

static void
teardown(void)
{
	EVP_PKEY_free(key);
	key = NULL;
	check_set_authority(NULL, NULL);
	metrics_reset();
}

TestSuite(check, .fini = teardown);

Test(check, revoked_comes_from_the_table_with_reason)
{
	struct snapshot *s = make_snapshot(7, 1 << 16, 7, true);
	struct check_result r;
	struct revkey k;

	key_text(&k, "default", "tok-revoked");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_eq(r.source, CHECK_SRC_AUTHORITATIVE);
	cr_assert_eq(r.revoked_at, 1600000000);
	cr_assert_str_eq(r.reason, "keyCompromise");
	key_text(&k, "x509:0000000000000000000000000000000000000000000000000"
	    "000000000000001", "0a:1b");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "cessationOfOperation");
	cr_assert_eq(metrics_get(MET_CONFIRMED_REVOKED), 2);
	snapshot_release(s);
}

Test(check, zero_bit_is_not_revoked_from_filter)
{
	struct snapshot *s = make_snapshot(7, 1 << 16, 7, true);
	struct check_result r;
	struct revkey k;

	key_text(&k, "default", "tok-clean");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED);
	cr_assert_eq(r.source, CHECK_SRC_FILTER);
	cr_assert_eq(metrics_get(MET_FILTER_NEGATIVE), 1);
	snapshot_release(s);
}

Test(check, uncovered_scope_is_never_not_revoked)
{
	struct snapshot *s = make_snapshot(7, 1 << 16, 7, true);
	struct check_result r;
	struct revkey k;

	key_text(&k, "issuer-b", "a1");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_COVERED);
	key_text(&k, "empty-scope", "anything");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED, "a covered empty scope");
	snapshot_release(s);
}

/* With 8 bits and one probe nearly every absent key is a positive. */
static void
find_false_positive(const struct snapshot *s, struct revkey *k)
{
	char id[32];
	int i;

	for (i = 0; i < 10000; i++) {
		snprintf(id, sizeof(id), "absent-%d", i);
		key_text(k, "default", id);
		if (ffile_query(s->ff, k))
			return;
	}
	cr_assert_fail("no false positive found");
}

Test(check, false_positive_is_settled_by_the_table)
{
	struct snapshot *s = make_snapshot(7, 8, 1, true);
	struct check_result r;
	struct revkey k;

	find_false_positive(s, &k);
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED);
	cr_assert_eq(r.source, CHECK_SRC_AUTHORITATIVE);
	cr_assert_eq(metrics_get(MET_FALSE_POSITIVE), 1);
	snapshot_release(s);
}

Test(check, positive_without_authority_fails_closed)
{
	struct snapshot *s = make_snapshot(7, 8, 1, false);
	struct check_result r;
	struct revkey k;

	find_false_positive(s, &k);
	cr_assert_eq(check_key(s, &k, &r), -1);
	cr_assert_eq(metrics_get(MET_AUTHORITY_UNAVAILABLE), 1);
	key_text(&k, "default", "tok-revoked");
	cr_assert_eq(check_key(s, &k, &r), -1);
	snapshot_release(s);
}

static int
fake_authority(void *arg, const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	int *calls = arg;

	(void)s;
	(*calls)++;
	if (strcmp(k->scope, "default") != 0)
		return -1;
	r->status = CHECK_REVOKED;
	r->source = CHECK_SRC_AUTHORITATIVE;
	snprintf(r->reason, sizeof(r->reason), "upstream");
	return 0;
}

Test(check, edge_authority_hook_settles_positives)
{
	struct snapshot *s = make_snapshot(7, 1 << 16, 7, false);
	struct check_result r;
	struct revkey k;
	int calls = 0;

	check_set_authority(fake_authority, &calls);
	key_text(&k, "default", "tok-revoked");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "upstream");
	key_text(&k, "issuer-a", "a1");
	cr_assert_eq(check_key(s, &k, &r), -1);
	cr_assert_eq(calls, 2);
	snapshot_release(s);
}

/*
 * A batch decided at once (check_keys_tally, the filter asked through
 * bloom_query_keys) answers and counts exactly as one check at a time,
 * for every kind of key, at every chunk boundary, on an origin (table)
 * and without an authority (positives fail closed alike).
 */
static void
same_as_one_at_a_time(const struct snapshot *s, const struct revkey *keys,
    size_t n)
{
	struct check_result one, *many = calloc(n + 1, sizeof(*many));
	struct metrics_tally t1, t2;
	int rc, *rcs = calloc(n + 1, sizeof(*rcs));
	size_t i;

	cr_assert(many != NULL && rcs != NULL);
	memset(&t1, 0, sizeof(t1));
	memset(&t2, 0, sizeof(t2));
	check_keys_tally(s, keys, n, many, rcs, &t2);
	for (i = 0; i < n; i++) {
		rc = check_key_tally(s, &keys[i], &one, &t1);
		cr_assert_eq(rcs[i], rc, "key %zu of %zu", i, n);
		cr_assert_eq(memcmp(&many[i], &one, sizeof(one)), 0,
		    "key %zu of %zu: another answer", i, n);
	}
	cr_assert_eq(memcmp(&t1, &t2, sizeof(t1)), 0, "other counts");
	free(many);
	free(rcs);
}

Test(check, keys_at_once_answer_and_count_as_one_at_a_time)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 65, 130 };
	struct snapshot *snaps[3];
	struct revkey keys[130];
	char id[32];
	size_t i, j;

	snaps[0] = make_snapshot(7, 1 << 16, 7, true);
	snaps[1] = make_snapshot(8, 8, 1, true);	/* nearly all positive */
	snaps[2] = make_snapshot(9, 8, 1, false);	/* and no authority */
	for (i = 0; i < 130; i++) {
		snprintf(id, sizeof(id), "absent-%zu", i);
		switch (i % 7) {
		case 0:
			key_text(&keys[i], "default", "tok-revoked");
			break;
		case 1:
			key_text(&keys[i], "issuer-b", id);	/* not covered */
			break;
		case 2:
			key_text(&keys[i], recs[3].scope, "0a1b");
			break;
		case 3:
			key_text(&keys[i], "empty-scope", id);
			break;
		case 4:
			key_text(&keys[i], "issuer-a", "a1");
			break;
		default:
			key_text(&keys[i], "default", id);
		}
	}
	for (j = 0; j < 3; j++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			same_as_one_at_a_time(snaps[j], keys, sizes[i]);
	for (j = 0; j < 3; j++)
		snapshot_release(snaps[j]);
}

/*
 * Long keys fill the batch's buffer of encoded keys before its 64 slots:
 * ids of up to REVKEY_ID_MAX bytes among short ones answer and count as
 * one at a time, across the chunks the buffer's size makes.
 */
Test(check, long_keys_at_once_answer_as_one_at_a_time)
{
	static const size_t sizes[] = { 1, 6, 7, 8, 15, 40 };
	static char id[REVKEY_ID_MAX + 1];
	static struct revkey keys[40];
	static struct check_result r[40];
	struct snapshot *snaps[2];
	struct metrics_tally t;
	int rc[40];
	size_t i, j, len;

	snaps[0] = make_snapshot(7, 1 << 16, 7, true);
	snaps[1] = make_snapshot(8, 8, 1, true);	/* nearly all positive */
	for (i = 0; i < 40; i++) {
		len = i % 5 == 4 ? 12 : REVKEY_ID_MAX - i;
		memset(id, 'a' + (int)(i % 26), len);
		snprintf(id, 12, "long-%zu-", i);
		id[strlen(id)] = 'x';
		id[len] = '\0';
		key_text(&keys[i], i % 3 == 0 ? "issuer-a" : "default", id);
		cr_assert_eq(keys[i].id_len, len);
	}
	/* Revoked keys among them, in chunks the buffer's size cut. */
	for (i = 9; i < 40; i += 10)
		key_text(&keys[i], "default", "tok-revoked");
	for (j = 0; j < 2; j++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			same_as_one_at_a_time(snaps[j], keys, sizes[i]);
	for (j = 0; j < 2; j++) {
		memset(&t, 0, sizeof(t));
		check_keys_tally(snaps[j], keys, 40, r, rc, &t);
		for (i = 9; i < 40; i += 10)
			cr_assert(rc[i] == 0 && r[i].status == CHECK_REVOKED,
			    "snapshot %zu: revoked key %zu answered %d", j, i,
			    (int)r[i].status);
		snapshot_release(snaps[j]);
	}
}

Test(check, gate_refuses_missing_and_stale)
{
	struct snapshot_slot sl;
	struct stale_policy p = { 0, 300, 0 };
	const struct snapshot *s;
	enum stale_reason why;

	snapshot_slot_init(&sl);
	cr_assert_eq(check_begin(&sl, &p, NOW, &s, &why),
	    CHECK_GATE_NO_FILTER);
	cr_assert_null(s);
	snapshot_swap(&sl, make_snapshot(7, 1 << 16, 7, true));
	cr_assert_eq(check_begin(&sl, &p, NOW, &s, &why), CHECK_GATE_OK);
	cr_assert_eq(s->version, 7);
	check_end(s);
	cr_assert_eq(check_begin(&sl, &p, NOW + 3600, &s, &why),
	    CHECK_GATE_STALE);
	cr_assert_eq(why, STALE_EXPIRED);
	cr_assert_eq(check_begin(&sl, &p, NOW + 3599, &s, &why),
	    CHECK_GATE_OK);
	check_end(s);
	cr_assert_eq(metrics_get(MET_REFUSED_STALE), 1);
	cr_assert_eq(metrics_get(MET_REFUSED_NO_FILTER), 1);
	/*
	 * Every refusal ended its own section: a swap on this thread would
	 * otherwise wait for itself (and assert).
	 */
	snapshot_swap(&sl, make_snapshot(8, 1 << 16, 7, true));
	snapshot_slot_free(&sl);
}

/* /readyz's gate refuses as a check's does, but counts nothing. */
Test(check, probe_gate_counts_no_refusal)
{
	struct snapshot_slot sl;
	struct stale_policy p = { 0, 300, 0 };
	const struct snapshot *s;
	enum stale_reason why;
	uint64_t stale0, none0;
	int i;

	snapshot_slot_init(&sl);
	stale0 = metrics_get(MET_REFUSED_STALE);
	none0 = metrics_get(MET_REFUSED_NO_FILTER);
	for (i = 0; i < 10; i++)
		cr_assert_eq(check_probe_begin(&sl, &p, NOW, &s, &why),
		    CHECK_GATE_NO_FILTER);
	snapshot_swap(&sl, make_snapshot(7, 1 << 16, 7, true));
	for (i = 0; i < 10; i++) {
		cr_assert_eq(check_probe_begin(&sl, &p, NOW + 3600, &s, &why),
		    CHECK_GATE_STALE);
		cr_assert_null(s);
		cr_assert_eq(why, STALE_EXPIRED);
	}
	cr_assert_eq(metrics_get(MET_REFUSED_STALE), stale0);
	cr_assert_eq(metrics_get(MET_REFUSED_NO_FILTER), none0);
	cr_assert_eq(check_probe_begin(&sl, &p, NOW, &s, &why), CHECK_GATE_OK);
	cr_assert_eq(s->version, 7);
	check_end(s);
	/* A refused check still counts. */
	cr_assert_eq(check_begin(&sl, &p, NOW + 3600, &s, &why),
	    CHECK_GATE_STALE);
	cr_assert_eq(metrics_get(MET_REFUSED_STALE), stale0 + 1);
	snapshot_swap(&sl, make_snapshot(8, 1 << 16, 7, true));
	snapshot_slot_free(&sl);
}

Test(check, json_items)
{
	/* Key extraction only here: verification is tested below. */
	struct trust tr = { .revocation_only = true };
	enum jwt_verdict jv;
	struct revkey k;
	char err[256];
	cJSON *j;

#define J(text, want) do {						\
	j = cJSON_Parse(text);						\
	cr_assert_not_null(j, "%s", text);				\
	cr_assert_eq(checkio_key_from_json(j, &tr, &k, &jv, err,		\
	    sizeof(err)), want,						\
	    "%s: %s", text, err);					\
	cJSON_Delete(j);						\
} while (0)
	J("{\"id\":\"abc\"}", 0);
	cr_assert_str_eq(k.scope, "default");
	J("{\"id\":\"abc\",\"scope\":\"issuer-a\"}", 0);
	cr_assert_str_eq(k.scope, "issuer-a");
	J("{\"id\":\"\"}", -1);
	J("{\"id\":5}", -1);
	J("{\"id\":\"a\",\"scope\":7}", -1);
	J("{\"id\":\"a\",\"scope\":\"bad scope\"}", -1);
	J("{\"id\":\"a\",\"token\":\"x\"}", -1);
	J("{}", -1);
	J("[]", -1);
	J("{\"scope\":\"default\",\"cert\":\"x\"}", -1);
	J("{\"cert\":\"-----BEGIN CERTIFICATE-----\\nAAAA\\n"
	    "-----END CERTIFICATE-----\\n\"}", -1);
	J("{\"token\":\"not.a.jwt\"}", -1);
	/* {"alg":"none"}.{"jti":"tok-revoked"}. */
	J("{\"token\":\"eyJhbGciOiJub25lIn0.eyJqdGkiOiJ0b2stcmV2b2tlZCJ9.\"}",
	    0);
	cr_assert_str_eq(k.scope, "default");
	cr_assert_eq(k.id_len, strlen("tok-revoked"));
	cr_assert(memcmp(k.id, "tok-revoked", k.id_len) == 0);
	/* A repeated name: the first wins; other members are ignored. */
	J("{\"id\":\"first\",\"id\":\"second\",\"x\":1}", 0);
	cr_assert_eq(k.id_len, 5);
	cr_assert(memcmp(k.id, "first", 5) == 0);
	J("{\"scope\":\"s-1\",\"id\":\"a\",\"scope\":\"s-2\"}", 0);
	cr_assert_str_eq(k.scope, "s-1");
	J("{\"Id\":\"a\"}", -1);
#undef J
}

/* A batch counts in a tally and adds it once; NULL counts at once. */
Test(check, tally_adds_exactly_what_it_counted)
{
	struct metrics_tally t;
	uint64_t c0 = metrics_get(MET_CHECKS), n0 = metrics_get(MET_NOT_COVERED);
	int i;

	memset(&t, 0, sizeof(t));
	for (i = 0; i < 1000; i++)
		metrics_tally_inc(&t, MET_CHECKS);
	metrics_tally_inc(&t, MET_NOT_COVERED);
	cr_assert_eq(metrics_get(MET_CHECKS), c0, "nothing before the flush");
	metrics_tally_flush(&t);
	cr_assert_eq(metrics_get(MET_CHECKS), c0 + 1000);
	cr_assert_eq(metrics_get(MET_NOT_COVERED), n0 + 1);
	cr_assert_eq(t.n[MET_CHECKS], 0, "the flush zeroes the tally");
	metrics_tally_flush(&t);
	cr_assert_eq(metrics_get(MET_CHECKS), c0 + 1000, "a second flush adds 0");
	metrics_tally_inc(NULL, MET_CHECKS);
	cr_assert_eq(metrics_get(MET_CHECKS), c0 + 1001);
}

Test(check, body_with_control_byte_or_escaped_nul_is_refused)
{
#define C(lit, ok) { lit, sizeof(lit) - 1, ok }
	static const struct { const char *b; size_t n; bool ok; } cases[] = {
		C("{\"id\":\"tok-1\"}", true),
		C("{\"id\":\"a\\\\u0000\"}", true),	/* escaped backslash */
		C("{\"id\":\"a\\u0041\"}", true),
		C(" {\"id\":\"a\"}\r\n\t", true),
		C("{\"id\":\"a\0b\"}", false),	/* raw NUL */
		C("{\"id\":\"a\x01\"}", false),
		C("{\x01\"id\":\"a\"}", false),	/* outside a string */
		C("{\"id\":\"tok-1\\u0000x\"}", false),
		C("{\"i\\u0000d\":\"a\"}", false),
	};
	const char *why;
	cJSON *j;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		j = checkio_parse_body(cases[i].b, cases[i].n, &why);
		cr_assert_eq(j != NULL, cases[i].ok, "case %zu: %s", i,
		    why != NULL ? why : "accepted");
		cJSON_Delete(j);
	}
#undef C
}

/*
 * A read name in another case ("ID", "Scope", "Items") is refused, not
 * ignored: Go's encoding/json (and other case-insensitive readers) take
 * it for the name, and the last copy wins there, so a proxy or client
 * reading the body would see another id or scope than the one answered.
 * Go folds U+017F (long s) to "s" and U+212A (Kelvin) to "k" as well.
 */
Test(check, body_with_a_read_name_in_another_case_is_refused)
{
	static const struct { const char *b; bool ok; } cases[] = {
		{ "{\"id\":\"zz\",\"ID\":\"tok-1\"}", false },
		{ "{\"Id\":\"tok-1\",\"id\":\"zz\"}", false },
		{ "{\"id\":\"tok-1\",\"Scope\":\"x\"}", false },
		{ "{\"items\":[{\"id\":\"zz\",\"iD\":\"tok-1\"}]}", false },
		{ "{\"items\":[{\"id\":\"zz\"}],\"Items\":[]}", false },
		{ "{\"TOKEN\":\"a.b.c\",\"id\":\"zz\"}", false },
		{ "{\"cert\":\"x\",\"Chain\":[]}", false },
		{ "{\"id\":\"zz\",\"\\u017fcope\":\"x\"}", false },
		{ "{\"id\":\"zz\",\"\xc5\xbf" "cope\":\"x\"}", false },
		{ "{\"id\":\"zz\",\"to\\u212aen\":\"a.b.c\"}", false },
		{ "{\"id\":\"zz\",\"ids\":\"x\",\"identity\":1}", true },
		{ "{\"id\":\"zz\",\"note\":\"Scope\"}", true },
		{ "{\"id\":\"zz\",\"\\u0131d\":\"x\"}", true },
	};
	const char *why;
	cJSON *j;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		j = checkio_parse_body(cases[i].b, strlen(cases[i].b), &why);
		cr_assert_eq(j != NULL, cases[i].ok, "%s: %s", cases[i].b,
		    why != NULL ? why : "accepted");
		cJSON_Delete(j);
	}
}

Test(check, render_is_json_and_escaped)
{
	struct snapshot *s = make_snapshot(42, 1 << 16, 7, true);
	struct check_result r;
	struct revkey k;
	struct sbuf b;
	cJSON *j;

	key_text(&k, "default", "tok-revoked");
	cr_assert_eq(check_key(s, &k, &r), 0);
	sbuf_init(&b, 0, 0);
	checkio_render(&b, s, &k, &r);
	cr_assert_str_eq(b.p, "{\"status\":\"revoked\",\"source\":"
	    "\"authoritative\",\"scope\":\"default\",\"id\":\"tok-revoked\","
	    "\"filter_version\":42,\"revoked_at\":\"2020-09-13T12:26:40Z\","
	    "\"reason\":\"keyCompromise\"}");
	sbuf_free(&b);
	cr_assert_eq(revkey_set(&k, "default", "<\"\n\xff>", 5), 0);
	cr_assert_eq(check_key(s, &k, &r), 0);
	sbuf_init(&b, 0, 0);
	checkio_render(&b, s, &k, &r);
	j = cJSON_Parse(b.p);
	cr_assert_not_null(j, "%s", b.p);
	cr_assert(strstr(b.p, "<") == NULL);
	cJSON_Delete(j);
	sbuf_free(&b);
	snapshot_release(s);
}

struct reader_arg {
	struct snapshot_slot *sl;
	_Atomic bool *stop;
	uint64_t last;
	bool went_down;
};

static void *
reader(void *p)
{
	struct reader_arg *a = p;
	struct snapshot *s;

	while (!atomic_load(a->stop)) {
		if ((s = snapshot_acquire(a->sl)) == NULL)
			continue;
		if (s->version < a->last)
			a->went_down = true;
		a->last = s->version;
		/* Use it a little while a swap may happen. */
		(void)ffile_info(s->ff)->keys;
		snapshot_release(s);
	}
	return NULL;
}

Test(check, snapshots_swap_under_readers_and_free_exactly_once)
{
	struct snapshot_slot sl;
	struct reader_arg ra[4];
	pthread_t th[4];
	_Atomic bool stop = false;
	struct snapshot *held;
	uint64_t before = snapshot_freed_count();
	int i;

	snapshot_slot_init(&sl);
	snapshot_swap(&sl, make_snapshot(1, 1024, 3, true));
	held = snapshot_acquire(&sl);
	for (i = 0; i < 4; i++) {
		ra[i] = (struct reader_arg){ &sl, &stop, 0, false };
		pthread_create(&th[i], NULL, reader, &ra[i]);
	}
	for (i = 2; i <= 40; i++)
		snapshot_swap(&sl, make_snapshot((uint64_t)i, 1024, 3, true));
	atomic_store(&stop, true);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert(!ra[i].went_down);
	}
	/* Version 1 is still held: 38 freed (2..39), not 39. */
	cr_assert_eq(snapshot_freed_count() - before, 38);
	cr_assert_eq(held->version, 1);
	snapshot_release(held);
	cr_assert_eq(snapshot_freed_count() - before, 39);
	snapshot_slot_free(&sl);
	cr_assert_eq(snapshot_freed_count() - before, 40);
}

/* A PEM certificate with this serial, issued (self-signed) by CN=cn. */
static char *
chain_cert(long serial, const char *cn)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *nm = X509_NAME_new();
	BIO *bio = BIO_new(BIO_s_mem());
	char *pem, *data;
	long n;

	cr_assert(k != NULL && x != NULL && nm != NULL && bio != NULL);
	cr_assert(X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0) == 1);
	cr_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), serial) == 1);
	cr_assert(X509_set_issuer_name(x, nm) == 1);
	cr_assert(X509_set_subject_name(x, nm) == 1);
	cr_assert(X509_gmtime_adj(X509_getm_notBefore(x), 0) != NULL);
	cr_assert(X509_gmtime_adj(X509_getm_notAfter(x), 3600) != NULL);
	cr_assert(X509_set_pubkey(x, k) == 1);
	cr_assert(X509_sign(x, k, EVP_sha256()) > 0);
	cr_assert(PEM_write_bio_X509(bio, x) == 1);
	n = BIO_get_mem_data(bio, &data);
	cr_assert_not_null(pem = calloc(1, (size_t)n + 1));
	memcpy(pem, data, (size_t)n);
	BIO_free(bio);
	X509_NAME_free(nm);
	X509_free(x);
	EVP_PKEY_free(k);
	return pem;
}

/* pem_cat(a, b, ...): the texts one after the other, NULL-terminated. */
static char *
pem_cat(const char *first, ...)
{
	va_list ap;
	const char *p;
	size_t len = 0;
	char *out;

	va_start(ap, first);
	for (p = first; p != NULL; p = va_arg(ap, const char *))
		len += strlen(p);
	va_end(ap);
	cr_assert_not_null(out = calloc(1, len + 1));
	va_start(ap, first);
	for (p = first; p != NULL; p = va_arg(ap, const char *))
		memcpy(out + strlen(out), p, strlen(p) + 1);
	va_end(ap);
	return out;
}

Test(check, pem_chain_every_block_is_a_certificate_or_all_is_refused)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	char *a = chain_cert(0x21, "chain A"), *b = chain_cert(0x11, "chain B");
	char *t, err[256];
	size_t n;

#define PEM(text, max, want) do {					\
	n = 0;								\
	cr_assert_eq(checkio_keys_from_pem(text, strlen(text), keys, max,	\
	    &n, err, sizeof(err)), want, "%s", err);			\
} while (0)
	t = pem_cat("\n ", a, "\r\n", b, "\n\n", NULL);
	PEM(t, 8, 0);
	cr_assert_eq(n, 2, "both blocks read, surrounding whitespace allowed");
	cr_assert(keys[0].id_len == 1 && keys[0].id[0] == 0x21);
	cr_assert(keys[1].id_len == 1 && keys[1].id[0] == 0x11);
	cr_assert_str_neq(keys[0].scope, keys[1].scope);
	PEM(t, 1, -1);
	cr_assert(strstr(err, "more than 1") != NULL, "%s", err);
	free(t);
	/* Text between, before or after the blocks is refused, not skipped. */
	t = pem_cat(a, "junk\n", b, NULL);
	PEM(t, 8, -1);
	cr_assert(strstr(err, "certificate 2") != NULL, "%s", err);
	free(t);
	t = pem_cat("junk\n", a, NULL);
	PEM(t, 8, -1);
	free(t);
	t = pem_cat(a, "x", NULL);
	PEM(t, 8, -1);
	free(t);
	/* A BEGIN inside a block (the parser would skip to the second). */
	t = pem_cat("-----BEGIN CERTIFICATE-----\nAAAA\n", a, NULL);
	PEM(t, 8, -1);
	cr_assert(strstr(err, "BEGIN line before its END") != NULL, "%s", err);
	free(t);
	/* A block cut short, a bad body, another PEM type, nothing. */
	t = pem_cat(a, "-----BEGIN CERTIFICATE-----\nMIIB\n", NULL);
	PEM(t, 8, -1);
	free(t);
	PEM("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
	    8, -1);
	PEM("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	    8, -1);
	PEM(" \n\t", 8, -1);
	n = 0;
	cr_assert_eq(checkio_keys_from_pem("", 0, keys, 8, &n, err,
	    sizeof(err)), -1);
#undef PEM
	free(a);
	free(b);
}

Test(check, chain_json_caps_and_members)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	char *a = chain_cert(0x22, "chain leaf"), *b = chain_cert(0x11, "chain int");
	enum jwt_verdict jv;
	char err[300];
	cJSON *o, *arr;
	size_t n, i;

	cr_assert_not_null(o = cJSON_CreateObject());
	cJSON_AddStringToObject(o, "cert", a);
	cr_assert_not_null(arr = cJSON_AddArrayToObject(o, "chain"));
	for (i = 1; i < CHECKIO_CHAIN_MAX_CERTS; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(b));
	cr_assert_eq(checkio_chain_from_json(o, keys, &n, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(n, CHECKIO_CHAIN_MAX_CERTS);
	cr_assert(keys[0].id[0] == 0x22 && keys[7].id[0] == 0x11);
	cJSON_AddItemToArray(arr, cJSON_CreateString(b));
	cr_assert_eq(checkio_chain_from_json(o, keys, &n, err, sizeof(err)), -1,
	    "one certificate over the cap");
	cr_assert(strstr(err, "more than 8") != NULL, "%s", err);
	/* The same chain is no batch item: refused, never cut to the leaf. */
	cr_assert_eq(checkio_key_from_json(o, NULL, &keys[0], &jv, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "chain") != NULL, "%s", err);
	cJSON_Delete(o);

	/* Two blocks in a batch item's "cert" are refused too. */
	{
		char *two = pem_cat(a, b, NULL);

		cr_assert_not_null(o = cJSON_CreateObject());
		cJSON_AddStringToObject(o, "cert", two);
		cr_assert_eq(checkio_key_from_json(o, NULL, &keys[0], &jv, err,
		    sizeof(err)), -1);
		cr_assert_eq(checkio_chain_from_json(o, keys, &n, err,
		    sizeof(err)), 0, "%s", err);
		cr_assert_eq(n, 2, "a single check reads both");
		cJSON_Delete(o);
		free(two);
	}
	free(a);
	free(b);
}

Test(check, worst_verdict_over_a_chain)
{
	struct check_result r[4];

	memset(r, 0, sizeof(r));
	r[0].status = CHECK_NOT_REVOKED;
	r[1].status = CHECK_NOT_REVOKED;
	cr_assert_eq(check_worst(r, 2), 0, "all clean: the leaf");
	r[1].status = CHECK_NOT_COVERED;
	cr_assert_eq(check_worst(r, 2), 1, "not_covered beats not_revoked");
	r[2].status = CHECK_REVOKED;
	r[3].status = CHECK_NOT_COVERED;
	cr_assert_eq(check_worst(r, 4), 2, "revoked beats not_covered");
	r[0].status = CHECK_REVOKED;
	cr_assert_eq(check_worst(r, 4), 0, "the first of the worst");
	cr_assert_eq(check_worst(r, 1), 0);
}

/*
 * Fail closed: with no issuer configured and revocation-only not set
 * (and with no trust at all), a well-formed unsigned token is refused
 * as invalid_token, never answered from the filter.
 */
Test(check, json_token_refused_without_issuer)
{
	static const char body[] = "{\"token\":\"eyJhbGciOiJub25lIn0."
	    "eyJqdGkiOiJ0b2stcmV2b2tlZCJ9.\"}";
	struct trust required = { .revocation_only = false };
	enum jwt_verdict jv = JWT_VALID;
	struct revkey k;
	char err[256];
	cJSON *j = cJSON_Parse(body);

	cr_assert_not_null(j);
	cr_assert_eq(checkio_key_from_json(j, &required, &k, &jv, err,
	    sizeof(err)), -1);
	cr_assert_eq(jv, JWT_UNTRUSTED_ISSUER, "%s", err);
	cr_assert(checkio_invalid_token(jv));
	jv = JWT_VALID;
	cr_assert_eq(checkio_key_from_json(j, NULL, &k, &jv, err, sizeof(err)),
	    -1);
	cr_assert_eq(jv, JWT_UNTRUSTED_ISSUER, "%s", err);
	/* An unreadable token stays a bad request. */
	cJSON_Delete(j);
	j = cJSON_Parse("{\"token\":\"not.a.jwt\"}");
	cr_assert_eq(checkio_key_from_json(j, &required, &k, &jv, err,
	    sizeof(err)), -1);
	cr_assert_eq(jv, JWT_MALFORMED);
	cr_assert_not(checkio_invalid_token(jv));
	cJSON_Delete(j);
}

/*
 * With a settle slot bound (an edge's HTTP worker), check_key never calls
 * the authority: a positive is recorded once however often it is asked,
 * fails as pending until it has an outcome, then answers from it; a new
 * snapshot version asks again; past CHECK_SETTLE_PASSES nothing new is
 * recorded and a positive fails closed.
 */
Test(check, settle_slot_records_positives_once_and_answers_from_them)
{
	struct snapshot *s = make_snapshot(7, 1 << 16, 7, false);
	struct snapshot *s8 = make_snapshot(8, 1 << 16, 7, false);
	struct check_settle *st = NULL;
	struct check_result r;
	struct revkey k, neg;
	int calls = 0, i;

	check_set_authority(fake_authority, &calls);
	check_settle_bind(&st);
	key_text(&k, "default", "tok-revoked");
	key_text(&neg, "default", "tok-clean");
	for (i = 0; i < 200; i++) {
		cr_assert_eq(check_key(s, &k, &r), -1);
		cr_assert_eq(r.fail, CHECK_FAIL_PENDING);
	}
	cr_assert_eq(check_key(s, &neg, &r), 0, "a negative needs no authority");
	cr_assert_eq(r.status, CHECK_NOT_REVOKED);
	cr_assert_not_null(st);
	cr_assert_eq(st->n, 1, "200 asks of one key recorded once");
	cr_assert(check_settle_pending(st));
	/* What upstream_settle would do. */
	memset(&st->res[0], 0, sizeof(st->res[0]));
	st->res[0].status = CHECK_REVOKED;
	st->res[0].source = CHECK_SRC_AUTHORITATIVE;
	st->rc[0] = 0;
	st->asked = 1;
	cr_assert_not(check_settle_pending(st));
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	/* Settled for version 7, not for 8. */
	cr_assert_eq(check_key(s8, &k, &r), -1);
	cr_assert_eq(r.fail, CHECK_FAIL_PENDING);
	cr_assert_eq(st->n, 2);
	check_settle_fail_pending(st, CHECK_FAIL_BEHIND);
	cr_assert_eq(check_key(s8, &k, &r), -1);
	cr_assert_eq(r.fail, CHECK_FAIL_BEHIND);
	/* Out of passes: nothing new is recorded, the positive fails closed. */
	st->passes = CHECK_SETTLE_PASSES;
	key_text(&k, "issuer-a", "a1");
	cr_assert_eq(check_key(s, &k, &r), -1);
	cr_assert_eq(r.fail, CHECK_FAIL_UNAVAILABLE);
	cr_assert_eq(st->n, 2);
	cr_assert_eq(calls, 0, "the authority was called from the worker");
	check_settle_bind(NULL);
	/* Unbound, the authority is asked directly again. */
	cr_assert_eq(check_key(s, &k, &r), -1);
	cr_assert_eq(calls, 1);
	check_settle_free(st);
	snapshot_release(s);
	snapshot_release(s8);
}

/*
 * The fuse layout at several fingerprint widths behind the check path:
 * every key built in answers revoked from the table, one at a time and
 * batched; with no table and no authority every one of them fails closed,
 * never not_revoked. Absent keys answer as one at a time does.
 */
Test(check, fuse_widths_every_key_built_in_is_revoked_or_fails_closed)
{
	static const uint32_t ws[] = { 4, 7, 10, 13, 16 };
	enum { NK = 3000, NA = 500 };
	struct fx_rec *rs = calloc(NK, sizeof(*rs));
	char (*ids)[24] = calloc(NK + NA, sizeof(*ids));
	struct revkey *keys = calloc(NK + NA, sizeof(*keys));
	struct check_result *res = calloc(NK + NA, sizeof(*res));
	int *rcs = calloc(NK + NA, sizeof(*rcs));
	struct metrics_tally t;
	struct fx_pair p;
	struct snapshot *s;
	struct ffile *ff;
	struct table *tab;
	char err[256];
	size_t wi, i;
	int with_table;

	cr_assert(rs != NULL && ids != NULL && keys != NULL && res != NULL &&
	    rcs != NULL);
	if (key == NULL)
		cr_assert_not_null(key = sign_keygen());
	for (i = 0; i < NK + NA; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%s-%zu", i < NK ? "rev" :
		    "absent", i);
		if (i < NK) {
			rs[i].scope = "default";
			rs[i].id = ids[i];
			rs[i].reason = "keyCompromise";
			rs[i].revoked_at = 1600000000;
		}
		key_text(&keys[i], "default", ids[i]);
	}
	for (wi = 0; wi < sizeof(ws) / sizeof(ws[0]); wi++) {
		for (with_table = 0; with_table < 2; with_table++) {
			cr_assert_eq(fx_build_layout(BLOOM_FUSE, key, 1, NOW - 10,
			    NOW + 3600, rs, NK, NULL, 0, 0, ws[wi], &p), 0);
			ff = ffile_parse(p.filter, p.flen, true, err,
			    sizeof(err));
			cr_assert_not_null(ff, "%s", err);
			cr_assert_eq(ffile_info(ff)->layout, BLOOM_FUSE);
			cr_assert_eq(ffile_info(ff)->width, ws[wi]);
			tab = NULL;
			if (with_table) {
				tab = table_parse(p.table, p.tlen, true, err,
				    sizeof(err));
				cr_assert_not_null(tab, "%s", err);
			} else {
				free(p.table);
			}
			s = snapshot_new(ff, tab, NOW);
			cr_assert_not_null(s);
			memset(&t, 0, sizeof(t));
			check_keys_tally(s, keys, NK + NA, res, rcs, &t);
			for (i = 0; i < NK; i++) {
				if (with_table) {
					cr_assert_eq(rcs[i], 0);
					cr_assert_eq(res[i].status,
					    CHECK_REVOKED, "w=%u %s", ws[wi],
					    ids[i]);
				} else {
					cr_assert_eq(rcs[i], -1, "w=%u %s: "
					    "not failed closed", ws[wi],
					    ids[i]);
				}
			}
			same_as_one_at_a_time(s, keys, NK + NA);
			snapshot_release(s);
		}
	}
	free(rcs);
	free(res);
	free(keys);
	free(ids);
	free(rs);
}

/*
 * A token's keys: recs for an issuer "cut-only" with a subject and a
 * session cutoff and no jti revoked (an older builder covered only the
 * cutoff scopes), and "both" with a jti revoked and a subject cutoff.
 */
static const struct fx_rec cut_recs[] = {
	{ "sub:cut-only", "alice", "subject cutoff", 1600000300 },
	{ "sid:cut-only", "s-1", NULL, 0 },
	{ "both", "j-revoked", "keyCompromise", 1600000000 },
	{ "sub:both", "bob", NULL, 1600000500 },
};

static struct snapshot *
cut_snapshot(bool with_table)
{
	struct fx_pair p;
	struct ffile *ff;
	struct table *t = NULL;
	char err[256];

	if (key == NULL)
		cr_assert_not_null(key = sign_keygen());
	cr_assert_eq(fx_build(key, 9, NOW - 10, NOW + 3600, cut_recs, 4, NULL,
	    0, 1 << 16, 7, &p), 0);
	ff = ffile_parse(p.filter, p.flen, true, err, sizeof(err));
	cr_assert_not_null(ff, "%s", err);
	if (with_table) {
		t = table_parse(p.table, p.tlen, true, err, sizeof(err));
		cr_assert_not_null(t, "%s", err);
	} else
		free(p.table);
	return snapshot_new(ff, t, NOW);
}

static void
cut_set(struct trust_cutoffs *c, const char *iss, const char *sub,
    const char *sid, int64_t iat)
{
	memset(c, 0, sizeof(*c));
	if (sub != NULL) {
		cr_assert_eq(revkey_cutoff(&c->sub, REVKEY_SUB_PREFIX, iss, sub,
		    strlen(sub)), 0);
		c->has_sub = true;
	}
	if (sid != NULL) {
		cr_assert_eq(revkey_cutoff(&c->sid, REVKEY_SID_PREFIX, iss, sid,
		    strlen(sid)), 0);
		c->has_sid = true;
	}
	c->has_iat = iat != 0;
	c->iat = iat;
}

/*
 * The jti's scope not covered must not hide a cutoff: the old check
 * stopped at not_covered, and under authz_not_covered allow a token of a
 * revoked subject passed.
 */
Test(check, cutoff_revokes_a_token_whose_jti_scope_is_not_covered)
{
	struct snapshot *s = cut_snapshot(true);
	struct trust_cutoffs c;
	struct check_result r;
	struct revkey k;

	key_text(&k, "cut-only", "j1");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_COVERED, "the jti scope alone");
	cut_set(&c, "cut-only", "alice", NULL, NOW - 1000000000);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_eq(r.revoked_at, 1600000300);
	cr_assert_str_eq(r.reason, "subject cutoff");
	/* The session cutoff has no time: every token of it is revoked. */
	cut_set(&c, "cut-only", "carol", "s-1", NOW);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "session cutoff");
	/* Issued after the cutoff: the jti's answer stands, not_covered. */
	cut_set(&c, "cut-only", "alice", NULL, 1600000300);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_COVERED);
	/* Another subject, no cutoff: not_covered, never not_revoked. */
	cut_set(&c, "cut-only", "dave", "s-2", 0);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_COVERED);
	snapshot_release(s);
}

Test(check, token_keys_worst_verdict_wins)
{
	struct snapshot *s = cut_snapshot(true);
	struct trust_cutoffs c;
	struct check_result r;
	struct revkey k;

	/* A revoked jti stays revoked whatever its cutoffs say. */
	key_text(&k, "both", "j-revoked");
	cut_set(&c, "both", "bob", NULL, 1600000600);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "keyCompromise");
	/* A clean jti, its subject cut off before it was issued. */
	key_text(&k, "both", "j-clean");
	cut_set(&c, "both", "bob", NULL, 1600000400);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "subject cutoff");
	/* Its sid scope is not covered: that issuer has no such cutoff. */
	cut_set(&c, "both", "bob", "s-9", 1600000600);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED);
	cr_assert_eq(check_token(s, &k, NULL, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED);
	snapshot_release(s);
}

Test(check, token_merge_order_revoked_not_covered_not_revoked)
{
	static const enum check_status st[] = { CHECK_NOT_REVOKED,
	    CHECK_NOT_COVERED, CHECK_REVOKED };
	struct check_result r, cr;
	struct trust_cutoffs c;
	size_t i, j;

	memset(&c, 0, sizeof(c));
	c.has_iat = true;
	c.iat = 1000;
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			memset(&r, 0, sizeof(r));
			memset(&cr, 0, sizeof(cr));
			r.status = st[i];
			cr.status = st[j];
			cr.revoked_at = 2000;	/* after the token's iat */
			check_token_merge(&r, &cr, &c, true);
			cr_assert_eq(r.status, st[j] == CHECK_REVOKED ?
			    CHECK_REVOKED : st[i], "jti %zu, cutoff %zu", i, j);
			/* A cutoff before the token revokes nothing. */
			r.status = st[i];
			cr.revoked_at = 500;
			check_token_merge(&r, &cr, &c, false);
			cr_assert_eq(r.status, st[i], "jti %zu, cutoff %zu", i,
			    j);
			/* A cutoff of unknown time revokes every token. */
			cr.revoked_at = 0;
			check_token_merge(&r, &cr, &c, false);
			cr_assert_eq(r.status, st[j] == CHECK_REVOKED ?
			    CHECK_REVOKED : st[i]);
		}
	}
}

/* An authority that settles the cutoff scopes only. */
static int
cut_authority(void *arg, const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	int *calls = arg;

	(void)s;
	(*calls)++;
	if (!revkey_scope_is_cutoff(k->scope))
		return -1;
	r->status = CHECK_REVOKED;
	r->source = CHECK_SRC_AUTHORITATIVE;
	r->revoked_at = 1600000500;
	return 0;
}

/*
 * A jti positive the authority cannot settle does not hide a cutoff
 * that revokes the token; without one the token is refused (-1), never
 * answered.
 */
Test(check, token_cutoff_revokes_beside_an_unsettled_jti)
{
	struct snapshot *s = cut_snapshot(false);
	struct trust_cutoffs c;
	struct check_result r;
	struct revkey k;
	int calls = 0;

	check_set_authority(cut_authority, &calls);
	key_text(&k, "both", "j-revoked");
	cut_set(&c, "both", "bob", NULL, 1600000400);
	cr_assert_eq(check_token(s, &k, &c, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_str_eq(r.reason, "subject cutoff");
	cut_set(&c, "both", "bob", NULL, 1600000600);
	cr_assert_eq(check_token(s, &k, &c, &r), -1);
	cr_assert_eq(r.fail, CHECK_FAIL_UNAVAILABLE);
	snapshot_release(s);
}

/* ---- exact scopes ---------------------------------------------------- */

#define EXU	300		/* issued ids "u-0".."u-299" of scope "ex" */
#define EXR	12		/* the first EXR revoked */
#define EX_CUTOFF	(NOW - 86400)

struct ex_src {
	const char	*fmt;
	size_t		 i, n;
	unsigned char	 enc[REVKEY_ENC_MAX];
};

static int
ex_rewind(void *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	((struct ex_src *)arg)->i = 0;
	return 0;
}

static int
ex_next(void *arg, const unsigned char **kp, size_t *len, char *err,
    size_t errlen)
{
	struct ex_src *s = arg;
	struct revkey k;
	char id[32];

	(void)err;
	(void)errlen;
	if (s->i >= s->n)
		return 0;
	snprintf(id, sizeof(id), "%s%zu", s->fmt, s->i++);
	key_text(&k, "ex", id);
	*len = revkey_encode(&k, s->enc);
	*kp = s->enc;
	return 1;
}

/*
 * A pair with scope "ex" exact over U (its EXR revoked ids left out of
 * the bit array) beside "default" with one revoked id, as filterbuild
 * builds it.
 */
static struct snapshot *
ex_snapshot(bool with_table)
{
	struct ex_src rs = { "u-", 0, EXR, { 0 } };
	struct ex_src us = { "u-", 0, EXU, { 0 } };
	struct exact_src r = { &rs, ex_rewind, ex_next };
	struct exact_src u = { &us, ex_rewind, ex_next };
	struct table_builder tb;
	struct ffile_scope sc[2];
	struct pair_range skip;
	struct exact_stats st;
	struct pair_opts po;
	struct pair pair;
	struct revkey k;
	struct ffile *ff;
	struct table *t = NULL;
	unsigned char *blob, *tbytes;
	size_t blen, tlen, i;
	char err[256], id[32];

	if (key == NULL)
		cr_assert_not_null(key = sign_keygen());
	table_builder_init(&tb);
	memset(sc, 0, sizeof(sc));
	snprintf(sc[0].name, sizeof(sc[0].name), "default");
	sc[0].keys = 1;
	key_text(&k, "default", "tok-revoked");
	cr_assert_eq(table_builder_add(&tb, &k, 0, NULL), 0);
	snprintf(sc[1].name, sizeof(sc[1].name), "ex");
	sc[1].keys = EXR;
	for (i = 0; i < EXR; i++) {
		snprintf(id, sizeof(id), "u-%zu", i);
		key_text(&k, "ex", id);
		cr_assert_eq(table_builder_add(&tb, &k, 1600000000, "superseded"),
		    0);
	}
	table_builder_sort_unique(&tb);
	cr_assert_eq(exact_build(&r, &u, 99, &blob, &blen, &st, err,
	    sizeof(err)), 0, "%s", err);
	sc[1].exact = true;
	sc[1].ex.cutoff = EX_CUTOFF;
	sc[1].ex.issued = st.issued;
	sc[1].ex.blob = blob;
	sc[1].ex.blob_len = blen;
	skip.start = 1;		/* "default" sorts first */
	skip.end = 1 + EXR;
	memset(&po, 0, sizeof(po));
	po.key = key;
	po.version = 9;
	po.issued_at = NOW - 10;
	po.expires_at = NOW + 3600;
	po.fp_rate = 0.01;
	po.layout = BLOOM_FUSE;
	po.seed = 0x1234;
	po.fixed_seed = true;
	po.skip = &skip;
	po.nskip = 1;
	cr_assert_eq(pair_build(&pair, &tb, sc, 2, &po, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(table_builder_encode(&tb, &tbytes, &tlen, err,
	    sizeof(err)), 0);
	ff = ffile_parse(pair.filter, pair.filter_len, true, err, sizeof(err));
	pair.filter = NULL;
	cr_assert_not_null(ff, "%s", err);
	pair_free(&pair);
	free(blob);
	table_builder_free(&tb);
	if (with_table) {
		t = table_parse(tbytes, tlen, true, err, sizeof(err));
		cr_assert_not_null(t, "%s", err);
	} else
		free(tbytes);
	return snapshot_new(ff, t, NOW);
}

static void
ex_key(struct revkey *k, const char *fmt, size_t i, bool has, int64_t at)
{
	char id[32];

	snprintf(id, sizeof(id), "%s%zu", fmt, i);
	key_text(k, "ex", id);
	k->has_issued = has;
	k->issued_at = at;
}

/* Every id of U answered right from the structure, on an edge alone. */
Test(check, exact_scope_answers_every_issued_key_without_authority)
{
	struct snapshot *s = ex_snapshot(false);
	struct check_result r;
	struct revkey k;
	size_t i;

	for (i = 0; i < EXU; i++) {
		ex_key(&k, "u-", i, true, EX_CUTOFF - 5);
		cr_assert_eq(check_key(s, &k, &r), 0, "u-%zu", i);
		cr_assert_eq(r.status, i < EXR ? CHECK_REVOKED :
		    CHECK_NOT_REVOKED, "u-%zu", i);
		cr_assert_eq(r.source, CHECK_SRC_EXACT, "u-%zu", i);
	}
	cr_assert_eq(metrics_get(MET_EXACT_REVOKED), EXR);
	cr_assert_eq(metrics_get(MET_EXACT_NOT_REVOKED), EXU - EXR);
	cr_assert_eq(metrics_get(MET_FALLTHROUGH), 0, "no authority request");
	/* Issued exactly at the cutoff is in the set too. */
	ex_key(&k, "u-", 0, true, EX_CUTOFF);
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	/* The other scope answers from the bit array as before. */
	key_text(&k, "default", "tok-clean");
	cr_assert_eq(check_key(s, &k, &r), 0);
	cr_assert_eq(r.source, CHECK_SRC_FILTER);
	snapshot_release(s);
}

/*
 * A positive of the structure for a key not shown issued by the cutoff
 * (issued after it, or no issue time at all) is no proof: it goes to the
 * authority as a filter positive does, and without one it is refused,
 * never answered revoked or not_revoked. The revoked ids themselves
 * with a later issue time (the same serial issued again) are the
 * certain case; a stage-2 positive outside U is found by search.
 */
Test(check, exact_positive_after_the_cutoff_is_not_answered_alone)
{
	struct snapshot *s = ex_snapshot(false), *st = ex_snapshot(true);
	struct check_result r;
	struct revkey k;
	size_t i;

	ex_key(&k, "u-", 3, true, EX_CUTOFF + 1);
	cr_assert_eq(check_key(s, &k, &r), -1);
	cr_assert_eq(r.fail, CHECK_FAIL_UNAVAILABLE);
	ex_key(&k, "u-", 3, false, 0);
	cr_assert_eq(check_key(s, &k, &r), -1, "no issue time");
	cr_assert_eq(metrics_get(MET_EXACT_UNPROVEN), 2);
	/* With the table here, the table settles it. */
	ex_key(&k, "u-", 3, true, EX_CUTOFF + 1);
	cr_assert_eq(check_key(st, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_REVOKED);
	cr_assert_eq(r.source, CHECK_SRC_AUTHORITATIVE);
	cr_assert_str_eq(r.reason, "superseded");
	for (i = 0; i < 100000; i++) {
		ex_key(&k, "late-", i, true, EX_CUTOFF + 60);
		if (ffile_exact_query(ffile_scope(s->ff, "ex"), &k) ==
		    EXACT_REVOKED)
			break;
	}
	cr_assert_lt(i, 100000, "no stage-2 positive outside U in 10^5 ids");
	cr_assert_eq(check_key(s, &k, &r), -1, "late-%zu", i);
	cr_assert_eq(r.fail, CHECK_FAIL_UNAVAILABLE);
	cr_assert_eq(check_key(st, &k, &r), 0);
	cr_assert_eq(r.status, CHECK_NOT_REVOKED, "the table clears it");
	cr_assert_eq(r.source, CHECK_SRC_AUTHORITATIVE);
	snapshot_release(s);
	snapshot_release(st);
}

/* A batch decides exact keys as one check at a time does. */
Test(check, exact_scope_batch_matches_single_checks)
{
	struct snapshot *s = ex_snapshot(false);
	struct revkey keys[EXU + 1];
	struct check_result r[EXU + 1], one;
	struct metrics_tally t;
	int rc[EXU + 1];
	size_t i;

	for (i = 0; i < EXU; i++)
		ex_key(&keys[i], "u-", i, true, EX_CUTOFF);
	key_text(&keys[EXU], "default", "tok-clean");
	memset(&t, 0, sizeof(t));
	check_keys_tally(s, keys, EXU + 1, r, rc, &t);
	for (i = 0; i <= EXU; i++) {
		cr_assert_eq(rc[i], check_key(s, &keys[i], &one), "key %zu", i);
		cr_assert_eq(r[i].status, one.status, "key %zu", i);
		cr_assert_eq(r[i].source, one.source, "key %zu", i);
	}
	cr_assert_eq(t.n[MET_EXACT_REVOKED], EXR);
	snapshot_release(s);
}
