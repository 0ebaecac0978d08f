/* srcq.c - the source quarantine report filterbuild writes beside the filters */
/*
 * `filterbuild build --source` and `filterbuild follow` leave out a row of
 * the database that no check can name (an empty or overlong id, an invalid
 * scope, a serial that is not hex) and say so in DIR/quarantine.json.
 * Only a report: it decides no answer, so it is read when asked for, and
 * only its numbers and a few short strings are taken from it.
 */
#include "srcq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRCQ_SAMPLE_MAX	5
#define SRCQ_STR_MAX	128

/* The parsed report, or NULL (none, unreadable, too large, not JSON). */
static cJSON *
srcq_load(const char *dir)
{
	char path[4200], *buf = NULL;
	struct stat st;
	cJSON *root = NULL;
	ssize_t got;
	size_t len = 0;
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/" SRCQ_NAME, dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > SRCQ_MAX_BYTES ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL)
		goto out;
	while (len < (size_t)st.st_size) {
		got = read(fd, buf + len, (size_t)st.st_size - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	buf[len] = '\0';
	root = cJSON_ParseWithLength(buf, len);
out:
	free(buf);
	(void)close(fd);
	return root;
}

/* A non-negative whole number member, or -1. */
static double
srcq_num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
	    v->valuedouble > 9007199254740992.0)
		return -1;
	return v->valuedouble;
}

/* Copies a string member, cut to SRCQ_STR_MAX bytes ("" when absent). */
static void
srcq_str(cJSON *to, const cJSON *from, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, name);
	const char *s = cJSON_IsString(v) ? v->valuestring : "";

	json_add_strn(to, name, s, strnlen(s, SRCQ_STR_MAX));
}

void
srcq_status_json(cJSON *root, const char *filter_dir)
{
	const cJSON *sample, *it;
	cJSON *doc = NULL, *o, *arr, *e;
	double rows;
	int i = 0;

	if (filter_dir == NULL)
		return;
	if ((doc = srcq_load(filter_dir)) == NULL ||
	    (rows = srcq_num(doc, "rows")) < 0) {
		cJSON_Delete(doc);
		json_add(root, "source_quarantine", cJSON_CreateNull());
		return;
	}
	if ((o = json_add(root, "source_quarantine",
	    cJSON_CreateObject())) == NULL)
		goto out;
	json_add_u64(o, "rows", (uint64_t)rows);
	if (srcq_num(doc, "version") >= 0)
		json_add_u64(o, "version", (uint64_t)srcq_num(doc, "version"));
	if (srcq_num(doc, "updated_at") >= 0)
		json_add_time(o, "updated_at",
		    (int64_t)srcq_num(doc, "updated_at"));
	if ((arr = json_add(o, "sample", cJSON_CreateArray())) == NULL)
		goto out;
	sample = cJSON_GetObjectItemCaseSensitive(doc, "sample");
	cJSON_ArrayForEach(it, sample) {
		if (i++ >= SRCQ_SAMPLE_MAX || !cJSON_IsObject(it))
			break;
		if ((e = json_add(arr, NULL, cJSON_CreateObject())) == NULL)
			break;
		srcq_str(e, it, "scope");
		srcq_str(e, it, "id");
		srcq_str(e, it, "why");
	}
out:
	cJSON_Delete(doc);
}

void
srcq_metrics(struct sbuf *b, const char *filter_dir)
{
	cJSON *doc;
	double rows = 0;

	if (filter_dir == NULL)
		return;
	if ((doc = srcq_load(filter_dir)) != NULL) {
		rows = srcq_num(doc, "rows");
		if (rows < 0)
			rows = 0;
		cJSON_Delete(doc);
	}
	sbuf_adds(b, "# HELP revcheckd_source_quarantined_rows Rows of the "
	    "database source left out of the filter because no check can "
	    "name them (filterbuild's quarantine.json; 0: none).\n"
	    "# TYPE revcheckd_source_quarantined_rows gauge\n"
	    "revcheckd_source_quarantined_rows ");
	sbuf_addf(b, "%.0f\n", rows);
}
