/* test_notify.c - sd_notify datagrams to path and abstract sockets, watchdog settings */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../svc/notify.h"

/* Binds a datagram socket to name (a path, or "@abstract"). */
static int
listener(const char *name)
{
	struct sockaddr_un sun;
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	cr_assert(fd >= 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, name, n);
	if (name[0] == '@')
		sun.sun_path[0] = '\0';
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
	    (name[0] == '@' ? 0 : 1))), 0);
	return fd;
}

static void
expect_msg(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	cr_assert(n > 0, "nothing received");
	buf[n] = '\0';
	cr_assert(strncmp(buf, want, strlen(want)) == 0, "got %s", buf);
}

Test(notify, abstract_socket)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@revcheck-test-notify-%ld",
	    (long)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	cr_assert_eq(notify_send("READY=1"), 0);
	expect_msg(fd, "READY=1");
	cr_assert_eq(notify_reloading(), 0);
	expect_msg(fd, "RELOADING=1\nMONOTONIC_USEC=");
	close(fd);
}

Test(notify, path_socket)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/revcheck-test-notify-%ld",
	    (long)getpid());
	unlink(path);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	cr_assert_eq(notify_send("STOPPING=1"), 0);
	expect_msg(fd, "STOPPING=1");
	close(fd);
	unlink(path);
}

Test(notify, no_socket_or_bad_one)
{
	unsetenv("NOTIFY_SOCKET");
	cr_assert_eq(notify_send("READY=1"), 1);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	cr_assert_eq(notify_send("READY=1"), -1);
	setenv("NOTIFY_SOCKET", "/nonexistent/dir/socket", 1);
	cr_assert_eq(notify_send("READY=1"), -1);
}

Test(notify, watchdog_settings)
{
	char pid[32];

	unsetenv("WATCHDOG_PID");
	unsetenv("WATCHDOG_USEC");
	cr_assert_eq(notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "2000000", 1);
	cr_assert_eq(notify_watchdog_usec(), 2000000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	cr_assert_eq(notify_watchdog_usec(), 2000000);
	setenv("WATCHDOG_PID", "1", 1);
	cr_assert_eq(notify_watchdog_usec(), 0, "meant for another process");
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "soon", 1);
	cr_assert_eq(notify_watchdog_usec(), 0);
}
