/* log.h - one line per event on stderr, journald-friendly, text or JSON */
#ifndef REVCHECK_LOG_H
#define REVCHECK_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6,
    LOG_LVL_DEBUG = 7 };

/*
 * Sets the name printed before each line and the most verbose level shown.
 * When stderr is the journal (JOURNAL_STREAM set) lines carry a "<N>"
 * priority prefix instead of a timestamp.
 */
void log_init(const char *progname, enum log_level max);

/* Changes the most verbose level shown; safe while other threads log. */
void log_set_level(enum log_level max);

/*
 * JSON lines instead of text: one object per line,
 * {"time":"...Z","level":"info","program":"revcheckd","message":"..."},
 * every byte outside printable ASCII escaped, so each line parses. Under
 * the journal the "<N>" priority prefix still comes first (the journal
 * strips it). Safe while other threads log.
 */
void log_set_json(bool on);

/* Each writes one line; newlines inside the message are replaced. */
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * One event with a structured body: obj is one JSON object on one line
 * (as cJSON_PrintUnformatted writes it; not checked here), name a word
 * of plain ASCII. A text line is "NAME OBJ"; a JSON line carries the
 * object nested, not as an escaped string:
 * {"time":...,"message":"NAME","NAME":{...}}. Safe from any thread.
 */
void log_event(enum log_level lvl, const char *name, const char *obj);

#endif
