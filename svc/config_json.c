/* config_json.c - the config file's JSON text: comments, syntax errors, repeated keys */
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "config_json.h"

/*
 * Blanks out // and block comments outside strings, keeping newlines so
 * that cJSON's error position still maps to the right line. Returns 0,
 * or -1 for an unterminated block comment.
 */
int
config_json_strip_comments(char *s, size_t len)
{
	size_t i = 0;
	bool instr = false;

	while (i < len) {
		if (instr) {
			if (s[i] == '\\' && i + 1 < len)
				i += 2;
			else {
				if (s[i] == '"')
					instr = false;
				i++;
			}
			continue;
		}
		if (s[i] == '"') {
			instr = true;
			i++;
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				s[i++] = ' ';
		} else if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
			s[i++] = ' ';
			s[i++] = ' ';
			for (;;) {
				if (i + 1 >= len)
					return -1;
				if (s[i] == '*' && s[i + 1] == '/') {
					s[i++] = ' ';
					s[i++] = ' ';
					break;
				}
				if (s[i] != '\n')
					s[i] = ' ';
				i++;
			}
		} else
			i++;
	}
	return 0;
}

void
config_json_line_col(const char *s, size_t off, unsigned *line,
    unsigned *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else
			(*col)++;
	}
}

/*
 * Finds the first JSON syntax error and what should have been there:
 * cJSON reports only roughly where it gave up, so after it fails this
 * small recursive scan walks the same text and stops at the first byte
 * that breaks the grammar. It never builds anything.
 */
struct jscan {
	const char	*s;
	size_t		 len;
	size_t		 pos;
	const char	*want;	/* set at the first error */
};

#define JSCAN_MAX_DEPTH	64

static void
jscan_ws(struct jscan *j)
{
	while (j->pos < j->len && (j->s[j->pos] == ' ' ||
	    j->s[j->pos] == '\t' || j->s[j->pos] == '\r' ||
	    j->s[j->pos] == '\n'))
		j->pos++;
}

static bool
jscan_fail(struct jscan *j, const char *want)
{
	j->want = want;
	return false;
}

static bool
jscan_string(struct jscan *j)
{
	j->pos++;	/* the opening quote */
	while (j->pos < j->len && j->s[j->pos] != '"') {
		if (j->s[j->pos] == '\\')
			j->pos++;
		j->pos++;
	}
	if (j->pos >= j->len)
		return jscan_fail(j, "a closing '\"': the file ends inside "
		    "a string");
	j->pos++;
	return true;
}

static bool jscan_value(struct jscan *j, unsigned depth);

static bool
jscan_members(struct jscan *j, unsigned depth, char close)
{
	bool comma = false;

	j->pos++;	/* the opening bracket */
	for (;;) {
		jscan_ws(j);
		if (j->pos >= j->len)
			return jscan_fail(j, close == '}' ? "'}': the file "
			    "ends inside an object" : "']': the file ends "
			    "inside an array");
		if (j->s[j->pos] == close) {
			if (comma)
				return jscan_fail(j, "another member after "
				    "',': JSON allows no trailing comma");
			j->pos++;
			return true;
		}
		if (close == '}') {
			if (j->s[j->pos] == '\'')
				return jscan_fail(j, "a key in double quotes, "
				    "not single quotes");
			if (j->s[j->pos] != '"')
				return jscan_fail(j, "a key: a string in "
				    "double quotes");
			if (!jscan_string(j))
				return false;
			jscan_ws(j);
			if (j->pos >= j->len || j->s[j->pos] != ':')
				return jscan_fail(j, "':' between a key and "
				    "its value");
			j->pos++;
		}
		if (!jscan_value(j, depth + 1))
			return false;
		jscan_ws(j);
		if (j->pos >= j->len)
			continue;	/* the end-of-file message above */
		if (j->s[j->pos] == ',') {
			j->pos++;
			comma = true;
			continue;
		}
		if (j->s[j->pos] == close) {
			j->pos++;
			return true;
		}
		if (j->s[j->pos] == '"')
			return jscan_fail(j, "',' between members");
		return jscan_fail(j, close == '}' ? "',' or '}' after a "
		    "member" : "',' or ']' after an element");
	}
}

static bool
jscan_value(struct jscan *j, unsigned depth)
{
	static const char *const lits[] = { "true", "false", "null" };
	size_t i, n;
	char ch;

	jscan_ws(j);
	if (depth > JSCAN_MAX_DEPTH)
		return jscan_fail(j, "less nesting");
	if (j->pos >= j->len)
		return jscan_fail(j, "a value: the file ends first");
	ch = j->s[j->pos];
	if (ch == '{')
		return jscan_members(j, depth, '}');
	if (ch == '[')
		return jscan_members(j, depth, ']');
	if (ch == '"')
		return jscan_string(j);
	if (ch == '\'')
		return jscan_fail(j, "a string in double quotes, not single "
		    "quotes");
	if (ch == '-' || (ch >= '0' && ch <= '9')) {
		while (j->pos < j->len && (j->s[j->pos] == '-' ||
		    j->s[j->pos] == '+' || j->s[j->pos] == '.' ||
		    j->s[j->pos] == 'e' || j->s[j->pos] == 'E' ||
		    (j->s[j->pos] >= '0' && j->s[j->pos] <= '9')))
			j->pos++;
		return true;
	}
	for (i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		n = strlen(lits[i]);
		if (j->len - j->pos >= n &&
		    memcmp(j->s + j->pos, lits[i], n) == 0) {
			j->pos += n;
			return true;
		}
	}
	return jscan_fail(j, "a value: a string in double quotes, a number, "
	    "true, false, null, an array or an object");
}

/*
 * Where the first syntax error is and what was expected there; false when
 * the scan finds none (cJSON's position is used then).
 */
bool
config_json_syntax_error(const char *s, size_t len, size_t *off,
    const char **want)
{
	struct jscan j = { s, len, 0, NULL };

	if (jscan_value(&j, 0))
		return false;
	*off = j.pos;
	*want = j.want;
	return true;
}

/* An object's key and its position among the object's members. */
struct key_at {
	const char	*s;
	size_t		 at;
};

static int
key_at_cmp(const void *a, const void *b)
{
	const struct key_at *x = a, *y = b;
	int c = strcmp(x->s, y->s);

	if (c != 0)
		return c;
	return (x->at > y->at) - (x->at < y->at);
}

/*
 * The position of the first member of object v whose key is given again
 * later (comment keys, "_..." that are never read, excepted), or SIZE_MAX
 * when none is. The keys are sorted, not compared pairwise: a file at the
 * size cap can hold 100,000 keys in one object. Without memory for that,
 * pairwise.
 */
static size_t
first_repeated(const cJSON *v)
{
	const cJSON *a, *b;
	struct key_at *keys;
	size_t n = 0, i, at, first = SIZE_MAX;

	for (a = v->child; a != NULL; a = a->next)
		n++;
	if (n < 2)
		return SIZE_MAX;
	if ((keys = malloc(n * sizeof(*keys))) == NULL) {
		for (a = v->child, at = 0; a != NULL; a = a->next, at++)
			if (a->string != NULL && a->string[0] != '_')
				for (b = a->next; b != NULL; b = b->next)
					if (b->string != NULL &&
					    strcmp(a->string, b->string) == 0)
						return at;
		return SIZE_MAX;
	}
	for (a = v->child, at = 0, n = 0; a != NULL; a = a->next, at++)
		if (a->string != NULL && a->string[0] != '_') {
			keys[n].s = a->string;
			keys[n++].at = at;
		}
	qsort(keys, n, sizeof(*keys), key_at_cmp);
	/* Equal keys sort by position: the first of a run is its first copy. */
	for (i = 1; i < n; i++)
		if (keys[i - 1].at < first && strcmp(keys[i - 1].s,
		    keys[i].s) == 0)
			first = keys[i - 1].at;
	free(keys);
	return first;
}

/*
 * The first key given twice in an object anywhere in v, with *where the
 * key of the object or array holding it (NULL at the top level); NULL if
 * none.
 */
const char *
config_json_repeated_key(const cJSON *v, const char **where)
{
	const cJSON *a;
	const char *r;
	size_t at, first;

	first = cJSON_IsObject(v) ? first_repeated(v) : SIZE_MAX;
	for (a = v->child, at = 0; a != NULL; a = a->next, at++) {
		if (at == first)
			return a->string;
		if ((cJSON_IsObject(a) || cJSON_IsArray(a)) &&
		    (r = config_json_repeated_key(a, where)) != NULL) {
			if (*where == NULL)
				*where = a->string != NULL ? a->string :
				    v->string;
			return r;
		}
	}
	return NULL;
}

int
config_json_dup_str(char **dst, const cJSON *v, const char *what, char *err,
    size_t errlen)
{
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
		snprintf(err, errlen, "%s: must be a non-empty string", what);
		return -1;
	}
	free(*dst);
	if ((*dst = strdup(v->valuestring)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", what);
		return -1;
	}
	return 0;
}
