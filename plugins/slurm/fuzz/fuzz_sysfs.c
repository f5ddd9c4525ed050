/*
 * fuzz_sysfs - the sysfs reads of the detector (lib/detect.c: small attribute files, symlinks
 * resolved inside the root, md members, device-mapper slaves, partitions). The root is the
 * vector "dm-crypt on md raid6"; the input (newline-separated fields) replaces:
 *   1 md1/md/level   2 sda's queue/rotational   3 sda's device/model
 *   4 the target of sys/dev/block/253:3 (kept when empty)
 *   5.. pairs NAME, TARGET: extra symlinks in md1/slaves and dm-3/slaves (alternately)
 */
#include "fuzz_common.h"

#include <dirent.h>

#include "../lib/detect.h"

#define MAX_FIELDS 40
#define MD1  "/sys/devices/virtual/block/md1"
#define DM3  "/sys/devices/virtual/block/dm-3"
#define SDA  "/sys/devices/pci0000:00/0000:00:17.0/ata0/host0/target0:0:0/0:0:0:0/block/sda"

static char created[MAX_FIELDS][4096];
static int ncreated;

static void in_root(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s%s", fuzz_vector_root(), rel);
}

static void put(const char *rel, const char *data, size_t len)
{
	char p[4096];
	in_root(p, sizeof p, rel);
	fuzz_write(p, data, len);
}

static void relink(const char *rel, const char *target)
{
	char p[4096];
	in_root(p, sizeof p, rel);
	unlink(p);
	if (symlink(target, p) == 0 && ncreated < MAX_FIELDS)
		snprintf(created[ncreated++], sizeof created[0], "%s", p);
}

static int good_name(const char *s)
{
	return s[0] && strlen(s) < 64 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char text[1 << 16];
	char *field[MAX_FIELDS], p[4096];
	size_t flen[MAX_FIELDS];
	int nf = 0;
	struct tl_storage st;

	if (size >= sizeof text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *s = text, *nl; s && nf < MAX_FIELDS; s = nl ? nl + 1 : NULL) {
		nl = memchr(s, '\n', (size_t) (text + size - s));
		field[nf] = s;
		flen[nf] = nl ? (size_t) (nl - s) : (size_t) (text + size - s);
		if (nl)
			*nl = '\0';
		nf++;
	}
	/* undo the previous input's links */
	while (ncreated > 0)
		unlink(created[--ncreated]);
	relink("/sys/dev/block/253:3", "../../devices/virtual/block/dm-3");
	ncreated = 0;

	put(MD1 "/md/level", nf > 0 ? field[0] : "raid6", nf > 0 ? flen[0] : 5);
	put(SDA "/queue/rotational", nf > 1 ? field[1] : "1", nf > 1 ? flen[1] : 1);
	put(SDA "/device/model", nf > 2 ? field[2] : "ST4000", nf > 2 ? flen[2] : 6);
	if (nf > 3 && field[3][0] && strlen(field[3]) == flen[3]) {
		relink("/sys/dev/block/253:3", field[3]);
		ncreated--;       /* the device link is restored, not removed */
	}
	for (int i = 4; i + 1 < nf; i += 2) {
		if (!good_name(field[i]) || strlen(field[i + 1]) != flen[i + 1] || !field[i + 1][0])
			continue;
		char full[4096];
		struct stat sb;
		snprintf(p, sizeof p, "%s/slaves/%s", ((i / 2) % 2) ? DM3 : MD1, field[i]);
		in_root(full, sizeof full, p);
		if (lstat(full, &sb) == 0)          /* one of the vector's own members: keep it */
			continue;
		relink(p, field[i + 1]);
	}
	tl_detect("/var/spool/slurmd/job42", fuzz_vector_root(), &st);
	if (!memchr(st.type, '\0', sizeof st.type) || st.nmodels < 0 || st.nmodels > TL_MAX_MODELS)
		abort();
	return 0;
}
