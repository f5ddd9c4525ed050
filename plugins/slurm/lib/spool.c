/* spool.c - JSON writer and safe spool writes (see spool.h). Root writes here: nothing
 * follows a symlink, nothing is written in place. */
#define _GNU_SOURCE
#include "spool.h"
#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void tl_json_init(struct tl_json *j, char *buf, size_t cap)
{
	j->buf = buf;
	j->cap = cap;
	j->len = 0;
	j->overflow = cap == 0;
	if (cap)
		buf[0] = '\0';
}

static void put(struct tl_json *j, const char *s, size_t n)
{
	if (j->overflow || j->len + n + 1 > j->cap) {
		j->overflow = 1;
		return;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

void tl_json_raw(struct tl_json *j, const char *s)
{
	put(j, s, strlen(s));
}

void tl_json_str(struct tl_json *j, const char *s)
{
	if (!s) {
		put(j, "null", 4);
		return;
	}
	put(j, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char) c;
			put(j, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			put(j, esc, 6);
		} else {
			put(j, (const char *) &c, 1);
		}
	}
	put(j, "\"", 1);
}

void tl_json_key(struct tl_json *j, const char *key, int first)
{
	if (!first)
		put(j, ",", 1);
	tl_json_str(j, key);
	put(j, ":", 1);
}

int tl_spool_write(const char *dir, const char *name, const char *data, size_t len,
		   char *err, size_t errlen)
{
	char tmp[512];
	struct stat st;
	int dfd, fd;
	size_t done = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!name[0] || strchr(name, '/') || name[0] == '.') {
		tl_seterr(err, errlen, "bad spool file name '%s'", name);
		return -1;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		tl_seterr(err, errlen, "cannot create spool directory %s: %s", dir, strerror(errno));
		return -1;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		tl_seterr(err, errlen, "cannot open spool directory %s (symlinks are refused): %s",
		       dir, strerror(errno));
		return -1;
	}
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		tl_seterr(err, errlen, "spool directory %s must be owned by uid %u and not group/world "
		       "writable", dir, (unsigned) geteuid());
		close(dfd);
		return -1;
	}
	snprintf(tmp, sizeof tmp, ".tmp.%ld.%s", (long) getpid(), name);
	unlinkat(dfd, tmp, 0);          /* a leftover of this pid from a crash */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		tl_seterr(err, errlen, "cannot create %s/%s: %s", dir, tmp, strerror(errno));
		close(dfd);
		return -1;
	}
	while (done < len) {
		ssize_t w = write(fd, data + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			tl_seterr(err, errlen, "cannot write %s/%s: %s", dir, tmp, strerror(errno));
			close(fd);
			unlinkat(dfd, tmp, 0);
			close(dfd);
			return -1;
		}
		done += (size_t) w;
	}
	if (close(fd) < 0 || renameat(dfd, tmp, dfd, name) < 0) {
		tl_seterr(err, errlen, "cannot put %s/%s in place: %s", dir, name, strerror(errno));
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}
