/* pgplan.c - follow's rules on a --query's plan and text, and on a standby's evidence: no server needed */
/*
 * What the server answered is hostile input, judged here without libpq:
 * the SQL lexer (pgsrc_sql_names()), the plan walker (pgsrc_plan_walk()),
 * the key columns' rule (pgsrc_plan_keys()), what changes with time alone
 * (pgsrc_reads_clock()) and whether a standby may be read
 * (pgsrc_standby_judge()). lib/pgsrc.c asks the server and calls them.
 */
#include "pgplan.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "util.h"

/* ---- what a --query reads: names, scans ------------------------------- */

/* Scan nodes whose reads the plan shows: a relation, or its own children. */
static const char *const pg_scans_seen[] = {
	"Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Index Scan",
	"Bitmap Heap Scan", "Tid Scan", "Tid Range Scan", "Sample Scan",
	"Subquery Scan", "CTE Scan", "WorkTable Scan", "Values Scan", NULL
};

/* Scans that read what the plan does not show, even with a relation. */
static const char *const pg_scans_unseen[] = {
	"Foreign Scan", "Custom Scan", "Function Scan", "Table Function Scan",
	"Named Tuplestore Scan", NULL
};

static bool
pg_in(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/* Adds a copy of s (len bytes) to the sorted names n, once. 0 or -1. */
static int
names_add(struct pgsrc_names *n, const char *s, size_t len, char *err,
    size_t errlen)
{
	size_t lo = 0, hi = n->n, mid;
	char **v, *c;
	int cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		cmp = strncmp(n->v[mid], s, len);
		if (cmp == 0 && n->v[mid][len] != '\0')
			cmp = 1;
		if (cmp == 0)
			return 0;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (n->n >= PGSRC_NAMES_MAX) {
		snprintf(err, errlen, "postgresql: the query uses more than %d "
		    "names of one kind", PGSRC_NAMES_MAX);
		return -1;
	}
	if ((v = reallocarray(n->v, n->n + 1, sizeof(*v))) == NULL ||
	    (n->v = v, (c = strndup(s, len)) == NULL)) {
		snprintf(err, errlen, "postgresql: out of memory");
		return -1;
	}
	memmove(v + lo + 1, v + lo, (n->n - lo) * sizeof(*v));
	v[lo] = c;
	n->n++;
	return 0;
}

static void
names_free(struct pgsrc_names *n)
{
	size_t i;

	for (i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
	n->v = NULL;
	n->n = 0;
}

int
pgsrc_names_merge(struct pgsrc_names *n, const struct pgsrc_names *from,
    char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < from->n; i++)
		if (names_add(n, from->v[i], strlen(from->v[i]), err,
		    errlen) != 0)
			return -1;
	return 0;
}

void
pgsrc_reads_free(struct pgsrc_reads *r)
{
	if (r == NULL)
		return;
	names_free(&r->nsp);
	names_free(&r->rel);
	names_free(&r->calls);
	names_free(&r->idents);
	names_free(&r->ops);
	names_free(&r->clock);
	names_free(&r->casts);
}

#define SQL_IDSTART(c)	(((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && \
			    (c) <= 'Z') || (c) == '_' || (c) >= 0x80)
#define SQL_IDCHAR(c)	(SQL_IDSTART(c) || ((c) >= '0' && (c) <= '9') || \
			    (c) == '$')
#define SQL_OPCHAR(c)	((c) != '\0' && strchr("+-*/<>=~!@#%^&|`?", (c)) != NULL)
/* The server keeps the first NAMEDATALEN - 1 bytes of a name. */
#define SQL_NAME_MAX	63

/* Past a comment at s + i (none: i). Unterminated: the end. */
static size_t
sql_comment(const unsigned char *s, size_t i)
{
	int depth = 0;

	if (s[i] == '-' && s[i + 1] == '-') {
		while (s[i] != '\0' && s[i] != '\n')
			i++;
		return i;
	}
	if (s[i] != '/' || s[i + 1] != '*')
		return i;
	do {
		if (s[i] == '/' && s[i + 1] == '*') {
			depth++;
			i += 2;
		} else if (s[i] == '*' && s[i + 1] == '/') {
			depth--;
			i += 2;
		} else
			i++;
	} while (depth > 0 && s[i] != '\0');
	return i;
}

/* Past blanks and comments from s + i. */
static size_t
sql_blank(const unsigned char *s, size_t i)
{
	size_t j;

	for (;;) {
		while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
		    s[i] == '\r' || s[i] == '\f' || s[i] == '\v')
			i++;
		if ((j = sql_comment(s, i)) == i)
			return i;
		i = j;
	}
}

/*
 * Words of a string constant that the date and time types read as the
 * current time ('now', 'today', ...); "epoch", "infinity" and "allballs"
 * are constants.
 */
static const char *const sql_clock_words[] = {
	"now", "today", "tomorrow", "yesterday", NULL
};

/*
 * SQL value keywords: values of the clock or the session that take no
 * parentheses (CURRENT_TIMESTAMP(0) takes some), as the server prints them.
 */
static const char *const sql_value_keywords[] = {
	"current_catalog", "current_date", "current_role", "current_schema",
	"current_time", "current_timestamp", "current_user", "localtime",
	"localtimestamp", "session_user", "system_user", "user", NULL
};

/* The words of a string constant's value, read one character at a time. */
struct sql_word {
	char		 w[12];
	size_t		 n;		/* letters of the current word */
	const char	*found;		/* the first clock word, or NULL */
};

/* Feeds the code point c of a string constant's value to w. */
static void
sql_word_feed(struct sql_word *w, unsigned long c)
{
	size_t k;

	if (c >= 'A' && c <= 'Z')
		c += 'a' - 'A';
	if (c >= 'a' && c <= 'z') {
		if (w->n < sizeof(w->w) - 1)
			w->w[w->n] = (char)c;
		w->n++;
		return;
	}
	if (w->found == NULL && w->n > 0 && w->n < sizeof(w->w)) {
		w->w[w->n] = '\0';
		for (k = 0; sql_clock_words[k] != NULL; k++)
			if (strcmp(w->w, sql_clock_words[k]) == 0)
				w->found = sql_clock_words[k];
	}
	w->n = 0;
}

/* The value of up to nd hex digits at s + *i, *i moved past them. */
static unsigned long
sql_hex(const unsigned char *s, size_t *i, int nd)
{
	unsigned long v = 0;
	int d;

	for (; nd > 0 && (d = util_hexval(s[*i])) >= 0; nd--, (*i)++)
		v = v * 16 + (unsigned long)d;
	return v;
}

/*
 * Past a string constant whose opening quote is at s + i, feeding its
 * value to w (NULL: none): kind 'E' decodes backslash escapes (E''), 'U'
 * the escapes of U&'' with the escape character esc, anything else none.
 */
static size_t
sql_string(const unsigned char *s, size_t i, int kind, unsigned char esc,
    struct sql_word *w)
{
	struct sql_word none;
	unsigned long v;
	size_t j;

	if (w == NULL) {
		memset(&none, 0, sizeof(none));
		w = &none;
	}
	for (i++; s[i] != '\0'; i++) {
		if (s[i] == '\'' && s[i + 1] == '\'') {
			i++;
			sql_word_feed(w, '\'');
		} else if (s[i] == '\'') {
			sql_word_feed(w, ' ');
			return i + 1;
		} else if (kind == 'E' && s[i] == '\\' && s[i + 1] != '\0') {
			j = ++i + 1;
			if (s[i] == 'x' && util_hexval(s[j]) >= 0)
				v = sql_hex(s, &j, 2);
			else if (s[i] == 'u' || s[i] == 'U')
				v = sql_hex(s, &j, s[i] == 'u' ? 4 : 8);
			else if (s[i] >= '0' && s[i] <= '7') {
				for (v = 0, j = i; j < i + 3 && s[j] >= '0' &&
				    s[j] <= '7'; j++)
					v = v * 8 + (unsigned long)(s[j] - '0');
			} else
				v = strchr("bfnrt", s[i]) != NULL ? ' ' : s[i];
			i = j - 1;
			sql_word_feed(w, v);
		} else if (kind == 'U' && s[i] == esc && s[i + 1] != '\0') {
			if (s[i + 1] == esc) {
				i++;
				sql_word_feed(w, esc);
				continue;
			}
			j = i + 1;
			if (s[j] == '+')
				j++;
			v = sql_hex(s, &j, s[i + 1] == '+' ? 6 : 4);
			i = j - 1;
			sql_word_feed(w, v);
		} else
			sql_word_feed(w, s[i]);
	}
	sql_word_feed(w, ' ');
	return i;
}

/*
 * Past a U&'' constant whose quote is at s + i, feeding its value to w:
 * the escape character is '\' or the one of a UESCAPE 'c' after it.
 */
static size_t
sql_ustring(const unsigned char *s, size_t i, struct sql_word *w)
{
	size_t e = sql_string(s, i, 0, 0, NULL), j = sql_blank(s, e);
	unsigned char esc = '\\';

	if (strncasecmp((const char *)s + j, "uescape", 7) == 0 &&
	    !SQL_IDCHAR(s[j + 7])) {
		j = sql_blank(s, j + 7);
		if (s[j] == '\'' && s[j + 1] != '\0' && s[j + 2] == '\'') {
			esc = s[j + 1];
			e = j + 3;
		}
	}
	sql_string(s, i, 'U', esc, w);
	return e;
}

/*
 * Past a dollar-quoted constant ($$...$$, $tag$...$tag$) at s + i, its
 * value fed to w, or i when there is none there.
 */
static size_t
sql_dollar(const unsigned char *s, size_t i, struct sql_word *w)
{
	size_t j = i + 1, tl, k;
	const char *end;

	if (s[j] != '$' && !(SQL_IDSTART(s[j])))
		return i;
	while (s[j] != '$' && SQL_IDCHAR(s[j]) && s[j] != '$')
		j++;
	if (s[j] != '$')
		return i;
	tl = j + 1 - i;		/* "$tag$" */
	for (end = (const char *)s + j + 1; (end = strchr(end, '$')) != NULL;
	    end++)
		if (strncmp(end, (const char *)s + i, tl) == 0)
			break;
	if (end == NULL)
		end = (const char *)s + strlen((const char *)s);
	for (k = j + 1; s + k < (const unsigned char *)end; k++)
		sql_word_feed(w, s[k]);
	sql_word_feed(w, ' ');
	return end[0] == '\0' ? (size_t)((const unsigned char *)end - s) :
	    (size_t)((const unsigned char *)end - s) + tl;
}

/* Words that continue a type name after its first ("timestamp with time zone"). */
static const char *const sql_type_words[] = {
	"with", "without", "time", "zone", "varying", "precision", "year",
	"month", "day", "hour", "minute", "second", "to", NULL
};

/*
 * The type name at s + i (after "::"), as written with single blanks, into
 * out (cap bytes; "?" when it does not fit). Returns its length, 0 for
 * none.
 */
static size_t
sql_type_name(const unsigned char *s, size_t i, char *out, size_t cap)
{
	char word[SQL_NAME_MAX + 1];
	size_t n = 0, j, wl, first = 1;
	int dots = 0;

#define TN_ADD(p, l) do {						\
	if (n + (l) + 1 > cap) {					\
		snprintf(out, cap, "?");				\
		return 1;						\
	}								\
	memcpy(out + n, (p), (l));					\
	n += (l);							\
	out[n] = '\0';							\
} while (0)
	out[0] = '\0';
	for (;;) {
		i = sql_blank(s, i);
		if (s[i] == '"') {
			for (j = i + 1; s[j] != '\0'; j++) {
				if (s[j] == '"' && s[j + 1] != '"')
					break;
				if (s[j] == '"')
					j++;
			}
			if (s[j] == '"')
				j++;
			if (!first && dots == 0)
				break;
			TN_ADD(s + i, j - i);
		} else if (SQL_IDSTART(s[i])) {
			for (j = i, wl = 0; SQL_IDCHAR(s[j]); j++)
				if (wl < SQL_NAME_MAX)
					word[wl++] = (char)(s[j] >= 'A' &&
					    s[j] <= 'Z' ? s[j] - 'A' + 'a' : s[j]);
			word[wl] = '\0';
			if (!first && dots == 0 && !pg_in(word, sql_type_words))
				break;
			if (!first && dots == 0 && strcmp(word, "to") == 0 &&
			    strncmp(out, "interval", 8) != 0)
				break;
			if (!first && dots == 0)
				TN_ADD(" ", 1);
			TN_ADD(word, wl);
		} else
			break;
		i = j;
		first = 0;
		dots = 0;
		if (s[sql_blank(s, i)] == '.') {
			i = sql_blank(s, i) + 1;
			TN_ADD(".", 1);
			dots = 1;
			continue;
		}
		/* A type modifier: "timestamp(0) without time zone". */
		j = sql_blank(s, i);
		if (s[j] == '(') {
			for (i = j++; (s[j] >= '0' && s[j] <= '9') ||
			    s[j] == ',' || s[j] == ' '; j++)
				;
			if (s[j] != ')')
				break;
			TN_ADD(s + i, j + 1 - i);
			i = j + 1;
		}
	}
	if (n == 0)
		return 0;
	/* Array brackets. */
	i = sql_blank(s, i);
	while (s[i] == '[') {
		for (j = i + 1; s[j] >= '0' && s[j] <= '9'; j++)
			;
		if (s[j] != ']')
			break;
		TN_ADD(s + i, j + 1 - i);
		i = sql_blank(s, j + 1);
	}
#undef TN_ADD
	return n;
}

/* What the token before a "::" was: a constant is cast as it is parsed. */
enum { SQL_PREV_NONE, SQL_PREV_CONST, SQL_PREV_VALUE };

/* Adds "'word'" to r->clock when w found a clock word. 0 or -1. */
static int
sql_clock_add(struct pgsrc_reads *r, const struct sql_word *w, char *err,
    size_t errlen)
{
	char q[16];

	if (w->found == NULL)
		return 0;
	snprintf(q, sizeof(q), "'%s'", w->found);
	return names_add(&r->clock, q, strlen(q), err, errlen);
}

/* pgsrc_sql_names(); expr false: sql is a name, not an expression. */
static int
sql_names(const char *sql, bool expr, struct pgsrc_reads *r, char *err,
    size_t errlen)
{
	const unsigned char *s = (const unsigned char *)sql;
	char name[SQL_NAME_MAX + 1], type[160];
	struct sql_word w;
	size_t i = 0, j, n, k;
	int prev = SQL_PREV_NONE;
	bool quoted;

	while (s[i] != '\0') {
		if ((j = sql_blank(s, i)) != i) {
			i = j;
			continue;
		}
		memset(&w, 0, sizeof(w));
		if (s[i] == '\'' || ((s[i] == 'u' || s[i] == 'U') &&
		    s[i + 1] == '&' && s[i + 2] == '\'')) {
			i = s[i] == '\'' ? sql_string(s, i, 0, 0, &w) :
			    sql_ustring(s, i + 2, &w);
			if (expr && sql_clock_add(r, &w, err, errlen) != 0)
				return -1;
			prev = SQL_PREV_CONST;
			continue;
		}
		if (s[i] == '$') {
			if ((j = sql_dollar(s, i, &w)) == i) {
				for (j = i + 1; s[j] >= '0' && s[j] <= '9'; j++)
					;
				prev = SQL_PREV_VALUE;	/* a parameter */
			} else {
				if (expr && sql_clock_add(r, &w, err,
				    errlen) != 0)
					return -1;
				prev = SQL_PREV_CONST;
			}
			i = j;
			continue;
		}
		if (s[i] >= '0' && s[i] <= '9') {
			while (SQL_IDCHAR(s[i]) || s[i] == '.')
				i++;
			prev = SQL_PREV_CONST;
			continue;
		}
		if (s[i] == ':' && s[i + 1] == ':') {
			if (expr && prev == SQL_PREV_VALUE && (n =
			    sql_type_name(s, i + 2, type, sizeof(type))) > 0 &&
			    names_add(&r->casts, type, n, err, errlen) != 0)
				return -1;
			i += 2;
			prev = SQL_PREV_NONE;
			continue;
		}
		if (SQL_OPCHAR(s[i])) {
			for (j = i; SQL_OPCHAR(s[j]) && sql_comment(s, j) == j;
			    j++)
				;
			if (names_add(&r->ops, (const char *)s + i, j - i, err,
			    errlen) != 0)
				return -1;
			i = j;
			prev = SQL_PREV_NONE;
			continue;
		}
		if (s[i] != '"' && !SQL_IDSTART(s[i])) {
			prev = s[i] == ')' || s[i] == ']' ? SQL_PREV_VALUE :
			    SQL_PREV_NONE;
			i++;
			continue;
		}
		n = 0;
		quoted = s[i] == '"';
		if (quoted) {
			for (j = i + 1; s[j] != '\0'; j++) {
				if (s[j] == '"' && s[j + 1] != '"')
					break;
				if (s[j] == '"')
					j++;
				if (n < SQL_NAME_MAX)
					name[n++] = (char)s[j];
			}
			if (s[j] == '"')
				j++;
		} else {
			for (j = i; SQL_IDCHAR(s[j]); j++)
				if (n < SQL_NAME_MAX)
					name[n++] = (char)(s[j] >= 'A' &&
					    s[j] <= 'Z' ? s[j] - 'A' + 'a' : s[j]);
			/* E'...': backslash escapes. */
			if (j == i + 1 && name[0] == 'e' && s[j] == '\'') {
				i = sql_string(s, j, 'E', '\\', &w);
				if (expr && sql_clock_add(r, &w, err,
				    errlen) != 0)
					return -1;
				prev = SQL_PREV_CONST;
				continue;
			}
		}
		i = j;
		prev = SQL_PREV_VALUE;
		if (n == 0)
			continue;
		name[n] = '\0';
		if (names_add(&r->idents, name, n, err, errlen) != 0)
			return -1;
		if (s[sql_blank(s, i)] == '(' && names_add(&r->calls, name, n,
		    err, errlen) != 0)
			return -1;
		if (!expr || quoted || !pg_in(name, sql_value_keywords))
			continue;
		for (k = 0; k < n; k++)
			if (name[k] >= 'a' && name[k] <= 'z')
				name[k] -= 'a' - 'A';
		if (names_add(&r->clock, name, n, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int
pgsrc_sql_names(const char *sql, struct pgsrc_reads *r, char *err,
    size_t errlen)
{
	return sql_names(sql, true, r, err, errlen);
}

int
pgsrc_reads_clock(const struct pgsrc_reads *r, char *err, size_t errlen)
{
	const char *c;

	if (r->clock.n == 0)
		return 0;
	c = r->clock.v[0];
	if (c[0] == '\'')
		snprintf(err, errlen, "postgresql: the query has the string "
		    "constant %.20s, which a date or time type reads as the "
		    "current time: a row would enter or leave the result with "
		    "time alone, with no change logged, and answer "
		    "not_revoked under fresh heads until the next re-base "
		    "(compare with a fixed time; to retire rows with time, "
		    "give them an expires_at: follow's expiry sweep publishes "
		    "their removal)", c);
	else
		snprintf(err, errlen, "postgresql: the query uses %.40s, whose "
		    "value changes with time (or the session) alone: a row "
		    "would enter or leave the result with no change logged, "
		    "and answer not_revoked under fresh heads until the next "
		    "re-base (compare with a fixed value; to retire rows with "
		    "time, give them an expires_at: follow's expiry sweep "
		    "publishes their removal)", c);
	return -1;
}

/*
 * Plan fields that hold a name or a word, not an expression: a table
 * named "user" is no CURRENT_USER, an alias no cast.
 */
static const char *const plan_name_fields[] = {
	"Node Type", "Relation Name", "Schema", "Alias", "Index Name",
	"CTE Name", "Function Name", "Subplan Name", "Parent Relationship",
	"Strategy", "Partial Mode", "Join Type", "Scan Direction", "Operation",
	"Command", "Tuplestore Name", "Sort Method", "Sort Space Type", NULL
};

/* The names of every string in a plan node but its children. 0 or -1. */
static int
plan_strings(const cJSON *n, struct pgsrc_reads *r, char *err,
    size_t errlen)
{
	const cJSON *k, *e;
	bool expr;

	cJSON_ArrayForEach(k, n) {
		if (k->string != NULL && strcmp(k->string, "Plans") == 0)
			continue;
		expr = k->string == NULL || !pg_in(k->string, plan_name_fields);
		if (cJSON_IsString(k) && sql_names(k->valuestring, expr, r,
		    err, errlen) != 0)
			return -1;
		if (!cJSON_IsArray(k))
			continue;
		cJSON_ArrayForEach(e, k)
			if (cJSON_IsString(e) && sql_names(e->valuestring, expr,
			    r, err, errlen) != 0)
				return -1;
	}
	return 0;
}

/*
 * The "Node Type" of plan node n, counted against the walk's limits
 * (depth, nodes so far); NULL with err for a node without one or past
 * them.
 */
static const char *
plan_node_type(const cJSON *n, int depth, size_t *nodes, char *err,
    size_t errlen)
{
	const cJSON *t;

	if (!cJSON_IsObject(n) || !cJSON_IsString(t =
	    cJSON_GetObjectItemCaseSensitive(n, "Node Type"))) {
		snprintf(err, errlen, "postgresql: the query's plan: a node "
		    "without a \"Node Type\"");
		return NULL;
	}
	if (depth > PGSRC_PLAN_DEPTH || ++*nodes > PGSRC_PLAN_NODES) {
		snprintf(err, errlen, "postgresql: the query's plan has more "
		    "than %d levels or %d nodes", PGSRC_PLAN_DEPTH,
		    PGSRC_PLAN_NODES);
		return NULL;
	}
	return t->valuestring;
}

/* Adds (nsp, rel) to r once. 0 or -1. */
static int
plan_rel(struct pgsrc_reads *r, const char *nsp, const char *rel, char *err,
    size_t errlen)
{
	size_t i;
	char **a, **b;

	for (i = 0; i < r->rel.n; i++)
		if (strcmp(r->rel.v[i], rel) == 0 &&
		    strcmp(r->nsp.v[i], nsp) == 0)
			return 0;
	if (r->rel.n >= PGSRC_NAMES_MAX) {
		snprintf(err, errlen, "postgresql: the query reads more than "
		    "%d relations", PGSRC_NAMES_MAX);
		return -1;
	}
	a = reallocarray(r->rel.v, r->rel.n + 1, sizeof(*a));
	if (a != NULL)
		r->rel.v = a;
	b = reallocarray(r->nsp.v, r->nsp.n + 1, sizeof(*b));
	if (b != NULL)
		r->nsp.v = b;
	if (a == NULL || b == NULL ||
	    (a[r->rel.n] = strdup(rel)) == NULL) {
		snprintf(err, errlen, "postgresql: out of memory");
		return -1;
	}
	r->rel.n++;
	if ((b[r->nsp.n] = strdup(nsp)) == NULL) {
		free(a[--r->rel.n]);
		snprintf(err, errlen, "postgresql: out of memory");
		return -1;
	}
	r->nsp.n++;
	return 0;
}

static int
plan_node(const cJSON *n, int depth, size_t *nodes, struct pgsrc_reads *r,
    char *err, size_t errlen)
{
	const cJSON *rel, *nsp, *fn, *kids, *k;
	const char *type;
	size_t tl;

	if ((type = plan_node_type(n, depth, nodes, err, errlen)) == NULL)
		return -1;
	tl = strlen(type);
	rel = cJSON_GetObjectItemCaseSensitive(n, "Relation Name");
	nsp = cJSON_GetObjectItemCaseSensitive(n, "Schema");
	fn = cJSON_GetObjectItemCaseSensitive(n, "Function Name");
	if (pg_in(type, pg_scans_unseen) || (rel == NULL && tl >= 4 &&
	    strcmp(type + tl - 4, "Scan") == 0 && !pg_in(type, pg_scans_seen))) {
		snprintf(err, errlen, "postgresql: the query reads through a "
		    "%.40s%s%.64s%s%.64s: follow cannot see which tables that "
		    "reads, so their changes could reach no delta (read the "
		    "tables themselves in --query, each with the trigger "
		    PGSRC_TRIGGER ")", type,
		    cJSON_IsString(rel) || cJSON_IsString(fn) ? " of " : "",
		    cJSON_IsString(nsp) ? nsp->valuestring : "",
		    cJSON_IsString(nsp) ? "." : "",
		    cJSON_IsString(rel) ? rel->valuestring :
		    cJSON_IsString(fn) ? fn->valuestring : "");
		return -1;
	}
	if (rel != NULL) {
		if (!cJSON_IsString(rel) || !cJSON_IsString(nsp)) {
			snprintf(err, errlen, "postgresql: the query's plan: "
			    "a %.40s without a relation and its schema", type);
			return -1;
		}
		if (plan_rel(r, nsp->valuestring, rel->valuestring, err,
		    errlen) != 0)
			return -1;
	}
	if (plan_strings(n, r, err, errlen) != 0)
		return -1;
	if ((kids = cJSON_GetObjectItemCaseSensitive(n, "Plans")) == NULL)
		return 0;
	if (!cJSON_IsArray(kids)) {
		snprintf(err, errlen, "postgresql: the query's plan: \"Plans\" "
		    "is not an array");
		return -1;
	}
	cJSON_ArrayForEach(k, kids)
		if (plan_node(k, depth + 1, nodes, r, err, errlen) != 0)
			return -1;
	return 0;
}

int
pgsrc_plan_walk(const char *json, size_t len, struct pgsrc_reads *r,
    char *err, size_t errlen)
{
	cJSON *root;
	const cJSON *e, *plan;
	size_t nodes = 0;
	int rc = -1;

	if (len > PGSRC_PLAN_MAX) {
		snprintf(err, errlen, "postgresql: the query's plan is over %d "
		    "bytes", PGSRC_PLAN_MAX);
		return -1;
	}
	if ((root = cJSON_ParseWithLength(json, len)) == NULL ||
	    !cJSON_IsArray(root) || cJSON_GetArraySize(root) < 1) {
		snprintf(err, errlen, "postgresql: the query's plan is not an "
		    "EXPLAIN (FORMAT JSON) list");
		goto out;
	}
	cJSON_ArrayForEach(e, root) {
		plan = cJSON_GetObjectItemCaseSensitive(e, "Plan");
		if (plan == NULL) {
			snprintf(err, errlen, "postgresql: the query's plan: "
			    "an entry without \"Plan\"");
			goto out;
		}
		if (plan_node(plan, 0, &nodes, r, err, errlen) != 0)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- the key columns of a --query: what deltas take from the log -------- */

static const char *const pg_key_names[PGSRC_KEY_N] = {
	"id", "scope", "revoked_at"
};

const char *
pgsrc_key_name(int k)
{
	return k >= 0 && k < PGSRC_KEY_N ? pg_key_names[k] : "";
}

/* Scans of a relation that return each row of it at most once. */
static const char *const pg_scans_rel[] = {
	"Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan",
	"Tid Scan", "Tid Range Scan", NULL
};

/*
 * Nodes whose Output columns are their child's (or, for an aggregate, the
 * child's grouped columns): a row they return is a row of their child,
 * or rows of it with the same values.
 */
static const char *const pg_nodes_pass[] = {
	"Sort", "Incremental Sort", "Unique", "Aggregate", "Group", "Result",
	"Materialize", "Memoize", "Gather", "Gather Merge", NULL
};

/* Why a node is refused (a row's presence depends on other rows). */
static const char *
pg_node_why(const char *type)
{
	if (strstr(type, "Join") != NULL || strcmp(type, "Nested Loop") == 0 ||
	    strcmp(type, "Hash") == 0)
		return "a join: a row is returned or not by rows of another "
		    "table, whose changes log their own keys, not this row's";
	if (strcmp(type, "Limit") == 0 || strcmp(type, "WindowAgg") == 0)
		return "a row beyond the limit (or ranked by a window function) "
		    "enters the result when another leaves, with no change of "
		    "its own";
	if (strcmp(type, "SetOp") == 0 || strcmp(type, "Recursive Union") == 0)
		return "INTERSECT, EXCEPT or a recursive query: a row is "
		    "returned or not by other rows";
	if (strcmp(type, "Values Scan") == 0 || strcmp(type, "Result") == 0)
		return "a row of constants is in no table, and no trigger logs it";
	if (strcmp(type, "Sample Scan") == 0)
		return "TABLESAMPLE returns a row or not by chance";
	return "follow cannot tell that each row returned is one row of a "
	    "table with the trigger, returned for its own columns";
}

/* Whether node n has a Parent Relationship of InitPlan or SubPlan. */
static bool
pg_is_subplan(const cJSON *n)
{
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(n, "Parent Relationship");

	return cJSON_IsString(pr) && (strcmp(pr->valuestring, "InitPlan") == 0 ||
	    strcmp(pr->valuestring, "SubPlan") == 0);
}

/* Refuses a subquery anywhere in the plan. 0, or -1 with err. */
static int
keys_no_subplan(const cJSON *n, int depth, char *err, size_t errlen)
{
	const cJSON *kids, *k;

	if (depth > PGSRC_PLAN_DEPTH) {
		snprintf(err, errlen, "postgresql: the query's plan has more "
		    "than %d levels", PGSRC_PLAN_DEPTH);
		return -1;
	}
	kids = cJSON_GetObjectItemCaseSensitive(n, "Plans");
	cJSON_ArrayForEach(k, kids) {
		if (pg_is_subplan(k)) {
			snprintf(err, errlen, "postgresql: the query has a "
			    "subquery (%s in its plan): a row is returned or "
			    "not by other rows, whose changes log their own keys, "
			    "not this row's, so a delta could miss it (follow "
			    "only conditions on a row's own columns; a UNION ALL "
			    "of tables with the trigger " PGSRC_TRIGGER " is "
			    "fine)", cJSON_GetObjectItemCaseSensitive(k,
			    "Parent Relationship")->valuestring);
			return -1;
		}
		if (keys_no_subplan(k, depth + 1, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/*
 * Whether s (an Output entry) is the plain column col: "col", or
 * "Q.col" where Q is any qualifier (alias NULL) or alias, bare or in
 * double quotes ('"' doubled). Names that need quoting are not plain.
 */
static bool
keys_is_col(const char *s, const char *col, const char *alias)
{
	size_t sl = strlen(s), cl = strlen(col), i, j;

	if (strcmp(s, col) == 0)
		return true;
	if (sl < cl + 2 || strcmp(s + sl - cl, col) != 0 || s[sl - cl - 1] != '.')
		return false;
	sl -= cl + 1;		/* the qualifier is s[0, sl) */
	if (alias == NULL) {
		if (s[0] == '"')
			return sl >= 2 && s[sl - 1] == '"';
		for (i = 0; i < sl; i++)
			if (!SQL_IDCHAR((unsigned char)s[i]))
				return false;
		return sl > 0;
	}
	if (strlen(alias) == sl && strncmp(s, alias, sl) == 0)
		return true;
	if (sl < 2 || s[0] != '"' || s[sl - 1] != '"')
		return false;
	for (i = 1, j = 0; i < sl - 1; i++, j++) {
		if (alias[j] != s[i])
			return false;
		if (s[i] == '"' && s[++i] != '"')
			return false;
	}
	return alias[j] == '\0' && i == sl - 1;
}

/* Output entry i of node n (NULL when there is none). */
static const char *
keys_out(const cJSON *n, int i)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(n, "Output"), *e;

	if (!cJSON_IsArray(o) || i < 0 || (e = cJSON_GetArrayItem(o, i)) ==
	    NULL || !cJSON_IsString(e))
		return NULL;
	return e->valuestring;
}

/*
 * The node whose Output names n's columns: n, or for an Append without
 * one its first member (EXPLAIN names an Append's columns after it).
 */
static const cJSON *
keys_named(const cJSON *n, int depth)
{
	const cJSON *kids;

	while (depth++ < PGSRC_PLAN_DEPTH && n != NULL &&
	    cJSON_GetObjectItemCaseSensitive(n, "Output") == NULL &&
	    (kids = cJSON_GetObjectItemCaseSensitive(n, "Plans")) != NULL)
		n = cJSON_GetArrayItem(kids, 0);
	return n;
}

static int
keys_node(const cJSON *n, int k, int i, int depth, size_t *nodes,
    const struct pgsrc_names *aliased, char *err, size_t errlen);

/* Checks n's column i, a plain column k, in its one row child. */
static int
keys_pass(const cJSON *n, const char *type, const char *out, int k,
    int depth, size_t *nodes, const struct pgsrc_names *aliased,
    char *err, size_t errlen)
{
	const cJSON *kids = cJSON_GetObjectItemCaseSensitive(n, "Plans"), *c;
	const cJSON *child = NULL, *named, *o;
	const char *s;
	int j, found = 0;

	cJSON_ArrayForEach(c, kids) {
		if (pg_is_subplan(c))
			continue;
		if (child != NULL) {
			snprintf(err, errlen, "postgresql: the query's plan: a "
			    "%.40s with more than one input", type);
			return -1;
		}
		child = c;
	}
	if (child == NULL) {
		snprintf(err, errlen, "postgresql: the query's column %s is "
		    "%.120s in a %.40s without a table: %s (return the column "
		    "%s of a table with the trigger " PGSRC_TRIGGER ")",
		    pg_key_names[k], out, type, pg_node_why("Result"),
		    pg_key_names[k]);
		return -1;
	}
	named = keys_named(child, depth + 1);
	o = named != NULL ? cJSON_GetObjectItemCaseSensitive(named, "Output") :
	    NULL;
	for (j = 0; cJSON_IsArray(o) && j < cJSON_GetArraySize(o); j++) {
		if ((s = keys_out(named, j)) == NULL || strcmp(s, out) != 0)
			continue;
		found++;
		if (keys_node(child, k, j, depth + 1, nodes, aliased, err,
		    errlen) != 0)
			return -1;
	}
	if (found == 0) {
		snprintf(err, errlen, "postgresql: the query's plan: the "
		    "column %s (%.120s) of a %.40s is not among its input's "
		    "columns", pg_key_names[k], out, type);
		return -1;
	}
	return 0;
}

/*
 * Checks that column i of node n is, for every row it returns, the
 * column pg_key_names[k] of the scanned table's row the row is. 0 or -1.
 */
static int
keys_node(const cJSON *n, int k, int i, int depth, size_t *nodes,
    const struct pgsrc_names *aliased, char *err, size_t errlen)
{
	const cJSON *rel, *nsp, *alias, *kids, *c;
	const char *type, *out, *col = pg_key_names[k];
	size_t a;

	if ((type = plan_node_type(n, depth, nodes, err, errlen)) == NULL)
		return -1;
	kids = cJSON_GetObjectItemCaseSensitive(n, "Plans");
	if (strcmp(type, "Append") == 0 || strcmp(type, "Merge Append") == 0) {
		/* UNION ALL, partitions: each member's column i. */
		cJSON_ArrayForEach(c, kids)
			if (!pg_is_subplan(c) && keys_node(c, k, i, depth + 1,
			    nodes, aliased, err, errlen) != 0)
				return -1;
		return 0;
	}
	out = keys_out(n, i);
	if (!pg_in(type, pg_scans_rel) && !pg_in(type, pg_nodes_pass)) {
		snprintf(err, errlen, "postgresql: the query's plan has a "
		    "%.40s above the column %s: %s (follow only rows of "
		    "tables with the trigger " PGSRC_TRIGGER ", or a UNION ALL "
		    "of them, with conditions on each row's own columns)",
		    type, col, pg_node_why(type));
		return -1;
	}
	if (out == NULL) {
		snprintf(err, errlen, "postgresql: the query's plan: a %.40s "
		    "without its Output column %d", type, i + 1);
		return -1;
	}
	rel = cJSON_GetObjectItemCaseSensitive(n, "Relation Name");
	nsp = cJSON_GetObjectItemCaseSensitive(n, "Schema");
	alias = cJSON_GetObjectItemCaseSensitive(n, "Alias");
	if (!keys_is_col(out, col, NULL)) {
		char where[160] = "";

		if (cJSON_IsString(rel) && cJSON_IsString(nsp))
			snprintf(where, sizeof(where), " (%.64s.%.64s)",
			    nsp->valuestring, rel->valuestring);
		snprintf(err, errlen, "postgresql: the query's column %s is "
		    "%.120s, not the column %s of a table%s: the trigger "
		    PGSRC_TRIGGER " logs a row's own %s, so a change would reach "
		    "deltas with another %s than the base's and a new row "
		    "could answer not_revoked (return the table's column %s as "
		    "it is, under that name; change the rows, not the query)",
		    col, out, col, where, col, col, col);
		return -1;
	}
	if (!pg_in(type, pg_scans_rel))
		return keys_pass(n, type, out, k, depth, nodes, aliased, err,
		    errlen);
	if (!cJSON_IsString(rel) || !cJSON_IsString(nsp) ||
	    !cJSON_IsString(alias)) {
		snprintf(err, errlen, "postgresql: the query's plan: a %.40s "
		    "without a relation, its schema and its alias", type);
		return -1;
	}
	/* A column alias list (FROM t AS a(id, scope)) renames columns. */
	for (a = 0; a < aliased->n; a++)
		if (strcmp(aliased->v[a], alias->valuestring) == 0 ||
		    strlen(alias->valuestring) >= SQL_NAME_MAX - 4) {
			snprintf(err, errlen, "postgresql: the query (or a view "
			    "it reads) may give the columns of %.64s.%.64s other "
			    "names with a column alias list (%.64s(...)): follow "
			    "cannot tell which column is %s (name the columns in "
			    "the SELECT list instead: SELECT %.64s.%s ...)",
			    nsp->valuestring, rel->valuestring,
			    alias->valuestring, col, alias->valuestring, col);
			return -1;
		}
	if (!keys_is_col(out, col, alias->valuestring)) {
		snprintf(err, errlen, "postgresql: the query's plan: the column "
		    "%s of a %.40s of %.64s.%.64s is %.120s", col, type,
		    nsp->valuestring, rel->valuestring, out);
		return -1;
	}
	return 0;
}

int
pgsrc_plan_keys(const char *json, size_t len, const int pos[PGSRC_KEY_N],
    const struct pgsrc_names *aliased, char *err, size_t errlen)
{
	static const struct pgsrc_names none = { NULL, 0 };
	cJSON *root;
	const cJSON *plan;
	size_t nodes;
	int k, rc = -1;

	if (aliased == NULL)
		aliased = &none;
	if (pos[PGSRC_KEY_ID] < 0) {
		snprintf(err, errlen, "postgresql: the query returns no column "
		    "named \"id\"");
		return -1;
	}
	if (pos[PGSRC_KEY_AT] < 0) {
		snprintf(err, errlen, "postgresql: the query returns no column "
		    "named \"revoked_at\": a delta carries the revoked_at the "
		    "trigger " PGSRC_TRIGGER " logs, a base none, and a subject "
		    "or session cutoff would differ between them (return the "
		    "table's column revoked_at)");
		return -1;
	}
	if (len > PGSRC_PLAN_MAX) {
		snprintf(err, errlen, "postgresql: the query's plan is over %d "
		    "bytes", PGSRC_PLAN_MAX);
		return -1;
	}
	if ((root = cJSON_ParseWithLength(json, len)) == NULL ||
	    !cJSON_IsArray(root) || cJSON_GetArraySize(root) != 1 ||
	    (plan = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(root,
	    0), "Plan")) == NULL) {
		snprintf(err, errlen, "postgresql: the query's plan is not one "
		    "EXPLAIN (FORMAT JSON) plan");
		goto out;
	}
	if (keys_no_subplan(plan, 0, err, errlen) != 0)
		goto out;
	for (k = 0; k < PGSRC_KEY_N; k++) {
		nodes = 0;
		if (pos[k] >= 0 && keys_node(plan, k, pos[k], 0, &nodes,
		    aliased, err, errlen) != 0)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- standbys: how far behind the data may be --------------------------- */

enum pgsrc_standby_verdict
pgsrc_standby_judge(const struct pgsrc_standby *s, int64_t max_lag,
    int64_t *lag, char *why, size_t whylen)
{
	char dummy[1];
	int64_t l = -1;
	enum pgsrc_standby_verdict v;

	assert(s != NULL && lag != NULL);
	if (why == NULL) {
		why = dummy;
		whylen = sizeof(dummy);
	}
	why[0] = '\0';
	*lag = -1;
	if (!s->in_recovery) {
		*lag = 0;
		return PGSRC_SB_PRIMARY;
	}
	if (max_lag <= 0) {
		snprintf(why, whylen, "the server is a standby (in recovery): "
		    "its data may be behind the primary's by any time, and what "
		    "is signed from it would say it is current; read the "
		    "primary, or allow a standby with --standby-max-lag");
		return PGSRC_SB_NOT_ALLOWED;
	}
	if (!s->receiver) {
		snprintf(why, whylen, "no WAL receiver runs (replication is "
		    "not streaming: broken, or recovery from an archive)");
		return PGSRC_SB_UNKNOWN;
	}
	if (!s->visible) {
		snprintf(why, whylen, "pg_stat_wal_receiver's details are not "
		    "readable by this role: grant it pg_read_all_stats (or "
		    "pg_monitor)");
		return PGSRC_SB_NO_PRIVILEGE;
	}
	if (!s->streaming) {
		snprintf(why, whylen, "the WAL receiver is \"%.20s\", not "
		    "streaming", s->status);
		return PGSRC_SB_UNKNOWN;
	}
	if (!s->have_age || !s->have_end || !s->have_receive ||
	    !s->have_replay) {
		snprintf(why, whylen, "no message from the sender yet naming "
		    "its end of WAL");
		return PGSRC_SB_UNKNOWN;
	}
	if (s->age_ms < 0) {
		snprintf(why, whylen, "the last message from the sender arrived "
		    "%" PRId64 " ms in the standby's future (its clock went "
		    "back?)", -s->age_ms);
		return PGSRC_SB_UNKNOWN;
	}
	/* In whole seconds, rounded up, with the margin. */
	if (s->age_ms <= INT64_MAX - PGSRC_STANDBY_MARGIN_MS - 999)
		l = (s->age_ms + PGSRC_STANDBY_MARGIN_MS + 999) / 1000;
	else
		l = INT64_MAX / 1000;
	v = PGSRC_SB_BEHIND;
	if (s->paused)
		snprintf(why, whylen, "replay is paused "
		    "(pg_wal_replay_resume() resumes it)");
	else if (s->replay_lsn < s->receive_lsn)
		snprintf(why, whylen, "replay is behind what was received "
		    "(replayed %" PRIX64 "/%" PRIX64 ", received %" PRIX64
		    "/%" PRIX64 ")", s->replay_lsn >> 32,
		    s->replay_lsn & 0xffffffff, s->receive_lsn >> 32,
		    s->receive_lsn & 0xffffffff);
	else if (s->replay_lsn < s->end_lsn)
		snprintf(why, whylen, "replay is behind the sender's end of WAL "
		    "(replayed %" PRIX64 "/%" PRIX64 ", sender at %" PRIX64
		    "/%" PRIX64 ")", s->replay_lsn >> 32,
		    s->replay_lsn & 0xffffffff, s->end_lsn >> 32,
		    s->end_lsn & 0xffffffff);
	else if (l > max_lag) {
		snprintf(why, whylen, "the last message from the sender arrived "
		    "%" PRId64 " ms ago: the data may be %" PRId64 " s behind, "
		    "more than %" PRId64 " s (an idle sender answers every "
		    "wal_receiver_timeout / 2 of the standby)", s->age_ms, l,
		    max_lag);
		*lag = l;
	} else {
		v = PGSRC_SB_CURRENT;
		*lag = l;
	}
	/* Replay behind: how far is not known (*lag stays -1). */
	return v;
}

/* ---- logical replication ------------------------------------------------ */

enum pgsrc_repl_verdict
pgsrc_repl_judge(const struct pgsrc_repl_rel *v, size_t n, bool known,
    char *why, size_t whylen)
{
	const struct pgsrc_repl_rel *origin = NULL;
	size_t i, norigin = 0;

	if (whylen > 0)
		why[0] = '\0';
	for (i = 0; i < n; i++) {
		if (v[i].mode == 0 && v[i].subs != NULL) {
			snprintf(why, whylen, "revcheck_changes is replicated "
			    "into this database by subscription %.200s: its "
			    "rows carry the publisher's transaction ids, which "
			    "the follower's cursor (this server's) cannot "
			    "order, so changes could reach no delta; here the "
			    "trigger " PGSRC_TRIGGER " logs what the apply "
			    "worker writes (leave revcheck_changes out of the "
			    "publication, then ALTER SUBSCRIPTION ... REFRESH "
			    "PUBLICATION)", v[i].subs);
			return PGSRC_REPL_REFUSE;
		}
	}
	for (i = 0; i < n; i++) {
		if (v[i].mode == 0 || v[i].subs == NULL)
			continue;
		if (v[i].mode == 'O') {
			snprintf(why, whylen, "the trigger " PGSRC_TRIGGER
			    " on %.200s fires in the default mode (ORIGIN), "
			    "so not in the apply worker of subscription %.200s "
			    "that replicates into it: the rows it writes would "
			    "reach no delta (ALTER TABLE %.200s ENABLE ALWAYS "
			    "TRIGGER " PGSRC_TRIGGER ")", v[i].rel, v[i].subs,
			    v[i].rel);
			return PGSRC_REPL_REFUSE;
		}
		if (v[i].mode == 'A' && !v[i].path) {
			snprintf(why, whylen, "the function of the trigger "
			    PGSRC_TRIGGER " on %.200s sets no search_path: the "
			    "apply worker of subscription %.200s runs with an "
			    "empty one, so the trigger fails on the first row "
			    "it replicates and replication stops (apply "
			    "config/postgresql-schema.sql again: "
			    "revcheck_changes_log() SET search_path FROM "
			    "CURRENT)", v[i].rel, v[i].subs);
			return PGSRC_REPL_REFUSE;
		}
	}
	for (i = 0; i < n; i++)
		if (v[i].mode == 'O' && norigin++ == 0)
			origin = &v[i];
	if (origin == NULL)
		return PGSRC_REPL_OK;
	if (!known) {
		snprintf(why, whylen, "the trigger " PGSRC_TRIGGER " on %.200s "
		    "fires in the default mode (ORIGIN), not in a logical "
		    "replication apply worker, and this role cannot read "
		    "pg_subscription_rel and pg_subscription.subname to tell "
		    "whether a subscription replicates into it: its rows "
		    "could reach no delta (ALTER TABLE %.200s ENABLE ALWAYS "
		    "TRIGGER " PGSRC_TRIGGER ", or GRANT SELECT ON "
		    "pg_subscription_rel and SELECT (oid, subname) ON "
		    "pg_subscription to this role)", origin->rel, origin->rel);
		return PGSRC_REPL_REFUSE;
	}
	snprintf(why, whylen, "the trigger " PGSRC_TRIGGER " on %.200s%s fires "
	    "in the default mode (ORIGIN): a row written in a session with "
	    "session_replication_role = replica (a bulk load that sets it, "
	    "a superuser) reaches no delta, and answers not_revoked until "
	    "the next re-base (ALTER TABLE %.200s ENABLE ALWAYS TRIGGER "
	    PGSRC_TRIGGER ")", origin->rel, norigin > 1 ? " (and other "
	    "tables)" : "", origin->rel);
	return PGSRC_REPL_WARN;
}

/* ---- logical replication subscribers: how far behind the data may be ---- */

enum pgsrc_sub_verdict
pgsrc_sub_judge(const struct pgsrc_sub *v, size_t n, int64_t max_lag,
    int64_t *lag, char *why, size_t whylen)
{
	const struct pgsrc_sub *s;
	char dummy[1];
	int64_t l, worst = 0;
	size_t i;

	assert(lag != NULL && (v != NULL || n == 0));
	if (why == NULL) {
		why = dummy;
		whylen = sizeof(dummy);
	}
	why[0] = '\0';
	*lag = -1;
	if (n == 0) {
		*lag = 0;
		return PGSRC_SUB_NONE;
	}
	if (max_lag <= 0) {
		snprintf(why, whylen, "%.200s is replicated into this database "
		    "by subscription %.200s: its data may be behind the "
		    "publisher's by any time (a subscription disabled, an apply "
		    "worker failing on a conflict, a publisher out of reach), "
		    "and what is signed from it would say it is current; read "
		    "the publisher, or allow a subscriber with "
		    "--subscriber-max-lag", v[0].rel, v[0].name);
		return PGSRC_SUB_NOT_ALLOWED;
	}
	/* Every subscription must be shown current: the first that is not. */
	for (i = 0; i < n; i++) {
		s = &v[i];
		if (!s->enabled) {
			snprintf(why, whylen, "subscription %.200s is disabled "
			    "(ALTER SUBSCRIPTION %.200s ENABLE): %.200s holds "
			    "only what it applied before", s->name, s->name,
			    s->rel);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->unready != NULL) {
			snprintf(why, whylen, "subscription %.200s has not "
			    "synchronized %.200s yet (srsubstate '%c' in "
			    "pg_subscription_rel, not 'r')", s->name,
			    s->unready, s->unready_state != '\0' ?
			    s->unready_state : '?');
			return PGSRC_SUB_UNKNOWN;
		}
		if (!s->worker) {
			snprintf(why, whylen, "no apply worker runs for "
			    "subscription %.200s (it failed, a conflict or the "
			    "publisher out of reach: see the server's log; or "
			    "it is starting)", s->name);
			return PGSRC_SUB_UNKNOWN;
		}
		if (!s->have_age) {
			snprintf(why, whylen, "the apply worker of subscription "
			    "%.200s has no message from the publisher yet",
			    s->name);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->age_ms < 0) {
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s arrived %" PRId64 " ms in the subscriber's "
			    "future (its clock went back?)", s->name, -s->age_ms);
			return PGSRC_SUB_UNKNOWN;
		}
		if (s->age_ms <= INT64_MAX - PGSRC_SUB_MARGIN_MS - 999)
			l = (s->age_ms + PGSRC_SUB_MARGIN_MS + 999) / 1000;
		else
			l = INT64_MAX / 1000;
		if (!s->keepalive) {
			/* What it received may not be applied: how far, unknown. */
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s (%" PRId64 " ms ago) was data its apply "
			    "worker may still be applying, not a keepalive",
			    s->name, s->age_ms);
			return PGSRC_SUB_BEHIND;
		}
		if (l > max_lag) {
			snprintf(why, whylen, "the last message of subscription "
			    "%.200s arrived %" PRId64 " ms ago: %.200s may be %"
			    PRId64 " s behind, more than %" PRId64 " s (an idle "
			    "publisher is heard from every wal_receiver_timeout "
			    "/ 2 of the subscriber)", s->name, s->age_ms, s->rel,
			    l, max_lag);
			*lag = l;
			return PGSRC_SUB_BEHIND;
		}
		if (l > worst)
			worst = l;
	}
	*lag = worst;
	return PGSRC_SUB_CURRENT;
}
