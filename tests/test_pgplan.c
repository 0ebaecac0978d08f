/* test_pgplan.c - tests of follow's pure rules on a --query: the plan walker, the SQL lexer, the key columns, the clock */
/*
 * lib/pgplan.c judges what the server answered without a server: canned
 * EXPLAIN (VERBOSE, FORMAT JSON) output (PostgreSQL's own where noted),
 * and SQL text. The server's side is tested against a real PostgreSQL in
 * tests/integration/it_follow_query.sh. The standby rule of lib/pgplan.c
 * (pgsrc_standby_judge()) is tested in test_pgsrc.c.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgplan.h"

/* ---- what a --query reads: the plan walker and the SQL lexer ---------- */

static bool
has(const struct pgsrc_names *n, const char *s)
{
	size_t i;

	for (i = 0; i < n->n; i++)
		if (strcmp(n->v[i], s) == 0)
			return true;
	return false;
}

static bool
has_rel(const struct pgsrc_reads *r, const char *nsp, const char *rel)
{
	size_t i;

	for (i = 0; i < r->rel.n; i++)
		if (strcmp(r->nsp.v[i], nsp) == 0 &&
		    strcmp(r->rel.v[i], rel) == 0)
			return true;
	return false;
}

static int
walk(const char *json, struct pgsrc_reads *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	err[0] = '\0';
	return pgsrc_plan_walk(json, strlen(json), r, err, errlen);
}

/* EXPLAIN (VERBOSE, FORMAT JSON) of a UNION: an Append over two scans. */
Test(pgsrc_plan, union_reads_both_tables)
{
	static const char j[] = "[{\"Plan\": {\"Node Type\": \"Aggregate\","
	    "\"Output\": [\"revcheck_revocations.id\"], \"Plans\": [{"
	    "\"Node Type\": \"Append\", \"Parent Relationship\": \"Outer\","
	    "\"Plans\": [{\"Node Type\": \"Seq Scan\", \"Relation Name\": "
	    "\"revcheck_revocations\", \"Schema\": \"public\", \"Alias\": "
	    "\"revcheck_revocations\", \"Output\": [\"revcheck_revocations.id\"]"
	    "}, {\"Node Type\": \"Seq Scan\", \"Relation Name\": \"other\", "
	    "\"Schema\": \"app\", \"Output\": [\"other.id\"]}]}]}}]";
	struct pgsrc_reads r;
	char err[512];

	cr_assert_eq(walk(j, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.rel.n, 2);
	cr_assert(has_rel(&r, "public", "revcheck_revocations"));
	cr_assert(has_rel(&r, "app", "other"));
	pgsrc_reads_free(&r);
}

/*
 * Scans under an InitPlan, a SubPlan, a CTE and a join, several levels
 * down; one table read twice counts once; names in expressions are seen.
 */
Test(pgsrc_plan, nested_initplan_subplan_cte)
{
	static const char j[] = "[{\"Plan\": {\"Node Type\": \"Hash Join\","
	    "\"Output\": [\"c.id\", \"$1\"], \"Hash Cond\": \"(c.id = r.id)\","
	    "\"Plans\": ["
	    "{\"Node Type\": \"Seq Scan\", \"Parent Relationship\": "
	    "\"InitPlan\", \"Subplan Name\": \"CTE c\", \"Relation Name\": "
	    "\"t_cte\", \"Schema\": \"public\"},"
	    "{\"Node Type\": \"Aggregate\", \"Parent Relationship\": "
	    "\"InitPlan\", \"Subplan Name\": \"InitPlan 2 (returns $1)\","
	    "\"Output\": [\"max(t_init.id)\"], \"Plans\": [{\"Node Type\": "
	    "\"Index Only Scan\", \"Relation Name\": \"t_init\", \"Schema\": "
	    "\"public\", \"Index Name\": \"t_init_pkey\"}]},"
	    "{\"Node Type\": \"CTE Scan\", \"CTE Name\": \"c\", \"Alias\": "
	    "\"c\", \"Filter\": \"(NOT (SubPlan 3)) AND app.f(c.id, 'g(x)')\","
	    "\"Plans\": [{\"Node Type\": \"Result\", \"Parent Relationship\": "
	    "\"SubPlan\", \"Subplan Name\": \"SubPlan 3\", \"Plans\": [{"
	    "\"Node Type\": \"Bitmap Heap Scan\", \"Relation Name\": "
	    "\"t_sub\", \"Schema\": \"s2\", \"Plans\": [{\"Node Type\": "
	    "\"Bitmap Index Scan\", \"Index Name\": \"t_sub_i\"}]}]}]},"
	    "{\"Node Type\": \"Hash\", \"Plans\": [{\"Node Type\": "
	    "\"Subquery Scan\", \"Alias\": \"r\", \"Plans\": [{\"Node Type\": "
	    "\"Seq Scan\", \"Relation Name\": \"t_cte\", \"Schema\": "
	    "\"public\"}]}]}]}}]";
	struct pgsrc_reads r;
	char err[512];

	cr_assert_eq(walk(j, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.rel.n, 3);
	cr_assert(has_rel(&r, "public", "t_cte"));
	cr_assert(has_rel(&r, "public", "t_init"));
	cr_assert(has_rel(&r, "s2", "t_sub"));
	cr_assert(has(&r.calls, "f"), "a call in a Filter");
	cr_assert(has(&r.calls, "max"));
	cr_assert(!has(&r.calls, "g"), "not inside a string constant");
	cr_assert(has(&r.idents, "app"));
	cr_assert(has(&r.ops, "="));
	pgsrc_reads_free(&r);
}

/* What the plan cannot see through is refused, naming it. */
Test(pgsrc_plan, unseen_reads_are_refused)
{
	static const struct {
		const char *node, *want;
	} c[] = {
		{ "{\"Node Type\": \"Function Scan\", \"Function Name\": "
		  "\"srf\", \"Schema\": \"public\"}", "Function Scan of public.srf" },
		{ "{\"Node Type\": \"Foreign Scan\", \"Relation Name\": "
		  "\"remote\", \"Schema\": \"public\"}", "Foreign Scan of public.remote" },
		{ "{\"Node Type\": \"Table Function Scan\"}", "Table Function Scan" },
		{ "{\"Node Type\": \"Custom Scan\"}", "Custom Scan" },
		{ "{\"Node Type\": \"Named Tuplestore Scan\"}", "Named Tuplestore" },
		{ "{\"Node Type\": \"Future Scan\"}", "Future Scan" },
	};
	struct pgsrc_reads r;
	char j[1024], err[512];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		/* Under a CTE of an Append: found at any depth. */
		snprintf(j, sizeof(j), "[{\"Plan\": {\"Node Type\": \"Append\","
		    "\"Plans\": [{\"Node Type\": \"Seq Scan\", \"Relation "
		    "Name\": \"t\", \"Schema\": \"public\"}, {\"Node Type\": "
		    "\"CTE Scan\", \"Plans\": [%s]}]}}]", c[i].node);
		cr_assert_eq(walk(j, &r, err, sizeof(err)), -1, "%s", c[i].want);
		cr_assert(strstr(err, c[i].want) != NULL, "%s: %s", c[i].want,
		    err);
		pgsrc_reads_free(&r);
	}
}

/* The plan is hostile input: shapes, depth and size are bounded. */
Test(pgsrc_plan, hostile_plans_are_refused)
{
	static const char *const bad[] = {
		"", "{}", "[]", "[1]", "[{}]", "[{\"Plan\": 1}]",
		"[{\"Plan\": {}}]", "[{\"Plan\": {\"Node Type\": 3}}]",
		"[{\"Plan\": {\"Node Type\": \"Seq Scan\", \"Relation Name\": "
		"\"t\"}}]",
		"[{\"Plan\": {\"Node Type\": \"Seq Scan\", \"Relation Name\": 1,"
		" \"Schema\": \"s\"}}]",
		"[{\"Plan\": {\"Node Type\": \"Append\", \"Plans\": {}}}]",
		"[{\"Plan\": {\"Node Type\": \"Append\", \"Plans\": [1]}}]",
		"[{\"Plan\": {\"Node Type\": \"Result\"}",
	};
	struct pgsrc_reads r;
	char err[512], *deep;
	size_t i, n, len = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(walk(bad[i], &r, err, sizeof(err)), -1, "%s",
		    bad[i]);
		cr_assert(err[0] != '\0');
		pgsrc_reads_free(&r);
	}
	/* PGSRC_PLAN_DEPTH + 2 nested plans. */
	n = PGSRC_PLAN_DEPTH + 2;
	deep = malloc(n * 64 + 64);
	cr_assert_not_null(deep);
	len += (size_t)snprintf(deep + len, 64, "[{\"Plan\": ");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(deep + len, 64,
		    "{\"Node Type\": \"Result\", \"Plans\": [");
	len += (size_t)snprintf(deep + len, 64, "{\"Node Type\": \"Result\"}");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(deep + len, 64, "]}");
	len += (size_t)snprintf(deep + len, 64, "}]");
	cr_assert_eq(walk(deep, &r, err, sizeof(err)), -1);
	cr_assert(strstr(err, "levels") != NULL, "%s", err);
	pgsrc_reads_free(&r);
	free(deep);
	memset(&r, 0, sizeof(r));
	cr_assert_eq(pgsrc_plan_walk("[]", PGSRC_PLAN_MAX + 1, &r, err,
	    sizeof(err)), -1);
	cr_assert(strstr(err, "bytes") != NULL, "%s", err);
}

/* The names of SQL text, as the server's lexer reads them. */
Test(pgsrc_plan, sql_names_skip_constants_and_comments)
{
	struct pgsrc_reads r;
	char err[256];

	memset(&r, 0, sizeof(r));
	cr_assert_eq(pgsrc_sql_names("SELECT App.F1 (x), \"Mixed\"(y), "
	    "'a(' || s1(z), E'\\'' || s2(z), $$ d1(z) $q$ $$, $t$ d2() $t$, "
	    "-- c1(z)\n /* c2( /* nested */ c3() */ s3 /* x */ (1) "
	    "FROM v1 WHERE a #> b AND $1 = 0", &r, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert(has(&r.calls, "f1"), "folded to lower case");
	cr_assert(has(&r.calls, "Mixed"), "quoted: case kept");
	cr_assert(has(&r.calls, "s1") && has(&r.calls, "s2"),
	    "after constants");
	cr_assert(has(&r.calls, "s3"), "a comment before the '('");
	cr_assert(!has(&r.calls, "d1") && !has(&r.calls, "d2") &&
	    !has(&r.calls, "c1") && !has(&r.calls, "c2") &&
	    !has(&r.calls, "c3") && !has(&r.idents, "a("),
	    "nothing inside constants or comments");
	cr_assert(has(&r.idents, "app") && has(&r.idents, "v1"));
	cr_assert(!has(&r.calls, "v1"));
	cr_assert(has(&r.ops, "#>") && has(&r.ops, "||") && has(&r.ops, "="));
	pgsrc_reads_free(&r);
}

/* ---- what changes with time alone: clock values, calls, casts --------- */

/*
 * EXPLAIN (VERBOSE, FORMAT JSON) of a query whose WHERE reads the clock
 * (PostgreSQL 15's own output): the calls, the SQL value keywords, the
 * 'now' read at run time and the casts of values are seen; constants
 * cast are not; names (a table called "user") are not expressions.
 */
Test(pgsrc_plan, clock_calls_keywords_and_casts_are_seen)
{
	static const char j[] = "[{\"Plan\": {\"Node Type\": \"Result\","
	    "\"Output\": [\"scope\", \"id\", \"revoked_at\"],"
	    "\"One-Time Filter\": \"((USER = 'x'::name) AND (CURRENT_USER = "
	    "'x'::name))\", \"Plans\": [{\"Node Type\": \"Seq Scan\","
	    "\"Parent Relationship\": \"Outer\", \"Relation Name\": \"user\","
	    "\"Schema\": \"public\", \"Alias\": \"localtime\","
	    "\"Output\": [\"scope\", \"id\", \"revoked_at\"],"
	    "\"Filter\": \"((r.revoked_at < '2026-12-02 06:39:04+00'::"
	    "timestamp with time zone) AND (r.revoked_at <= now()) AND "
	    "(r.revoked_at < CURRENT_TIMESTAMP) AND (CURRENT_TIMESTAMP(0) > "
	    "r.revoked_at) AND ((r.revoked_at)::date <= CURRENT_DATE) AND "
	    "((r.revoked_at)::text < 'x'::text) AND (r.revoked_at < (now() - "
	    "'1 day'::interval)) AND (r.revoked_at > ('now'::cstring)::"
	    "timestamp with time zone) AND ((r.reason)::timestamp with time "
	    "zone < LOCALTIMESTAMP) AND (age((CURRENT_DATE)::timestamp with "
	    "time zone, r.revoked_at) > '1 day'::interval) AND "
	    "(r.id = ANY ('{a,b}'::text[])) AND (statement_timestamp() > "
	    "(r.expires_at)::timestamp(0) without time zone))\"}]}}]";
	struct pgsrc_reads r;
	char err[1024];

	cr_assert_eq(walk(j, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert(has(&r.calls, "now") && has(&r.calls, "age") &&
	    has(&r.calls, "statement_timestamp"));
	cr_assert(has(&r.clock, "CURRENT_TIMESTAMP"));
	cr_assert(has(&r.clock, "CURRENT_DATE"));
	cr_assert(has(&r.clock, "LOCALTIMESTAMP"));
	cr_assert(has(&r.clock, "USER") && has(&r.clock, "CURRENT_USER"));
	cr_assert(!has(&r.clock, "LOCALTIME"), "an alias is a name");
	cr_assert(has(&r.clock, "'now'"), "read at run time");
	cr_assert(has(&r.casts, "date"));
	cr_assert(has(&r.casts, "text"));
	cr_assert(has(&r.casts, "timestamp with time zone"));
	cr_assert(has(&r.casts, "timestamp(0) without time zone"));
	cr_assert(!has(&r.casts, "interval") && !has(&r.casts, "text[]") &&
	    !has(&r.casts, "name") && !has(&r.casts, "cstring"),
	    "constants cast are not casts of a value");
	cr_assert_eq(pgsrc_reads_clock(&r, err, sizeof(err)), -1);
	cr_assert(strstr(err, "not_revoked") != NULL, "%s", err);
	cr_assert(strstr(err, "expires_at") != NULL, "says what to do: %s",
	    err);
	pgsrc_reads_free(&r);
}

/* The query's text: literals the date and time types read as the clock. */
Test(pgsrc_plan, clock_literals_are_seen_however_spelled)
{
	static const struct {
		const char *sql, *want;
	} c[] = {
		{ "WHERE revoked_at <= 'now'", "'now'" },
		{ "WHERE revoked_at <= timestamptz 'Tomorrow'", "'tomorrow'" },
		{ "WHERE d <= date ' today '", "'today'" },
		{ "WHERE d <= 'yesterday 10:00'::timestamp", "'yesterday'" },
		{ "WHERE d <= E'\\x6eow'", "'now'" },
		{ "WHERE d <= E'\\156\\157\\167'", "'now'" },
		{ "WHERE d <= e'to\\u0064ay'", "'today'" },
		{ "WHERE d <= U&'\\006Eow'", "'now'" },
		{ "WHERE d <= u&'!006e!+00006Fw' UESCAPE '!'", "'now'" },
		{ "WHERE d <= $$now$$", "'now'" },
		{ "WHERE d <= $t$ NOW $t$::timestamptz", "'now'" },
		{ "WHERE reason = 'not now'", "'now'" },
		{ "WHERE d <= current_timestamp(0)", "CURRENT_TIMESTAMP" },
		{ "WHERE d::date <= Current_Date", "CURRENT_DATE" },
		{ "WHERE d <= LOCALTIME", "LOCALTIME" },
		{ "WHERE s = session_user", "SESSION_USER" },
	};
	static const char *const fine[] = {
		"SELECT scope, id, revoked_at FROM t WHERE reason = 'nowhere'",
		"SELECT scope, id, revoked_at FROM t WHERE reason = 'snow'",
		"SELECT \"user\", \"current_date\" FROM t -- now\n",
		"SELECT id FROM t WHERE d < '2030-01-01' /* 'today' */",
		"SELECT id FROM t WHERE reason = E'\\now'",	/* newline, "ow" */
		"SELECT id FROM t WHERE d < 'epoch' AND e < 'infinity'",
	};
	struct pgsrc_reads r;
	char err[1024];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memset(&r, 0, sizeof(r));
		cr_assert_eq(pgsrc_sql_names(c[i].sql, &r, err, sizeof(err)),
		    0, "%s", err);
		cr_assert(has(&r.clock, c[i].want), "%s: want %s", c[i].sql,
		    c[i].want);
		cr_assert_eq(pgsrc_reads_clock(&r, err, sizeof(err)), -1);
		cr_assert(strstr(err, c[i].want) != NULL, "%s", err);
		pgsrc_reads_free(&r);
	}
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		memset(&r, 0, sizeof(r));
		cr_assert_eq(pgsrc_sql_names(fine[i], &r, err, sizeof(err)),
		    0, "%s", err);
		cr_assert_eq(r.clock.n, 0, "%s: %s", fine[i], r.clock.n > 0 ?
		    r.clock.v[0] : "");
		cr_assert_eq(pgsrc_reads_clock(&r, err, sizeof(err)), 0);
		pgsrc_reads_free(&r);
	}
}

/* Casts of a value, not of a constant, with the type as written. */
Test(pgsrc_plan, casts_of_values_are_seen)
{
	struct pgsrc_reads r;
	char err[256];

	memset(&r, 0, sizeof(r));
	cr_assert_eq(pgsrc_sql_names("SELECT id FROM t WHERE reason::TimestampTZ "
	    "< '2030-01-01'::timestamptz AND 'x'::text::date < d AND "
	    "x[1]::pg_catalog.\"interval\" > '1 day' AND $1::varchar(10) = id "
	    "AND (a)::character varying(5)[] IS NULL AND 1::money > 0 AND "
	    "b::double precision > 0 AND c::time with time zone > '10:00' "
	    "AND e::int similar to 'x'", &r, err, sizeof(err)), 0, "%s", err);
	cr_assert(has(&r.casts, "timestamptz"), "folded to lower case");
	cr_assert(has(&r.casts, "date"), "a cast of a cast");
	cr_assert(has(&r.casts, "pg_catalog.\"interval\""));
	cr_assert(has(&r.casts, "varchar(10)"), "a parameter");
	cr_assert(has(&r.casts, "character varying(5)[]"));
	cr_assert(has(&r.casts, "double precision"));
	cr_assert(has(&r.casts, "time with time zone"));
	cr_assert(has(&r.casts, "int"), "no more words than a type has");
	cr_assert(!has(&r.casts, "money"), "a constant");
	cr_assert_eq(r.casts.n, 8, "%zu casts", r.casts.n);
	pgsrc_reads_free(&r);
}

/* ---- pgsrc_plan_keys: the key columns a delta takes from the log ------ */

/* A scan node (JSON) of rel with alias and Output out (a JSON list body). */
#define SCAN(type, rel, alias, out) "{\"Node Type\": \"" type "\", " \
	"\"Parent Relationship\": \"Member\", \"Relation Name\": \"" rel \
	"\", \"Schema\": \"public\", \"Alias\": \"" alias "\", " \
	"\"Output\": [" out "]}"
#define PLAN(node)	"[{\"Plan\": " node "}]"
#define R3		"\"scope\", \"id\", \"revoked_at\""

static int
keys(const char *json, int id, int scope, int at, const char *aliased,
    char *err, size_t errlen)
{
	char *v[1] = { (char *)aliased };
	struct pgsrc_names a = { v, aliased != NULL ? 1 : 0 };
	int pos[PGSRC_KEY_N];

	pos[PGSRC_KEY_ID] = id;
	pos[PGSRC_KEY_SCOPE] = scope;
	pos[PGSRC_KEY_AT] = at;
	err[0] = '\0';
	return pgsrc_plan_keys(json, strlen(json), pos, &a, err, errlen);
}

/* The default query, a view with a WHERE, UNION ALL, UNION, DISTINCT. */
Test(pgsrc_plan, plain_key_columns_follow)
{
	static const char *const ok[] = {
		PLAN(SCAN("Seq Scan", "revcheck_revocations",
		    "revcheck_revocations", R3)),
		PLAN(SCAN("Index Scan", "revcheck_revocations", "R",
		    "\"\\\"R\\\".scope\", \"\\\"R\\\".id\", "
		    "\"\\\"R\\\".revoked_at\"")),
		PLAN("{\"Node Type\": \"Append\", \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", "\"r.scope\", "
		    "\"r.id\", \"r.revoked_at\"") ", "
		    SCAN("Seq Scan", "other", "other", "\"other.scope\", "
		    "\"other.id\", \"other.revoked_at\"") "]}"),
		/* UNION: an Aggregate names the Append's columns after its first member. */
		PLAN("{\"Node Type\": \"Aggregate\", \"Output\": [\"r.scope\", "
		    "\"r.id\", \"r.revoked_at\"], \"Plans\": [{\"Node Type\": "
		    "\"Append\", \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", "\"r.scope\", "
		    "\"r.id\", \"r.revoked_at\"") ", "
		    SCAN("Bitmap Heap Scan", "other", "o", "\"o.scope\", "
		    "\"o.id\", \"o.revoked_at\"") "]}]}"),
		/* DISTINCT ... ORDER BY: a Sort over an Aggregate, columns reordered. */
		PLAN("{\"Node Type\": \"Sort\", \"Output\": [\"id\", \"scope\", "
		    "\"revoked_at\"], \"Plans\": [{\"Node Type\": \"Aggregate\", "
		    "\"Output\": [\"id\", \"scope\", \"revoked_at\"], \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "revcheck_revocations",
		    R3 ", \"reason\"") "]}]}"),
	};
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_eq(keys(ok[i], i == 4 ? 0 : 1, i == 4 ? 1 : 0, 2,
		    NULL, err, sizeof(err)), 0, "plan %zu: %s", i, err);
	/* No scope column: the base's one scope; a change elsewhere re-bases. */
	cr_assert_eq(keys(ok[0], 1, -1, 2, NULL, err, sizeof(err)), 0, "%s", err);
}

/* What the log holds is not what the query returns: refused, named. */
Test(pgsrc_plan, transformed_key_columns_are_refused)
{
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ PLAN(SCAN("Seq Scan", "revcheck_revocations", "r",
		    "\"scope\", \"lower(id)\", \"revoked_at\"")),
		  "column id is lower(id), not the column id of a table "
		  "(public.revcheck_revocations)" },
		{ PLAN(SCAN("Seq Scan", "revcheck_revocations", "r",
		    "\"'api'::text\", \"id\", \"revoked_at\"")),
		  "column scope is 'api'::text" },
		{ PLAN(SCAN("Seq Scan", "revcheck_revocations", "r",
		    "\"scope\", \"id\", \"(revoked_at + '1 day'::interval)\"")),
		  "column revoked_at is (revoked_at" },
		/* The second UNION ALL branch renames another column. */
		{ PLAN("{\"Node Type\": \"Append\", \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", "\"r.scope\", "
		    "\"r.id\", \"r.revoked_at\"") ", "
		    SCAN("Seq Scan", "other", "other", "\"other.scope\", "
		    "\"other.token\", \"other.revoked_at\"") "]}"),
		  "column id is other.token, not the column id of a table "
		  "(public.other)" },
		/* The right name from another table's alias. */
		{ PLAN(SCAN("Seq Scan", "revcheck_revocations", "r",
		    "\"r.scope\", \"x.id\", \"r.revoked_at\"")),
		  "the column id of a Seq Scan of public.revcheck_revocations "
		  "is x.id" },
		/* A Result projecting over a scan. */
		{ PLAN("{\"Node Type\": \"Result\", \"Output\": [\"r.scope\", "
		    "\"upper(r.id)\", \"r.revoked_at\"], \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", R3) "]}"),
		  "column id is upper(r.id)" },
		/* A constant row. */
		{ PLAN("{\"Node Type\": \"Result\", \"Output\": [\"x.scope\", "
		    "\"x.id\", \"x.revoked_at\"]}"), "without a table" },
		{ PLAN("{\"Node Type\": \"Hash Join\", \"Output\": [\"r.scope\", "
		    "\"r.id\", \"r.revoked_at\"], \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", R3) "]}"),
		  "Hash Join above the column id: a join" },
		{ PLAN("{\"Node Type\": \"Limit\", \"Output\": [\"scope\", "
		    "\"id\", \"revoked_at\"], \"Plans\": ["
		    SCAN("Seq Scan", "revcheck_revocations", "r", R3) "]}"),
		  "Limit above the column id" },
		{ PLAN("{\"Node Type\": \"Values Scan\", \"Output\": "
		    "[\"\\\"*VALUES*\\\".column1\"]}"), "Values Scan" },
		{ PLAN("{\"Node Type\": \"Seq Scan\", \"Relation Name\": \"t\", "
		    "\"Schema\": \"public\", \"Alias\": \"t\", \"Output\": ["
		    R3 "], \"Plans\": [{\"Node Type\": \"Seq Scan\", "
		    "\"Parent Relationship\": \"SubPlan\", \"Relation Name\": "
		    "\"u\", \"Schema\": \"public\", \"Alias\": \"u\"}]}"),
		  "subquery (SubPlan in its plan)" },
		/* The Output ends before the column. */
		{ PLAN(SCAN("Seq Scan", "t", "t", "\"scope\"")),
		  "without its Output column 2" },
		{ "[{\"Plan\": 1}]", "without a \"Node Type\"" },
		{ "{}", "not one EXPLAIN" },
	};
	char err[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(keys(bad[i].json, 1, 0, 2, NULL, err, sizeof(err)),
		    -1, "plan %zu accepted", i);
		cr_assert(strstr(err, bad[i].want) != NULL, "plan %zu: %s", i,
		    err);
	}
}

/* A column alias list renames columns; no id or revoked_at column. */
Test(pgsrc_plan, alias_lists_and_missing_columns_are_refused)
{
	static const char j[] = PLAN(SCAN("Seq Scan", "revcheck_revocations",
	    "r", "\"scope\", \"id\", \"revoked_at\""));
	char err[512];

	cr_assert_eq(keys(j, 1, 0, 2, "r", err, sizeof(err)), -1);
	cr_assert(strstr(err, "column alias list (r(...))") != NULL, "%s", err);
	cr_assert_eq(keys(j, 1, 0, 2, "lower", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(keys(j, 1, 0, -1, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no column named \"revoked_at\"") != NULL);
	cr_assert_eq(keys(j, -1, 0, 2, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no column named \"id\"") != NULL);
	/* Positions swapped: scope's place holds id. */
	cr_assert_eq(keys(j, 0, 1, 2, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "column id is scope") != NULL, "%s", err);
}
