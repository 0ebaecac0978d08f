/* log.c - one line per event on stderr, journald-friendly, text or JSON */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_prog = "revcheck";
/* Atomic: SIGHUP changes them while worker threads log. */
static _Atomic int log_max = LOG_LVL_INFO;
static _Atomic bool log_json;
static int log_journal = -1;

void
log_init(const char *progname, enum log_level max)
{
	log_prog = progname;
	atomic_store(&log_max, (int)max);
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void
log_set_level(enum log_level max)
{
	atomic_store(&log_max, (int)max);
}

void
log_set_json(bool on)
{
	atomic_store(&log_json, on);
}

static const char *
level_name(enum log_level lvl)
{
	switch (lvl) {
	case LOG_LVL_ERR:
		return "error";
	case LOG_LVL_WARN:
		return "warning";
	case LOG_LVL_INFO:
		return "info";
	case LOG_LVL_DEBUG:
		return "debug";
	}
	return "info";
}

/*
 * msg as the body of a JSON string: quotes, backslashes and control bytes
 * escaped, and every byte above 0x7f as \u00XX, so that the line is valid
 * JSON whatever bytes a message carries (a path, a URL from a peer).
 */
static void
json_escape(char *out, size_t cap, const char *msg)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	unsigned char ch;

	for (; *msg != '\0'; msg++) {
		ch = (unsigned char)*msg;
		if (o + 7 >= cap)
			break;	/* truncation is acceptable */
		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[ch >> 4];
			out[o + 5] = hex[ch & 15];
			o += 6;
		} else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
}

static void log_emit(enum log_level, const char *, const char *,
    const char *, va_list) __attribute__((format(printf, 4, 0)));

/*
 * One line: tag and the formatted message; obj (NULL: none) is a JSON
 * object a JSON line carries under the message's name, as it is, and a
 * text line after the message.
 */
static void
log_emit(enum log_level lvl, const char *tag, const char *obj,
    const char *fmt, va_list ap)
{
	char msg[2048], esc[2048 * 6 + 1], ts[32];
	struct tm tm;
	time_t now;
	size_t i;

	if ((int)lvl > atomic_load(&log_max))
		return;
	if (log_journal == -1)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	vsnprintf(msg, sizeof(msg), fmt, ap);	/* truncation is acceptable */
	now = time(NULL);
	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		ts[0] = '\0';
	if (atomic_load(&log_json)) {
		/* The journal strips the "<N>" priority prefix. */
		json_escape(esc, sizeof(esc), msg);
		if (log_journal)
			fprintf(stderr, "<%d>", (int)lvl);
		fprintf(stderr, "{\"time\":\"%s\",\"level\":\"%s\",\"program\":"
		    "\"%s\",\"message\":\"%s\"", ts, level_name(lvl),
		    log_prog, esc);
		if (obj != NULL)
			fprintf(stderr, ",\"%s\":%s", esc, obj);
		fputs("}\n", stderr);
		return;
	}
	if (obj != NULL) {
		if (log_journal)
			fprintf(stderr, "<%d>%s: %s%s %s\n", (int)lvl, log_prog,
			    tag, msg, obj);
		else
			fprintf(stderr, "%s %s: %s%s %s\n", ts, log_prog, tag,
			    msg, obj);
		return;
	}
	for (i = 0; msg[i] != '\0'; i++)
		if (msg[i] == '\n' || msg[i] == '\r')
			msg[i] = ' ';
	if (log_journal) {
		fprintf(stderr, "<%d>%s: %s%s\n", (int)lvl, log_prog, tag, msg);
		return;
	}
	fprintf(stderr, "%s %s: %s%s\n", ts, log_prog, tag, msg);
}

static void log_emit_obj(enum log_level, const char *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static void
log_emit_obj(enum log_level lvl, const char *obj, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(lvl, lvl == LOG_LVL_WARN ? "warning: " : lvl == LOG_LVL_ERR ?
	    "error: " : lvl == LOG_LVL_DEBUG ? "debug: " : "", obj, fmt, ap);
	va_end(ap);
}

#define LOG_FN(name, lvl, tag)				\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_emit(lvl, tag, NULL, fmt, ap);		\
	va_end(ap);					\
}

LOG_FN(log_err, LOG_LVL_ERR, "error: ")
LOG_FN(log_warn, LOG_LVL_WARN, "warning: ")
LOG_FN(log_info, LOG_LVL_INFO, "")
LOG_FN(log_debug, LOG_LVL_DEBUG, "debug: ")

void
log_event(enum log_level lvl, const char *name, const char *obj)
{
	log_emit_obj(lvl, obj, "%s", name);
}
