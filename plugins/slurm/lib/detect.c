/*
 * detect.c - storage detection for the tierlens SPANK plugin (see detect.h).
 *
 * Follows the shared spec (tests/vectors/README.md):
 *   mount containing scratch (longest mount point in <root>/proc/self/mountinfo)
 *   -> network / memory file systems by fstype
 *   -> otherwise <root>/sys/dev/block/MAJ:MIN, resolved inside root
 *   -> partition -> parent disk; md -> RAID level + member models; dm-* -> slaves;
 *      nvme* -> nvme; else queue/rotational 1 -> hdd, 0 -> ssd.
 * Live fallback when mountinfo cannot be read: statfs f_type magic.
 */
#define _GNU_SOURCE
#include "detect.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define MAX_SYMLINKS 40
#define MAX_SLAVES   TL_MAX_MODELS
#define MAX_DEPTH    8

static int is_live(const char *root)
{
	return !root || !root[0] || strcmp(root, "/") == 0;
}

/* root + path into out; root "" or "/" means the live system. */
static int in_root(const char *root, const char *path, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", is_live(root) ? "" : root, path);
	return (n < 0 || (size_t) n >= len) ? -1 : 0;
}

/* Read the first line of a small file, whitespace-stripped at both ends. */
static int read_line(const char *root, const char *path, char *buf, size_t len)
{
	char full[TL_PATH_LEN], tmp[512];
	FILE *f;
	char *s, *e;

	buf[0] = '\0';
	if (in_root(root, path, full, sizeof full) < 0 || !(f = fopen(full, "re")))
		return -1;
	if (!fgets(tmp, sizeof tmp, f)) {
		tmp[0] = '\0';
	}
	fclose(f);
	for (s = tmp; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'; s++)
		;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	snprintf(buf, len, "%s", s);
	return 0;
}

static int exists_in_root(const char *root, const char *path)
{
	char full[TL_PATH_LEN];
	struct stat st;
	return in_root(root, path, full, sizeof full) == 0 && lstat(full, &st) == 0;
}

/*
 * Resolve `path` (absolute, inside root) as realpath(3) would inside a chroot
 * at `root`: symlinks are followed, absolute targets restart at root, and ".."
 * never climbs above it. Missing components are kept as they are.
 */
static int resolve_in_root(const char *root, const char *path, char *out, size_t len)
{
	char rest[TL_PATH_LEN], cur[TL_PATH_LEN], full[TL_PATH_LEN], target[TL_PATH_LEN];
	char comp[256];
	int links = 0;

	if (snprintf(rest, sizeof rest, "%s", path) >= (int) sizeof rest)
		return -1;
	cur[0] = '\0';                          /* "" is the root itself */
	while (rest[0]) {
		char *p = rest, *slash;
		size_t clen;
		struct stat st;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		slash = strchr(p, '/');
		clen = slash ? (size_t) (slash - p) : strlen(p);
		if (clen >= sizeof comp)
			return -1;
		memcpy(comp, p, clen);
		comp[clen] = '\0';
		memmove(rest, p + clen, strlen(p + clen) + 1);

		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *last = strrchr(cur, '/');
			if (last)
				*last = '\0';
			continue;
		}
		{
			size_t cl = strlen(cur);
			if (cl + 1 + clen + 1 > sizeof cur)
				return -1;
			cur[cl] = '/';
			memcpy(cur + cl + 1, comp, clen + 1);
		}
		if (in_root(root, cur, full, sizeof full) < 0)
			return -1;
		if (lstat(full, &st) == 0 && S_ISLNK(st.st_mode)) {
			ssize_t n;
			char joined[TL_PATH_LEN];

			if (++links > MAX_SYMLINKS)
				return -1;
			n = readlink(full, target, sizeof target - 1);
			if (n < 0)
				return -1;
			target[n] = '\0';
			/* drop the link itself: its target is resolved relative to its directory */
			*strrchr(cur, '/') = '\0';
			if (target[0] == '/')
				cur[0] = '\0';
			if (snprintf(joined, sizeof joined, "%s/%s", target, rest) >= (int) sizeof joined)
				return -1;
			memcpy(rest, joined, strlen(joined) + 1);
		}
	}
	if (snprintf(out, len, "%s", cur[0] ? cur : "/") >= (int) len)
		return -1;
	return 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Undo mountinfo's octal escapes (\040 for a space, ...). */
static void unescape(char *s)
{
	char *r = s, *w = s;
	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7'
		    && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char) ((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* Does the mount point `mp` contain `path`? */
static int contains(const char *mp, const char *path)
{
	size_t n = strlen(mp);
	if (strcmp(mp, "/") == 0)
		return 1;
	return strncmp(mp, path, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

struct mount_hit {
	char point[TL_PATH_LEN];
	char fstype[64];
	unsigned int maj, min;
	int found;
};

static int find_mount(const char *root, const char *scratch, struct mount_hit *hit, char *err)
{
	char full[TL_PATH_LEN], line[8192];
	FILE *f;
	size_t best = 0;

	hit->found = 0;
	if (in_root(root, "/proc/self/mountinfo", full, sizeof full) < 0 || !(f = fopen(full, "re"))) {
		tl_seterr(err, TL_ERR_LEN, "cannot read %s: %s", full, strerror(errno));
		return -2;
	}
	while (fgets(line, sizeof line, f)) {
		char mp[TL_PATH_LEN], fstype[64], devno[32];
		char *sep;
		unsigned int maj, min;
		size_t n;

		/* id parent MAJ:MIN root mount-point options [optional...] - fstype source super */
		if (sscanf(line, "%*s %*s %31s %*s %4095s", devno, mp) != 2)
			continue;
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (sscanf(devno, "%u:%u", &maj, &min) != 2)
			continue;
		unescape(mp);
		if (!contains(mp, scratch))
			continue;
		n = strlen(mp);
		if (n >= best) {        /* >=: a later mount on the same point hides the earlier */
			best = n;
			snprintf(hit->point, sizeof hit->point, "%s", mp);
			snprintf(hit->fstype, sizeof hit->fstype, "%s", fstype);
			hit->maj = maj;
			hit->min = min;
			hit->found = 1;
		}
	}
	fclose(f);
	if (!hit->found)
		tl_seterr(err, TL_ERR_LEN, "no mount contains %s", scratch);
	return hit->found ? 0 : -1;
}

static const char *type_of_fstype(const char *fs)
{
	if (!strcmp(fs, "nfs") || !strcmp(fs, "nfs4"))
		return "nfs";
	if (!strcmp(fs, "lustre"))
		return "lustre";
	if (!strcmp(fs, "gpfs"))
		return "gpfs";
	if (!strcmp(fs, "ceph") || !strcmp(fs, "fuse.ceph") || !strcmp(fs, "fuse.ceph-fuse"))
		return "cephfs";
	if (!strcmp(fs, "tmpfs") || !strcmp(fs, "ramfs"))
		return "tmpfs";
	return NULL;
}

static void add_model(struct tl_storage *out, const char *root, const char *disk)
{
	char path[TL_PATH_LEN], model[TL_MODEL_LEN];
	if (out->nmodels >= TL_MAX_MODELS)
		return;
	if (snprintf(path, sizeof path, "%s/device/model", disk) >= (int) sizeof path)
		return;
	if (read_line(root, path, model, sizeof model) == 0 && model[0])
		snprintf(out->models[out->nmodels++], TL_MODEL_LEN, "%s", model);
}

/* A partition's parent disk, or the device itself. `dev` is resolved, root-relative. */
static void whole_disk(const char *root, const char *dev, char *disk, size_t len)
{
	char p[TL_PATH_LEN];
	snprintf(disk, len, "%s", dev);
	if (snprintf(p, sizeof p, "%s/partition", dev) < (int) sizeof p && exists_in_root(root, p)) {
		char *slash = strrchr(disk, '/');
		if (slash && slash != disk)
			*slash = '\0';
	}
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp((const char *) a, (const char *) b);
}

/* Names in <dev>/slaves, sorted; returns how many (at most MAX_SLAVES). */
static int list_slaves(const char *root, const char *dev, char names[][256])
{
	char rel[TL_PATH_LEN], full[TL_PATH_LEN];
	DIR *d;
	struct dirent *e;
	int n = 0;

	if (snprintf(rel, sizeof rel, "%s/slaves", dev) >= (int) sizeof rel
	    || in_root(root, rel, full, sizeof full) < 0 || !(d = opendir(full)))
		return 0;
	while ((e = readdir(d)) && n < MAX_SLAVES) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(names[n++], 256, "%s", e->d_name);
	}
	closedir(d);
	qsort(names, (size_t) n, sizeof names[0], cmp_names);
	return n;
}

static void classify(const char *root, const char *dev, struct tl_storage *out, int depth);

/* Resolve <dev>/slaves/<name> to the slave's device directory. */
static int slave_dev(const char *root, const char *dev, const char *name, char *out, size_t len)
{
	char p[TL_PATH_LEN];
	if (snprintf(p, sizeof p, "%s/slaves/%s", dev, name) >= (int) sizeof p)
		return -1;
	return resolve_in_root(root, p, out, len);
}

/* Type of a whole-disk (or md / dm) device directory, models added to out. */
static void classify(const char *root, const char *devin, struct tl_storage *out, int depth)
{
	char dev[TL_PATH_LEN], p[TL_PATH_LEN], val[64];
	char slaves[MAX_SLAVES][256];
	const char *name;
	int i, n;

	if (depth > MAX_DEPTH) {
		tl_seterr(out->err, TL_ERR_LEN, "device stack deeper than %d at %s", MAX_DEPTH, devin);
		snprintf(out->type, TL_TYPE_LEN, "other");
		return;
	}
	if (++out->visited > TL_MAX_VISITS) {
		tl_seterr(out->err, TL_ERR_LEN, "more than %d devices under the scratch (at %s)",
			  TL_MAX_VISITS, devin);
		snprintf(out->type, TL_TYPE_LEN, "other");
		return;
	}
	whole_disk(root, devin, dev, sizeof dev);
	name = base_name(dev);

	/* md RAID: <dev>/md/level */
	snprintf(p, sizeof p, "%s/md/level", dev);
	if (read_line(root, p, val, sizeof val) == 0) {
		if (!strcmp(val, "raid0") || !strcmp(val, "raid1") || !strcmp(val, "raid5")
		    || !strcmp(val, "raid6") || !strcmp(val, "raid10")) {
			snprintf(out->type, TL_TYPE_LEN, "%s", val);
		} else {
			tl_seterr(out->err, TL_ERR_LEN, "md level '%s' of %s is not a known RAID level", val, name);
			snprintf(out->type, TL_TYPE_LEN, "other");
		}
		n = list_slaves(root, dev, slaves);
		for (i = 0; i < n; i++) {
			char member[TL_PATH_LEN], keep[TL_TYPE_LEN];
			if (slave_dev(root, dev, slaves[i], member, sizeof member) < 0)
				continue;
			/* a member is classified for its model(s) only; the array's level stands */
			snprintf(keep, sizeof keep, "%s", out->type);
			classify(root, member, out, depth + 1);
			snprintf(out->type, TL_TYPE_LEN, "%s", keep);
		}
		if (out->visited > TL_MAX_VISITS)
			snprintf(out->type, TL_TYPE_LEN, "other");
		return;
	}

	/* device mapper (LVM, dm-crypt): follow the slaves */
	if (!strncmp(name, "dm-", 3)) {
		char first[TL_TYPE_LEN] = "";
		n = list_slaves(root, dev, slaves);
		if (n == 0) {
			tl_seterr(out->err, TL_ERR_LEN, "%s has no slaves", name);
			snprintf(out->type, TL_TYPE_LEN, "other");
			return;
		}
		for (i = 0; i < n; i++) {
			char member[TL_PATH_LEN];
			if (slave_dev(root, dev, slaves[i], member, sizeof member) < 0) {
				snprintf(out->type, TL_TYPE_LEN, "other");
				return;
			}
			classify(root, member, out, depth + 1);
			if (i == 0)
				snprintf(first, sizeof first, "%s", out->type);
			else if (strcmp(first, out->type) != 0)
				snprintf(first, sizeof first, "other");   /* mixed stack */
		}
		snprintf(out->type, TL_TYPE_LEN, "%s", first);
		return;
	}

	if (!strncmp(name, "nvme", 4)) {
		snprintf(out->type, TL_TYPE_LEN, "nvme");
		add_model(out, root, dev);
		return;
	}

	add_model(out, root, dev);          /* reported even when the type stays unknown */
	snprintf(p, sizeof p, "%s/queue/rotational", dev);
	if (read_line(root, p, val, sizeof val) == 0 && (!strcmp(val, "1") || !strcmp(val, "0"))) {
		snprintf(out->type, TL_TYPE_LEN, "%s", val[0] == '1' ? "hdd" : "ssd");
		return;
	}
	tl_seterr(out->err, TL_ERR_LEN, "cannot tell what %s is (no md/level, queue/rotational)", name);
	snprintf(out->type, TL_TYPE_LEN, "other");
}

static const char *type_of_magic(long magic)
{
	switch ((unsigned long) magic & 0xffffffffUL) {
	case 0x6969UL:       return "nfs";
	case 0x01021994UL:   return "tmpfs";
	case 0x858458f6UL:   return "tmpfs";     /* ramfs */
	case 0x0BD00BD0UL:   return "lustre";
	case 0x47504653UL:   return "gpfs";
	case 0x00C36400UL:   return "cephfs";
	default:             return NULL;
	}
}

static void normalise(const char *in, char *out, size_t len)
{
	size_t n;
	snprintf(out, len, "%s", in && in[0] ? in : "/tmp");
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
}

int tl_detect(const char *scratch_in, const char *root, struct tl_storage *out)
{
	char scratch[TL_PATH_LEN], rel[TL_PATH_LEN], dev[TL_PATH_LEN];
	struct mount_hit hit;
	const char *t;
	int rc;

	memset(out, 0, sizeof *out);
	snprintf(out->type, TL_TYPE_LEN, "other");
	normalise(scratch_in, rel, sizeof rel);
	if (rel[0] != '/') {
		tl_seterr(out->err, TL_ERR_LEN, "scratch '%s' is not an absolute path", rel);
		return -1;
	}
	/* the scratch path's own symlinks, resolved inside root */
	if (resolve_in_root(root, rel, scratch, sizeof scratch) < 0)
		snprintf(scratch, sizeof scratch, "%s", rel);

	rc = find_mount(root, scratch, &hit, out->err);
	if (rc == -2 && is_live(root)) {
		/* only when mountinfo cannot be read: the file system's magic number */
		struct statfs sfs;
		if (statfs(scratch, &sfs) == 0 && (t = type_of_magic((long) sfs.f_type))) {
			snprintf(out->type, TL_TYPE_LEN, "%s", t);
			out->err[0] = '\0';
			return 0;
		}
	}
	if (rc < 0)
		return -1;
	if ((t = type_of_fstype(hit.fstype))) {
		snprintf(out->type, TL_TYPE_LEN, "%s", t);
		return 0;
	}
	snprintf(rel, sizeof rel, "/sys/dev/block/%u:%u", hit.maj, hit.min);
	if (!exists_in_root(root, rel)) {
		tl_seterr(out->err, TL_ERR_LEN, "%s (%s on %s) has no block device %u:%u",
		       scratch, hit.fstype, hit.point, hit.maj, hit.min);
		return -1;
	}
	if (resolve_in_root(root, rel, dev, sizeof dev) < 0) {
		tl_seterr(out->err, TL_ERR_LEN, "cannot resolve %s", rel);
		return -1;
	}
	classify(root, dev, out, 0);
	if (out->visited > TL_MAX_VISITS) {     /* a graph, not a stack: nothing in it is reliable */
		snprintf(out->type, TL_TYPE_LEN, "other");
		out->nmodels = 0;
	}
	return out->err[0] ? -1 : 0;
}
