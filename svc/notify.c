/* notify.c - systemd readiness and watchdog over $NOTIFY_SOCKET, without libsystemd */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "notify.h"
#include "util.h"

int
notify_send(const char *state)
{
	struct sockaddr_un sun;
	const char *path = getenv("NOTIFY_SOCKET");
	size_t plen;
	socklen_t slen;
	ssize_t n;
	int fd, saved;

	if (path == NULL || path[0] == '\0')
		return 1;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') ||
	    plen >= sizeof(sun.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, plen);
	if (path[0] == '@')
		sun.sun_path[0] = '\0';	/* abstract namespace */
	slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen +
	    (path[0] == '/' ? 1 : 0));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, slen);
	saved = errno;
	close(fd);
	errno = saved;
	return n < 0 ? -1 : 0;
}

int
notify_reloading(void)
{
	struct timespec ts;
	char msg[80];
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)ts.tv_sec * 1000000ULL +
	    (unsigned long long)ts.tv_nsec / 1000ULL);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -1;
	return notify_send(msg);
}

uint64_t
notify_watchdog_usec(void)
{
	const char *us = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	uint64_t v, p;

	if (us == NULL || util_parse_u64(us, UINT64_MAX, &v) == -1 || v == 0)
		return 0;
	if (pid != NULL && (util_parse_u64(pid, UINT64_MAX, &p) == -1 ||
	    p != (uint64_t)getpid()))
		return 0;
	return v;
}
