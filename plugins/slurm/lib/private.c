/*
 * private.c - the storage behind a job's private /tmp (see private.h).
 *
 * Layouts, from Slurm's sources: job_container/tmpfs (24.11) and namespace/tmpfs, namespace/linux
 * (25.11+) make <base>/<job id> for every job (it holds the namespace handle, .ns) and bind-mount
 * <base>/<job id>/.<job id> (tmpfs) or a directory under <base>/<job id> (linux; a dir_confs entry
 * may name its own base_path) onto each private directory; /dev/shm is always a fresh tmpfs.
 */
#define _GNU_SOURCE
#include "private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

#define LINE_LEN  1024
#define FILE_MAX  65536

/* Next line of text[*pos..len) into line (NUL-terminated); lines too long are cut. 0 at the end. */
static int next_line(const char *text, size_t len, size_t *pos, char *line, size_t linelen)
{
	size_t i = *pos, n = 0;

	if (i >= len)
		return 0;
	while (i < len && text[i] != '\n') {
		if (n + 1 < linelen)
			line[n++] = text[i] ? text[i] : ' ';   /* a NUL byte must not end the line early */
		i++;
	}
	line[n] = '\0';
	*pos = i < len ? i + 1 : i;
	return 1;
}

static void trim(char **s)
{
	char *e;
	while (**s == ' ' || **s == '\t' || **s == '\r')
		(*s)++;
	e = *s + strlen(*s);
	while (e > *s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
}

/* Strip one pair of matching quotes. */
static void unquote(char **s)
{
	size_t n = strlen(*s);
	if (n >= 2 && ((*s)[0] == '"' || (*s)[0] == '\'') && (*s)[n - 1] == (*s)[0]) {
		(*s)[n - 1] = '\0';
		(*s)++;
	}
}

static void add_base(struct tl_private *p, const char *v)
{
	int i;
	if (v[0] != '/' || strlen(v) >= TL_PRIV_PATH_LEN || p->nbases == TL_PRIV_MAX)
		return;
	for (i = 0; i < p->nbases; i++)
		if (!strcmp(p->bases[i], v))
			return;
	snprintf(p->bases[p->nbases++], TL_PRIV_PATH_LEN, "%s", v);
}

static struct tl_private_dir *add_dir(struct tl_private *p, const char *path)
{
	struct tl_private_dir *d;
	size_t n = strlen(path);

	if (path[0] != '/' || n >= TL_PRIV_PATH_LEN || p->ndirs == TL_PRIV_MAX)
		return NULL;
	d = &p->dirs[p->ndirs++];
	memset(d, 0, sizeof *d);
	snprintf(d->path, sizeof d->path, "%s", path);
	while (n > 1 && d->path[n - 1] == '/')
		d->path[--n] = '\0';
	d->tmpfs = !strcmp(d->path, "/dev/shm");    /* always a fresh tmpfs, in every plugin */
	return d;
}

/* "a,b,c" into private directories (replacing those there). */
static void set_dirs(struct tl_private *p, const char *list)
{
	char buf[LINE_LEN], *tok, *save = NULL;

	p->ndirs = 0;
	snprintf(buf, sizeof buf, "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		trim(&tok);
		add_dir(p, tok);
	}
}

static void defaults(struct tl_private *p)
{
	if (p->nbases > 0 && p->ndirs == 0) {
		add_dir(p, "/tmp");
		add_dir(p, "/dev/shm");
	}
}

void tl_private_parse_conf(const char *text, size_t len, struct tl_private *p)
{
	char line[LINE_LEN];
	size_t pos = 0;

	while (next_line(text, len, &pos, line, sizeof line)) {
		char *s = line, *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		while (*s) {
			char *tok, *eq;
			int quoted = 0;

			while (*s == ' ' || *s == '\t' || *s == '\r')
				s++;
			if (!*s)
				break;
			tok = s;
			while (*s && (quoted || (*s != ' ' && *s != '\t' && *s != '\r'))) {
				if (*s == '"')
					quoted = !quoted;
				s++;
			}
			if (*s)
				*s++ = '\0';
			if (!(eq = strchr(tok, '=')))
				continue;
			*eq++ = '\0';
			unquote(&eq);
			if (!strcasecmp(tok, "BasePath"))
				add_base(p, eq);
			else if (!strcasecmp(tok, "Dirs"))
				set_dirs(p, eq);
		}
	}
	defaults(p);
}

void tl_private_parse_yaml(const char *text, size_t len, struct tl_private *p)
{
	char line[LINE_LEN];
	size_t pos = 0;
	int confs_indent = -1, item_col = -1, have_confs = 0;
	struct tl_private_dir *item = NULL;

	while (next_line(text, len, &pos, line, sizeof line)) {
		char *s = line, *colon, *val;
		int indent = 0, dash = 0, col;

		for (char *h = line; *h; h++)           /* a comment: '#' at the start or after a blank */
			if (*h == '#' && (h == line || h[-1] == ' ' || h[-1] == '\t')) {
				*h = '\0';
				break;
			}
		while (*s == ' ') {
			s++;
			indent++;
		}
		if (*s == '-' && (s[1] == ' ' || s[1] == '\0')) {
			dash = 1;
			s++;
			while (*s == ' ')
				s++;
		}
		trim(&s);
		if (!*s)
			continue;
		col = (int) (s - line);
		if (!(colon = strchr(s, ':')) || (colon[1] && colon[1] != ' '))
			continue;
		*colon = '\0';
		val = colon + 1;
		trim(&val);
		unquote(&val);

		/* leaving dir_confs: a key not deeper than "dir_confs:" and not one of its items */
		if (confs_indent >= 0 && indent <= confs_indent && !(dash && indent >= confs_indent)) {
			confs_indent = -1;
			item = NULL;
		}
		if (confs_indent >= 0) {
			if (dash) {
				item = NULL;
				item_col = col;
			}
			if (col != item_col)
				continue;
			if (!strcmp(s, "path")) {
				if (!have_confs) {              /* dir_confs supersedes dirs */
					have_confs = 1;
					p->ndirs = 0;
				}
				item = add_dir(p, val);
			} else if (item && !strcmp(s, "base_path")) {
				if (val[0] == '/' && strlen(val) < sizeof item->base)
					snprintf(item->base, sizeof item->base, "%s", val);
			} else if (item && !strcmp(s, "tmpfs")) {
				item->tmpfs = !strcasecmp(val, "true") || !strcasecmp(val, "yes");
			}
			continue;
		}
		if (!strcmp(s, "dir_confs")) {
			confs_indent = indent;
			item = NULL;
			item_col = -1;
		} else if (!strcmp(s, "base_path")) {
			add_base(p, val);
		} else if (!strcmp(s, "dirs") && !have_confs && val[0]) {
			set_dirs(p, val);
		}
	}
	defaults(p);
}

/* Read a regular file (never through a symlink) into buf; returns its length or -1. */
static ssize_t read_file(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	ssize_t n, got = 0;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		tl_seterr(err, errlen, "%s is not a regular file", path);
		close(fd);
		return -1;
	}
	while ((size_t) got < len && (n = read(fd, buf + got, len - (size_t) got)) > 0)
		got += n;
	close(fd);
	return got;
}

int tl_private_load(const char *conf_dir, const char *root, struct tl_private *p, char *err, size_t errlen)
{
	static char text[FILE_MAX];
	static const char *const names[] = { "namespace.yaml", "job_container.conf" };
	char path[TL_PATH_LEN];
	int i;

	memset(p, 0, sizeof *p);
	for (i = 0; i < 2; i++) {
		ssize_t n;
		int w = snprintf(path, sizeof path, "%s%s/%s",
				 (root && strcmp(root, "/")) ? root : "", conf_dir, names[i]);
		if (w < 0 || (size_t) w >= sizeof path)
			continue;
		n = read_file(path, text, sizeof text, err, errlen);
		if (n < 0) {
			if (errno != ENOENT && !err[0])
				tl_seterr(err, errlen, "cannot read %s: %s", path, strerror(errno));
			continue;
		}
		if (i == 0)
			tl_private_parse_yaml(text, (size_t) n, p);
		else
			tl_private_parse_conf(text, (size_t) n, p);
		snprintf(p->source, sizeof p->source, "%s/%s", conf_dir, names[i]);
		return 1;
	}
	return err[0] ? -1 : 0;
}

/* A base path with its first %h or %n replaced by the node name. */
static int expand_base(const char *base, const char *node, char *out, size_t len)
{
	const char *pct = base;
	int n;

	while ((pct = strchr(pct, '%')) && pct[1] != 'h' && pct[1] != 'n')
		pct++;
	if (!pct)
		n = snprintf(out, len, "%s", base);
	else
		n = snprintf(out, len, "%.*s%s%s", (int) (pct - base), base, node ? node : "", pct + 2);
	return (n < 0 || (size_t) n >= len) ? -1 : 0;
}

/* `path` (root-relative) is a directory under root, not a symlink. */
static int is_dir(const char *root, const char *path)
{
	char full[TL_PATH_LEN];
	struct stat st;
	int n = snprintf(full, sizeof full, "%s%s", (root && strcmp(root, "/")) ? root : "", path);

	return n >= 0 && (size_t) n < sizeof full && lstat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The job's directory under `base` as a root-relative path, when it exists: <base>/<job id>, or
 * <base>/<node>/<job id> where Slurm was built with --enable-multiple-slurmd (Debian's packages
 * are: a 22.05 job_container/tmpfs job on node vm had its /tmp at <base>/vm/<job>/.<job>).
 * The node is tried as given and as its short name.
 */
static int job_dir(const char *root, const char *base, unsigned int job_id, const char *node,
		   char *out, size_t len)
{
	char expanded[TL_PATH_LEN], shortname[256];
	const char *dot;
	int n;

	if (expand_base(base, node, expanded, sizeof expanded) < 0)
		return -1;
	n = snprintf(out, len, "%s/%u", expanded, job_id);
	if (n >= 0 && (size_t) n < len && is_dir(root, out))
		return 0;
	if (!node || !node[0] || strchr(node, '/'))
		return -1;
	n = snprintf(out, len, "%s/%s/%u", expanded, node, job_id);
	if (n >= 0 && (size_t) n < len && is_dir(root, out))
		return 0;
	if ((dot = strchr(node, '.')) && dot != node) {
		snprintf(shortname, sizeof shortname, "%.*s", (int) (dot - node), node);
		n = snprintf(out, len, "%s/%s/%u", expanded, shortname, job_id);
		if (n >= 0 && (size_t) n < len && is_dir(root, out))
			return 0;
	}
	return -1;
}

static size_t within(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	if (!strncmp(dir, path, n) && (path[n] == '\0' || path[n] == '/'))
		return n;
	return 0;
}

int tl_private_backing(const struct tl_private *p, const char *root, const char *scratch,
		       unsigned int job_id, const char *node, char *backing, size_t len)
{
	char global[TL_PATH_LEN];
	size_t best = 0;
	int i, live = 0, tmpfs = 0, plain = 0;

	if (!p || !scratch || scratch[0] != '/')
		return 0;
	/* the namespace of this job is live when some base holds its directory */
	for (i = 0; i < p->nbases && !live; i++)
		live = job_dir(root, p->bases[i], job_id, node, global, sizeof global) == 0;
	for (i = 0; i < p->ndirs; i++) {
		size_t n = within(p->dirs[i].path, scratch);
		if (n > best)
			best = n;
	}
	if (best == 0)
		return 0;
	/* of the entries for that directory (dir_confs of several node sets): a live own base first */
	for (i = 0; i < p->ndirs; i++) {
		const struct tl_private_dir *d = &p->dirs[i];
		if (strlen(d->path) != best || !within(d->path, scratch))
			continue;
		if (d->tmpfs)
			tmpfs = 1;
		else if (d->base[0]) {
			if (job_dir(root, d->base, job_id, node, backing, len) == 0)
				return 2;
		} else
			plain = 1;
	}
	if (!live)
		return 0;
	if (tmpfs)
		return 1;
	if (plain && snprintf(backing, len, "%s", global) < (int) len)
		return 2;
	return 0;
}
