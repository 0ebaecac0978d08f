/* notify.h - systemd readiness and watchdog over $NOTIFY_SOCKET, without libsystemd */
#ifndef REVCHECK_SVC_NOTIFY_H
#define REVCHECK_SVC_NOTIFY_H

#include <stdint.h>

/*
 * Sends one datagram ("READY=1", "STOPPING=1", ...) to $NOTIFY_SOCKET, a
 * path or an abstract name starting with '@'. Returns 0 when sent, 1
 * when no socket is configured, -1 on error (errno set).
 */
int notify_send(const char *state);

/* "RELOADING=1" with the MONOTONIC_USEC newer systemd expects. */
int notify_reloading(void);

/*
 * The watchdog period in microseconds from $WATCHDOG_USEC (when
 * $WATCHDOG_PID is unset or ours), 0 when no watchdog is asked for.
 */
uint64_t notify_watchdog_usec(void);

#endif
