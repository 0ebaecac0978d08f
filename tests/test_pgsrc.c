/* test_pgsrc.c - tests of the PostgreSQL source's value parsing and of input_read_rows */
/*
 * The server side (snapshots, changes, notifications) is tested against a
 * real PostgreSQL in tests/integration/it_postgresql.sh and it_follow.sh;
 * these tests cover what needs no server.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "input.h"
#include "pgsrc.h"

Test(pgsrc, parses_postgresql_iso_times)
{
	int64_t t = -1;

	cr_assert_eq(pgsrc_parse_time("2026-01-02 03:04:05+00", &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time("2026-01-02 03:04:05.123456+00", &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time("2026-01-02 04:04:05+01", &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time("2026-01-02 03:34:05+00:30", &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time("2026-01-02T03:04:05Z", &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time("1767323045", &t), 0);
	cr_assert_eq(t, 1767323045);
}

Test(pgsrc, refuses_what_is_not_a_time)
{
	int64_t t = 42;

	cr_assert_eq(pgsrc_parse_time("infinity", &t), -1);
	cr_assert_eq(pgsrc_parse_time("-infinity", &t), -1);
	cr_assert_eq(pgsrc_parse_time("2026-01-02 03:04:05 BC", &t), -1);
	cr_assert_eq(pgsrc_parse_time("2026-01-02 03:04:05", &t), -1);
	cr_assert_eq(pgsrc_parse_time("", &t), -1);
	cr_assert_eq(pgsrc_parse_time("99999999999999999999", &t), -1);
	cr_assert_eq(pgsrc_parse_time("12345-01-02 03:04:05+00", &t), -1);
	cr_assert_eq(t, 42, "a refused time leaves the output alone");
}

/*
 * A database's time out of range once stopped every build and follow
 * round: it is represented, conservatively, never refused.
 */
Test(pgsrc, times_out_of_range_are_represented_conservatively)
{
	int64_t t = 42;

	cr_assert_eq(pgsrc_parse_time_lenient("2026-01-02 03:04:05+00", false,
	    &t), 0);
	cr_assert_eq(t, 1767323045);
	cr_assert_eq(pgsrc_parse_time_lenient("2026-01-02 03:04:05+00", true,
	    &t), 0);
	cr_assert_eq(t, 1767323045);
	/* revoked_at: infinity and far future the latest, far past the earliest. */
	cr_assert_eq(pgsrc_parse_time_lenient("infinity", false, &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MAX);
	cr_assert_eq(pgsrc_parse_time_lenient("12345-01-02 03:04:05+00", false,
	    &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MAX);
	cr_assert_eq(pgsrc_parse_time_lenient("garbage", false, &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MAX);
	cr_assert_eq(pgsrc_parse_time_lenient("-infinity", false, &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN);
	cr_assert_eq(pgsrc_parse_time_lenient("1900-01-01 00:00:00+00", false,
	    &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN);
	cr_assert_eq(pgsrc_parse_time_lenient("0044-03-15 00:00:00+00 BC",
	    false, &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN);
	/* expires_at: infinity never expires; the far past has expired. */
	cr_assert_eq(pgsrc_parse_time_lenient("infinity", true, &t), 1);
	cr_assert_eq(t, 0, "no expiry");
	cr_assert_eq(pgsrc_parse_time_lenient("12345-01-02 03:04:05+00", true,
	    &t), 1);
	cr_assert_eq(t, 0);
	cr_assert_eq(pgsrc_parse_time_lenient("garbage", true, &t), 1);
	cr_assert_eq(t, 0, "unreadable: never shortens a revocation");
	cr_assert_eq(pgsrc_parse_time_lenient("1900-01-01 00:00:00+00", true,
	    &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN);
	cr_assert_eq(pgsrc_parse_time_lenient("-infinity", true, &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN);
	cr_assert_eq(pgsrc_parse_time_lenient("1970-01-01 00:00:00+00", true,
	    &t), 1);
	cr_assert_eq(t, PGSRC_TIME_MIN, "0 would read as no expiry");
}

/* fix: pgsrc_row_fix() of (scope, id, reason); returns its result. */
static int
fix(const char *scope, const char *id, size_t id_len, const char *reason,
    struct input_row *row, struct pgsrc_rowbuf *buf, char *why,
    size_t whylen)
{
	memset(row, 0, sizeof(*row));
	row->scope = scope;
	row->id = id;
	row->id_len = id_len;
	row->reason = reason;
	why[0] = '\0';
	return pgsrc_row_fix(row, NULL, buf, why, whylen);
}

/*
 * Only a row no check can name is quarantined: a check's scope and id go
 * through revkey_scope_valid() and revkey_from_text(), which refuse
 * these the same way (svc/checkio.c). A reason is cleaned, an id with
 * a control byte kept.
 */
Test(pgsrc, only_rows_no_check_can_name_are_quarantined)
{
	static const char x509[] = "x509:"
	    "abababababababababababababababababababababababababababababababab";
	struct pgsrc_rowbuf clean;
	char why[160], big[1100], reason[100];
	struct input_row row;
	struct table_rec rec;
	struct revkey k;
	char err[256];

	memset(big, 'x', sizeof(big));
	cr_assert_eq(fix("default", big, 1025, NULL, &row, &clean, why,
	    sizeof(why)), -1);
	cr_assert(strstr(why, "over the limit") != NULL, "%s", why);
	cr_assert_eq(revkey_from_text(&k, "default", big, 1025, err,
	    sizeof(err)), -1, "a check cannot name it either");
	cr_assert_eq(fix("default", big, 1024, NULL, &row, &clean, why,
	    sizeof(why)), 0, "%s", why);
	cr_assert_eq(fix("default", "", 0, NULL, &row, &clean, why,
	    sizeof(why)), -1);
	cr_assert_eq(fix("bad scope", "a", 1, NULL, &row, &clean, why,
	    sizeof(why)), -1);
	cr_assert(strstr(why, "invalid scope") != NULL, "%s", why);
	cr_assert_eq(fix("x509:zz", "0a", 2, NULL, &row, &clean, why,
	    sizeof(why)), -1);
	cr_assert_eq(fix(x509, "zz", 2, NULL, &row, &clean, why,
	    sizeof(why)), -1);
	cr_assert(strstr(why, "not hex") != NULL, "%s", why);
	cr_assert_eq(fix(x509, " :: ", 4, NULL, &row, &clean, why,
	    sizeof(why)), -1, "no hex digit: no serial");
	cr_assert_eq(fix(x509, "0x0A", 4, NULL, &row, &clean, why,
	    sizeof(why)), 0, "%s", why);
	/* A control byte: a check names it (id=ctl%01), so it is kept. */
	cr_assert_eq(fix("default", "ctl\001id", 6, NULL, &row, &clean, why,
	    sizeof(why)), 0, "%s", why);
	cr_assert(row.any_bytes);
	cr_assert_eq(input_row_rec(&row, NULL, &rec, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_eq(rec.key.id_len, 6);
	/* Reasons: cut to 63, non-ASCII one '?' a character. */
	memset(reason, 'r', 80);
	reason[80] = '\0';
	cr_assert_eq(fix("default", "a", 1, reason, &row, &clean, why,
	    sizeof(why)), PGSRC_FIX_REASON);
	cr_assert_eq(strlen(row.reason), TABLE_REASON_MAX - 1);
	cr_assert_eq(fix("default", "a", 1, "cl\xc3\xa9 \x01x", &row, &clean,
	    why, sizeof(why)), PGSRC_FIX_REASON);
	cr_assert_str_eq(row.reason, "cl? ?x");
	cr_assert_eq(input_row_rec(&row, NULL, &rec, err, sizeof(err)), 0,
	    "%s", err);
	cr_assert_str_eq(rec.reason, "cl? ?x");
	cr_assert_eq(fix("default", "a", 1, "keyCompromise", &row, &clean,
	    why, sizeof(why)), 0);
	cr_assert_str_eq(row.reason, "keyCompromise");
}

/* The key a check derives from serial text s in the X.509 scope x509. */
static struct revkey
serial_key(const char *x509, const char *s)
{
	struct revkey k;
	char err[160];

	cr_assert_eq(revkey_from_text(&k, x509, s, strlen(s), err,
	    sizeof(err)), 0, "%s: %s", s, err);
	return k;
}

/*
 * A serial with white space around it or odd colon grouping is one a
 * certificate can still carry: the row revokes the serial of its hex
 * digits (as the removal recheck reads it), never left out, which
 * would un-revoke it. Only text that is no serial at all is quarantined.
 */
Test(pgsrc, serial_with_stray_separators_still_revokes)
{
	static const char x509[] = "x509:"
	    "abababababababababababababababababababababababababababababababab";
	static const struct {
		const char *id, *as;
	} cases[] = {
		{ " 0A", "0a" }, { "0a\n", "0a" }, { "12:3", "0123" },
		{ "\t01:23 ", "0123" }, { "01 23 45", "012345" },
		{ "-  0x0A", "-0a" }, { ":0a:", "0a" },
	};
	static const char *const bad[] = { " ", ": :", "0a;1", "0g", "-" };
	struct pgsrc_rowbuf buf;
	struct input_row row;
	struct table_rec rec;
	struct revkey want;
	char why[160], err[256], big[2 * REVKEY_ID_MAX + 4];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(fix(x509, cases[i].id, strlen(cases[i].id), NULL,
		    &row, &buf, why, sizeof(why)), PGSRC_FIX_SERIAL,
		    "\"%s\": %s", cases[i].id, why);
		cr_assert_eq(input_row_rec(&row, NULL, &rec, err,
		    sizeof(err)), 0, "%s", err);
		want = serial_key(x509, cases[i].as);
		cr_assert(rec.key.id_len == want.id_len && memcmp(rec.key.id,
		    want.id, want.id_len) == 0, "\"%s\" revokes %s",
		    cases[i].id, cases[i].as);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(fix(x509, bad[i], strlen(bad[i]), NULL, &row,
		    &buf, why, sizeof(why)), -1, "\"%s\"", bad[i]);
	/* Over the cap once the separators are gone: no serial either. */
	memset(big, 'a', sizeof(big));
	big[0] = ' ';
	cr_assert_eq(fix(x509, big, sizeof(big), NULL, &row, &buf, why,
	    sizeof(why)), -1);
	/* Other scopes keep their bytes: " 0A" there is its own id. */
	cr_assert_eq(fix("default", " 0A", 3, NULL, &row, &buf, why,
	    sizeof(why)), 0);
	cr_assert_eq(row.id_len, 3);
}

/* A row source over a fixed array. */
struct rows {
	const struct input_row *v;
	size_t n, i;
	int fail_at;	/* 1-based row at which the source fails, 0 never */
};

static int
rows_next(void *arg, struct input_row *row, char *err, size_t errlen)
{
	struct rows *r = arg;

	if (r->fail_at != 0 && r->i + 1 == (size_t)r->fail_at) {
		snprintf(err, errlen, "source broke");
		return -1;
	}
	if (r->i == r->n)
		return 0;
	*row = r->v[r->i++];
	return 1;
}

static struct input_opts
rows_opts(void)
{
	struct input_opts o;

	memset(&o, 0, sizeof(o));
	o.scope = "default";
	o.now = 1767323045;
	return o;
}

Test(input_rows, rows_enter_the_set_with_their_scopes)
{
	const struct input_row v[] = {
		{ NULL, "tok-1", 5, 0, NULL, false },
		{ "api", "jti-9", 5, 1767323045, "keyCompromise", false },
	};
	struct rows r = { v, 2, 0, 0 };
	struct input_opts o = rows_opts();
	struct input_set s;
	struct table_rec rec;
	char err[256];

	input_set_init(&s);
	cr_assert_eq(input_read_rows(&s, "db", rows_next, &r, &o, err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(input_set_records(&s), 2);
	cr_assert_eq(s.nscopes, 2);
	cr_assert_str_eq(s.scopes[0].name, "default");
	cr_assert_str_eq(s.scopes[1].name, "api");
	cr_assert_eq(table_builder_get(&s.builder, 1, &rec), 0);
	cr_assert_str_eq(rec.reason, "keyCompromise");
	cr_assert_eq(rec.revoked_at, 1767323045);
	input_set_free(&s);
}

Test(input_rows, no_row_covers_the_default_scope)
{
	struct rows r = { NULL, 0, 0, 0 };
	struct input_opts o = rows_opts();
	struct input_set s;
	char err[256];

	input_set_init(&s);
	/* No row at all would un-revoke the scope: refused by default. */
	cr_assert_eq(input_read_rows(&s, "db", rows_next, &r, &o, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "db: no ids") != NULL, "%s", err);
	cr_assert_eq(s.nscopes, 0);
	o.allow_empty = true;
	r.i = 0;
	cr_assert_eq(input_read_rows(&s, "db", rows_next, &r, &o, err,
	    sizeof(err)), 0);
	cr_assert_eq(s.nscopes, 1);
	cr_assert_str_eq(s.scopes[0].name, "default");
	input_set_free(&s);
}

/* Each hostile row fails the read, names the row, and leaves s alone. */
static void
expect_refused(const struct input_row *bad, const char *want)
{
	const struct input_row v[] = {
		{ "ok", "fine", 4, 0, NULL, false },
		*bad,
	};
	struct rows r = { v, 2, 0, 0 };
	struct input_opts o = rows_opts();
	struct input_set s;
	char err[256];

	input_set_init(&s);
	cr_assert_eq(input_read_rows(&s, "db", rows_next, &r, &o, err,
	    sizeof(err)), -1, "accepted a row that should fail with %s", want);
	cr_assert(strstr(err, want) != NULL, "error \"%s\" lacks \"%s\"", err,
	    want);
	cr_assert(strstr(err, "db: row 2") != NULL, "error \"%s\" names no row",
	    err);
	cr_assert_eq(input_set_records(&s), 0, "a failed read left records behind");
	cr_assert_eq(s.nscopes, 0, "a failed read left scopes behind");
	input_set_free(&s);
}

Test(input_rows, hostile_rows_are_refused)
{
	static char big[2000];
	struct input_row row;

	memset(big, 'x', sizeof(big));
	row = (struct input_row){ "bad scope", "x", 1, 0, NULL, false };
	expect_refused(&row, "invalid scope");
	row = (struct input_row){ NULL, "x", 0, 0, NULL, false };
	expect_refused(&row, "empty id");
	row = (struct input_row){ NULL, big, sizeof(big), 0, NULL, false };
	expect_refused(&row, "over the limit");
	row = (struct input_row){ NULL, "x", 1, 0, "line\nbreak", false };
	expect_refused(&row, "reason");
	row = (struct input_row){ NULL, "x", 1, -5, NULL, false };
	expect_refused(&row, "before 1970");
	row = (struct input_row){ "x509:00", "x", 1, 0, NULL, false };
	expect_refused(&row, "invalid scope");
}

Test(input_rows, a_failing_source_leaves_the_set_as_it_was)
{
	const struct input_row v[] = {
		{ NULL, "a", 1, 0, NULL, false },
		{ NULL, "b", 1, 0, NULL, false },
	};
	struct rows r = { v, 2, 0, 2 };
	struct input_opts o = rows_opts();
	struct input_set s;
	char err[256];

	input_set_init(&s);
	cr_assert_eq(input_read_rows(&s, "db", rows_next, &r, &o, err,
	    sizeof(err)), -1);
	cr_assert_str_eq(err, "source broke");
	cr_assert_eq(input_set_records(&s), 0);
	cr_assert_eq(s.nscopes, 0);
	input_set_free(&s);
}

static void
expect_match_text(const char *scope, const char *id, const char *want)
{
	struct revkey k;
	char err[256], out[64];
	long n;

	cr_assert_eq(revkey_from_text(&k, scope, id, strlen(id), err,
	    sizeof(err)), 0, "%s: %s", id, err);
	n = pgsrc_key_match_text(&k, out, sizeof(out));
	cr_assert_eq(n, (long)strlen(want), "%s: %ld", id, n);
	cr_assert_str_eq(out, want, "%s", id);
}

/*
 * The recheck finds every row that spells a removed serial: the server
 * reduces a row's id to its hex digits without leading zeros, so the key
 * side must give exactly that for every spelling revkey accepts.
 */
Test(pgsrc, match_text_of_a_serial_is_its_digits_for_every_spelling)
{
	static const char *sc =
	    "x509:abababababababababababababababababababababababababababababababab";
	static const char *a[] = { "0A", "0a", "a", "00:0a", "0x0A", "0X00a",
	    "000a" };
	size_t i;

	for (i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		expect_match_text(sc, a[i], "a");
	expect_match_text(sc, "-0a", "a");	/* the sign is compared later */
	expect_match_text(sc, "1F:00", "1f00");
	expect_match_text(sc, "0", "");
	expect_match_text(sc, "00:00", "");
	expect_match_text(sc, "-0", "");
	expect_match_text(sc, "deadBEEF", "deadbeef");
}

Test(pgsrc, match_text_of_a_token_is_its_id)
{
	struct revkey k;
	char err[256], out[8];

	expect_match_text("default", "Tok-0A", "Tok-0A");
	expect_match_text("sub:https://issuer", "x\"y\\z", "x\"y\\z");
	cr_assert_eq(revkey_from_text(&k, "default", "12345678", 8, err,
	    sizeof(err)), 0);
	cr_assert_eq(pgsrc_key_match_text(&k, out, sizeof(out)), -1);
}

/* A standby streaming, caught up, its last message 300 ms old. */
static struct pgsrc_standby
sb_streaming(void)
{
	struct pgsrc_standby s;

	memset(&s, 0, sizeof(s));
	s.in_recovery = s.receiver = s.visible = s.streaming = true;
	snprintf(s.status, sizeof(s.status), "streaming");
	s.have_receive = s.have_replay = s.have_end = s.have_age = true;
	s.receive_lsn = s.replay_lsn = s.end_lsn = 0x3016a78;
	s.age_ms = 300;
	return s;
}

Test(pgsrc, a_primary_is_current_whatever_the_bound)
{
	struct pgsrc_standby s;
	int64_t lag = 42;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(pgsrc_standby_judge(&s, 0, &lag, NULL, 0),
	    PGSRC_SB_PRIMARY);
	cr_assert_eq(lag, 0);
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_PRIMARY);
	cr_assert_eq(lag, 0);
}

Test(pgsrc, a_standby_is_refused_without_a_bound)
{
	struct pgsrc_standby s = sb_streaming();
	char why[512];
	int64_t lag = 42;

	cr_assert_eq(pgsrc_standby_judge(&s, 0, &lag, why, sizeof(why)),
	    PGSRC_SB_NOT_ALLOWED);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "standby") != NULL, "%s", why);
	cr_assert(strstr(why, "--standby-max-lag") != NULL, "%s", why);
}

Test(pgsrc, a_streaming_standby_within_the_bound_is_current)
{
	struct pgsrc_standby s = sb_streaming();
	int64_t lag = 0;

	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_CURRENT);
	/* 300 ms + the 1 s margin, rounded up. */
	cr_assert_eq(lag, 2);
	s.age_ms = 0;
	cr_assert_eq(pgsrc_standby_judge(&s, 1, &lag, NULL, 0),
	    PGSRC_SB_CURRENT);
	cr_assert_eq(lag, 1);
	/* Replay past the sender's end (WAL the standby wrote itself) is fine. */
	s.replay_lsn = s.receive_lsn + 100;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_CURRENT);
}

Test(pgsrc, a_standby_whose_last_message_is_too_old_is_behind)
{
	struct pgsrc_standby s = sb_streaming();
	char why[512];
	int64_t lag = 0;

	/* 4.001 s + 1 s margin: 6 s, over 5. */
	s.age_ms = 4001;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_BEHIND);
	cr_assert_eq(lag, 6);
	cr_assert(strstr(why, "4001 ms") != NULL, "%s", why);
	/* 4.000 s + 1 s: exactly 5, within. */
	s.age_ms = 4000;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_CURRENT);
	cr_assert_eq(lag, 5);
	/* Hours without a message (replication broken, status stale). */
	s.age_ms = INT64_C(3) * 3600 * 1000;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_BEHIND);
	s.age_ms = INT64_MAX;
	cr_assert_eq(pgsrc_standby_judge(&s, 86400, &lag, NULL, 0),
	    PGSRC_SB_BEHIND);
	cr_assert_gt(lag, 86400);
}

Test(pgsrc, a_standby_whose_replay_is_behind_is_behind_by_an_unknown_time)
{
	struct pgsrc_standby s = sb_streaming();
	char why[512];
	int64_t lag = 0;

	/* Received, not replayed: a fresh keepalive proves nothing. */
	s.replay_lsn = s.receive_lsn - 1;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_BEHIND);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "received 0/3016A78") != NULL, "%s", why);
	/* Replayed all it has, but the sender named a later end of WAL. */
	s = sb_streaming();
	s.end_lsn = s.replay_lsn + 1;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_BEHIND);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "end of WAL") != NULL, "%s", why);
	/* Paused, even with nothing new received yet. */
	s = sb_streaming();
	s.paused = true;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_BEHIND);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "paused") != NULL, "%s", why);
}

Test(pgsrc, a_standby_that_shows_nothing_is_unknown)
{
	struct pgsrc_standby s;
	char why[512];
	int64_t lag = 0;

	/* No WAL receiver: archive recovery, or the stream broke. */
	s = sb_streaming();
	s.receiver = s.visible = s.streaming = false;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_UNKNOWN);
	cr_assert_eq(lag, -1);
	/* Not streaming (waiting, restarting, stopping). */
	s = sb_streaming();
	s.streaming = false;
	snprintf(s.status, sizeof(s.status), "waiting");
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_UNKNOWN);
	cr_assert(strstr(why, "waiting") != NULL, "%s", why);
	/* The first message naming the sender's end has not come yet. */
	s = sb_streaming();
	s.have_end = false;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_UNKNOWN);
	s = sb_streaming();
	s.have_age = false;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_UNKNOWN);
	s = sb_streaming();
	s.have_replay = false;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, NULL, 0),
	    PGSRC_SB_UNKNOWN);
	/* A receipt in the standby's future: its clock went back. */
	s = sb_streaming();
	s.age_ms = -2000;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_UNKNOWN);
	cr_assert_eq(lag, -1);
}

Test(pgsrc, a_standby_this_role_cannot_read_names_the_privilege)
{
	struct pgsrc_standby s = sb_streaming();
	char why[512];
	int64_t lag = 0;

	/* Without pg_read_all_stats only the receiver's pid is shown. */
	s.visible = s.streaming = false;
	s.have_end = s.have_age = false;
	cr_assert_eq(pgsrc_standby_judge(&s, 5, &lag, why, sizeof(why)),
	    PGSRC_SB_NO_PRIVILEGE);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "pg_read_all_stats") != NULL, "%s", why);
}

/* ---- the trigger's mode and logical replication (pgsrc_repl_judge) ---- */

/* revcheck_revocations with its trigger in mode, then revcheck_changes. */
static void
repl_rels(struct pgsrc_repl_rel v[2], char mode, const char *subs,
    const char *logsubs)
{
	memset(v, 0, 2 * sizeof(*v));
	v[0].rel = "revcheck_revocations";
	v[0].mode = mode;
	v[0].path = true;
	v[0].subs = subs;
	v[1].rel = "revcheck_changes";
	v[1].subs = logsubs;
}

Test(pgsrc_repl, an_always_trigger_is_fine_subscribed_or_not)
{
	struct pgsrc_repl_rel v[2];
	char why[1024];

	repl_rels(v, 'A', NULL, NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_OK);
	cr_assert_str_empty(why);
	repl_rels(v, 'A', "s", NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_OK);
	/* Whether a subscription writes the table does not matter then. */
	repl_rels(v, 'A', NULL, NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, false, why, sizeof(why)),
	    PGSRC_REPL_OK);
	/* No trigger at all is pgsrc_check_trigger()'s to refuse. */
	cr_assert_eq(pgsrc_repl_judge(v + 1, 1, true, why, sizeof(why)),
	    PGSRC_REPL_OK);
}

Test(pgsrc_repl, a_default_mode_trigger_on_a_primary_is_a_warning)
{
	struct pgsrc_repl_rel v[3];
	char why[1024];

	repl_rels(v, 'O', NULL, NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_WARN);
	cr_assert(strstr(why, "session_replication_role = replica") != NULL,
	    "%s", why);
	cr_assert(strstr(why, "ALTER TABLE revcheck_revocations ENABLE ALWAYS "
	    "TRIGGER revcheck_changes_trg") != NULL, "%s", why);
	/* A --query's second table in the default mode is named too. */
	repl_rels(v, 'A', NULL, NULL);
	v[2] = v[0];
	v[2].rel = "public.more";
	v[2].mode = 'O';
	cr_assert_eq(pgsrc_repl_judge(v, 3, true, why, sizeof(why)),
	    PGSRC_REPL_WARN);
	cr_assert(strstr(why, "ALTER TABLE public.more ENABLE ALWAYS") != NULL,
	    "%s", why);
	/* Disabled ('D') and replica-only ('R') are pgsrc_check_trigger()'s. */
	v[2].mode = 'D';
	cr_assert_eq(pgsrc_repl_judge(v, 3, true, why, sizeof(why)),
	    PGSRC_REPL_OK);
}

Test(pgsrc_repl, a_default_mode_trigger_on_a_subscribed_table_is_refused)
{
	struct pgsrc_repl_rel v[3];
	char why[1024];

	repl_rels(v, 'O', "revsub", NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "subscription revsub") != NULL, "%s", why);
	cr_assert(strstr(why, "ALTER TABLE revcheck_revocations ENABLE ALWAYS "
	    "TRIGGER revcheck_changes_trg") != NULL, "%s", why);
	/* A --query's other table, subscribed, in the default mode. */
	repl_rels(v, 'A', NULL, NULL);
	v[2] = v[0];
	v[2].rel = "public.more";
	v[2].mode = 'O';
	v[2].subs = "s1, s2";
	cr_assert_eq(pgsrc_repl_judge(v, 3, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "public.more") != NULL, "%s", why);
	cr_assert(strstr(why, "s1, s2") != NULL, "%s", why);
}

Test(pgsrc_repl, a_replicated_change_log_is_refused_whatever_the_mode)
{
	struct pgsrc_repl_rel v[2];
	char why[1024];

	repl_rels(v, 'A', "s", "s");
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "revcheck_changes is replicated") != NULL, "%s",
	    why);
	cr_assert(strstr(why, "transaction ids") != NULL, "%s", why);
	repl_rels(v, 'O', "s", "s");
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "revcheck_changes is replicated") != NULL, "%s",
	    why);
	repl_rels(v, 'A', NULL, "s");
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
}

Test(pgsrc_repl, a_subscribed_always_trigger_needs_a_search_path)
{
	struct pgsrc_repl_rel v[2];
	char why[1024];

	repl_rels(v, 'A', "s", NULL);
	v[0].path = false;
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "search_path") != NULL, "%s", why);
	/* Not subscribed: no apply worker runs it. */
	repl_rels(v, 'A', NULL, NULL);
	v[0].path = false;
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, sizeof(why)),
	    PGSRC_REPL_OK);
}

Test(pgsrc_repl, cannot_tell_refuses_only_the_default_mode)
{
	struct pgsrc_repl_rel v[2];
	char why[1024];

	repl_rels(v, 'O', NULL, NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, false, why, sizeof(why)),
	    PGSRC_REPL_REFUSE);
	cr_assert(strstr(why, "pg_subscription_rel") != NULL, "%s", why);
	cr_assert(strstr(why, "ENABLE ALWAYS") != NULL, "%s", why);
	repl_rels(v, 'A', NULL, NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, false, why, sizeof(why)),
	    PGSRC_REPL_OK);
	/* A short buffer is cut, never overrun. */
	repl_rels(v, 'O', "s", NULL);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, why, 8), PGSRC_REPL_REFUSE);
	cr_assert_eq(strlen(why), 7);
	cr_assert_eq(pgsrc_repl_judge(v, 2, true, NULL, 0), PGSRC_REPL_REFUSE);
}

/* ---- logical replication subscribers: pgsrc_sub_judge ------------------- */

/* A subscription enabled, ready, its worker idle after a keepalive 300 ms ago. */
static struct pgsrc_sub
sub_current(const char *name)
{
	struct pgsrc_sub s;

	memset(&s, 0, sizeof(s));
	s.name = name;
	s.rel = "revcheck_revocations";
	s.enabled = s.worker = s.keepalive = s.have_age = true;
	s.age_ms = 300;
	return s;
}

Test(pgsrc_sub, no_subscription_is_current_whatever_the_bound)
{
	int64_t lag = 42;

	cr_assert_eq(pgsrc_sub_judge(NULL, 0, 0, &lag, NULL, 0),
	    PGSRC_SUB_NONE);
	cr_assert_eq(lag, 0);
	cr_assert_eq(pgsrc_sub_judge(NULL, 0, 5, &lag, NULL, 0),
	    PGSRC_SUB_NONE);
	cr_assert_eq(lag, 0);
}

Test(pgsrc_sub, a_subscriber_is_refused_without_a_bound)
{
	struct pgsrc_sub s = sub_current("s");
	char why[1024];
	int64_t lag = 42;

	cr_assert_eq(pgsrc_sub_judge(&s, 1, 0, &lag, why, sizeof(why)),
	    PGSRC_SUB_NOT_ALLOWED);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "revcheck_revocations is replicated into this "
	    "database by subscription s:") != NULL, "%s", why);
	cr_assert(strstr(why, "read the publisher") != NULL, "%s", why);
	cr_assert(strstr(why, "--subscriber-max-lag") != NULL, "%s", why);
}

Test(pgsrc_sub, a_current_subscription_within_the_bound_is_current)
{
	struct pgsrc_sub s = sub_current("s");
	int64_t lag = 0;

	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, NULL, 0),
	    PGSRC_SUB_CURRENT);
	/* 300 ms + the 1 s margin, rounded up. */
	cr_assert_eq(lag, 2);
	s.age_ms = 0;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 1, &lag, NULL, 0),
	    PGSRC_SUB_CURRENT);
	cr_assert_eq(lag, 1);
	/* At the edge: 4000 ms + 1 s is 5 s. */
	s.age_ms = 4000;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, NULL, 0),
	    PGSRC_SUB_CURRENT);
	cr_assert_eq(lag, 5);
}

Test(pgsrc_sub, a_last_message_too_old_is_behind)
{
	struct pgsrc_sub s = sub_current("s");
	char why[1024];
	int64_t lag = 0;

	s.age_ms = 4001;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_BEHIND);
	cr_assert_eq(lag, 6);
	cr_assert(strstr(why, "last message of subscription s arrived 4001 "
	    "ms ago") != NULL, "%s", why);
	s.age_ms = INT64_MAX;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 86400, &lag, NULL, 0),
	    PGSRC_SUB_BEHIND);
	cr_assert(lag > 86400);
}

Test(pgsrc_sub, data_not_followed_by_a_keepalive_is_behind_by_an_unknown_time)
{
	struct pgsrc_sub s = sub_current("s");
	char why[1024];
	int64_t lag = 0;

	s.keepalive = false;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_BEHIND);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "may still be applying") != NULL, "%s", why);
}

Test(pgsrc_sub, a_subscription_that_shows_nothing_is_unknown)
{
	struct pgsrc_sub s;
	char why[1024];
	int64_t lag = 0;

	s = sub_current("s");
	s.enabled = false;
	s.worker = false;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "subscription s is disabled (ALTER SUBSCRIPTION "
	    "s ENABLE)") != NULL, "%s", why);

	s = sub_current("s");
	s.unready = "revcheck_revocations";
	s.unready_state = 'd';
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert(strstr(why, "not synchronized revcheck_revocations yet "
	    "(srsubstate 'd'") != NULL, "%s", why);
	/* Synchronized but not yet handed to the apply worker: not ready. */
	s.unready_state = 's';
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, NULL, 0),
	    PGSRC_SUB_UNKNOWN);

	s = sub_current("s");
	s.worker = false;
	s.have_age = false;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert(strstr(why, "no apply worker runs for subscription s") !=
	    NULL, "%s", why);

	s = sub_current("s");
	s.have_age = false;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert(strstr(why, "no message") != NULL, "%s", why);

	s = sub_current("s");
	s.age_ms = -1;
	cr_assert_eq(pgsrc_sub_judge(&s, 1, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert(strstr(why, "future") != NULL, "%s", why);
}

Test(pgsrc_sub, every_subscription_must_be_current_and_the_worst_lag_counts)
{
	struct pgsrc_sub v[3];
	char why[1024];
	int64_t lag = 0;

	v[0] = sub_current("a");
	v[1] = sub_current("b");
	v[2] = sub_current("c");
	v[1].age_ms = 2500;
	cr_assert_eq(pgsrc_sub_judge(v, 3, 5, &lag, NULL, 0),
	    PGSRC_SUB_CURRENT);
	cr_assert_eq(lag, 4);
	v[2].enabled = false;
	cr_assert_eq(pgsrc_sub_judge(v, 3, 5, &lag, why, sizeof(why)),
	    PGSRC_SUB_UNKNOWN);
	cr_assert_eq(lag, -1);
	cr_assert(strstr(why, "subscription c is disabled") != NULL, "%s",
	    why);
}
