/* log.c - one line per event on stderr, journald-friendly */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *log_prog = "revcheck";
static enum log_level log_max = LOG_LVL_INFO;
static int log_journal = -1;

void
log_init(const char *progname, enum log_level max)
{
	log_prog = progname;
	log_max = max;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

static void log_emit(enum log_level, const char *, const char *, va_list)
    __attribute__((format(printf, 3, 0)));

static void
log_emit(enum log_level lvl, const char *tag, const char *fmt, va_list ap)
{
	char msg[2048], ts[32];
	struct tm tm;
	time_t now;
	size_t i;

	if (lvl > log_max)
		return;
	if (log_journal == -1)
		log_journal = getenv("JOURNAL_STREAM") != NULL;
	vsnprintf(msg, sizeof(msg), fmt, ap);	/* truncation is acceptable */
	for (i = 0; msg[i] != '\0'; i++)
		if (msg[i] == '\n' || msg[i] == '\r')
			msg[i] = ' ';
	if (log_journal) {
		fprintf(stderr, "<%d>%s: %s%s\n", (int)lvl, log_prog, tag, msg);
		return;
	}
	now = time(NULL);
	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		ts[0] = '\0';
	fprintf(stderr, "%s %s: %s%s\n", ts, log_prog, tag, msg);
}

#define LOG_FN(name, lvl, tag)				\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_emit(lvl, tag, fmt, ap);			\
	va_end(ap);					\
}

LOG_FN(log_err, LOG_LVL_ERR, "error: ")
LOG_FN(log_warn, LOG_LVL_WARN, "warning: ")
LOG_FN(log_info, LOG_LVL_INFO, "")
LOG_FN(log_debug, LOG_LVL_DEBUG, "debug: ")
