/* config_json.h - the config file's JSON text: comments, syntax errors, repeated keys */
#ifndef REVCHECK_SVC_CONFIG_JSON_H
#define REVCHECK_SVC_CONFIG_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * Blanks out // and block comments of s[0..len) outside strings, in
 * place, keeping newlines so that an error position still maps to the
 * right line. Returns 0, or -1 for an unterminated block comment (s is
 * then partly blanked).
 */
int config_json_strip_comments(char *s, size_t len);

/* The 1-based line and column of byte off of s. This function can't fail. */
void config_json_line_col(const char *s, size_t off, unsigned *line,
    unsigned *col);

/*
 * Where the first JSON syntax error of s[0..len) is (*off) and what was
 * expected there (*want, a static string); false when the scan finds none
 * (the caller falls back to cJSON's own position). Builds nothing.
 */
bool config_json_syntax_error(const char *s, size_t len, size_t *off,
    const char **want);

/*
 * The first key given twice in an object anywhere in v (keys starting
 * with '_', comments that are never read, excepted), with *where the key
 * of the object or array holding it (left NULL at the top level); NULL
 * when none is. *where must be NULL on entry.
 */
const char *config_json_repeated_key(const cJSON *v, const char **where);

/*
 * *dst becomes a fresh copy of v, which must be a non-empty string (the
 * old *dst is freed). 0, or -1 with err naming what.
 */
int config_json_dup_str(char **dst, const cJSON *v, const char *what,
    char *err, size_t errlen);

#endif
