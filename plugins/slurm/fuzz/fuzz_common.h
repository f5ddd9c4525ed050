/*
 * fuzz_common.h - what the libFuzzer targets share: a log function that formats its arguments
 * (as slurm_error would, so a bad format argument is caught) and a scratch root on disk.
 */
#ifndef TIERLENS_FUZZ_COMMON_H
#define TIERLENS_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

__attribute__((format(printf, 1, 2), unused)) static void fuzz_log(const char *fmt, ...)
{
	static char line[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
}

/* Write `len` bytes to `path`, replacing it. */
__attribute__((unused)) static void fuzz_write(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		abort();
	}
	if (len && fwrite(data, 1, len, f) != len)
		abort();
	fclose(f);
}

/* mkdir -p of a path inside an existing root. */
__attribute__((unused)) static void fuzz_mkdirs(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

/* A fresh directory for this process's fake root. */
__attribute__((unused)) static const char *fuzz_root(void)
{
	static char root[64];
	if (!root[0]) {
		snprintf(root, sizeof root, "/tmp/tl_fuzz.XXXXXX");
		if (!mkdtemp(root))
			abort();
	}
	return root;
}

/*
 * A copy of a shared test vector's root (TL_FUZZ_TEMPLATE, default the dm-crypt on md raid6
 * vector) as this process's fake root: every /proc and /sys read of the detector goes there.
 */
__attribute__((unused)) static const char *fuzz_vector_root(void)
{
	static char root[128];
	char cmd[8192];
	const char *tpl = getenv("TL_FUZZ_TEMPLATE");

	if (root[0])
		return root;
	if (!tpl)
		tpl = "../../tests/vectors/slurm_dmcrypt_on_md_raid6/root";
	snprintf(root, sizeof root, "%s/root", fuzz_root());
	snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", tpl, root);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot copy %s (set TL_FUZZ_TEMPLATE)\n", tpl);
		abort();
	}
	return root;
}

#endif
