/*
 * fuzz_mountinfo - the mount table as the detector reads it (lib/detect.c: line parsing, octal
 * unescaping, longest-prefix choice, then sysfs for the chosen device numbers). Input: the
 * first line is the scratch path (a default when it is not absolute), the rest is
 * proc/self/mountinfo of a root whose sysfs is a real vector's.
 */
#include "fuzz_common.h"

#include "../lib/detect.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static char path[512], scratch[TL_PATH_LEN + 16];
	const char *root = fuzz_vector_root();
	const unsigned char *nl = memchr(data, '\n', size);
	size_t n = nl ? (size_t) (nl - data) : 0;
	struct tl_storage st;

	snprintf(path, sizeof path, "%s/proc/self/mountinfo", root);
	if (n > 0 && data[0] == '/' && n < sizeof scratch && !memchr(data, '\0', n)) {
		memcpy(scratch, data, n);
		scratch[n] = '\0';
	} else {
		snprintf(scratch, sizeof scratch, "/var/spool/slurmd/job42");
	}
	fuzz_write(path, nl ? nl + 1 : data, nl ? size - n - 1 : size);
	tl_detect(scratch, root, &st);
	if (!memchr(st.type, '\0', sizeof st.type) || st.nmodels < 0 || st.nmodels > TL_MAX_MODELS)
		abort();
	return 0;
}
