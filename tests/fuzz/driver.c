/* driver.c - replays fuzz inputs (files or directories) through a harness without libFuzzer */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long replayed;

static int
replay(const char *path)
{
	unsigned char *buf, *copy;
	char err[512], sub[4096];
	struct dirent *de;
	struct stat st;
	size_t len;
	DIR *d;
	int n, rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "driver: %s: cannot stat\n", path);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		if ((d = opendir(path)) == NULL)
			return -1;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			n = snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			if (n < 0 || (size_t)n >= sizeof(sub) || replay(sub) != 0)
				rc = -1;
		}
		closedir(d);
		return rc;
	}
	if (util_read_file(path, 64u << 20, &buf, &len, err, sizeof(err)) != 0) {
		fprintf(stderr, "driver: %s\n", err);
		return -1;
	}
	/* An exact-size copy, so ASan sees any read past the input. */
	if ((copy = malloc(len ? len : 1)) == NULL) {
		free(buf);
		return -1;
	}
	memcpy(copy, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
	replayed++;
	return 0;
}

int
main(int argc, char **argv)
{
	int i, rc = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++)
		if (replay(argv[i]) != 0)
			rc = 1;
	printf("%s: replayed %lu inputs\n", argv[0], replayed);
	return rc;
}
