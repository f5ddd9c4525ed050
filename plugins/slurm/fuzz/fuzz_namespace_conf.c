/*
 * fuzz_namespace_conf - Slurm's namespace configuration as the plugin reads it
 * (lib/private.c): the same bytes as job_container.conf and as namespace.yaml, then the
 * decision for a few scratch paths (over a root where nothing exists, so only the parse
 * results drive it).
 */
#include "fuzz_common.h"

#include "../lib/private.h"

static struct tl_private p;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const scratch[] = { "/tmp", "/tmp/x/y", "/dev/shm", "/scratch", "/", "" };
	char backing[TL_PATH_LEN];

	for (int form = 0; form < 2; form++) {
		memset(&p, 0, sizeof p);
		if (form == 0)
			tl_private_parse_conf((const char *) data, size, &p);
		else
			tl_private_parse_yaml((const char *) data, size, &p);
		if (p.ndirs < 0 || p.ndirs > TL_PRIV_MAX || p.nbases < 0 || p.nbases > TL_PRIV_MAX)
			abort();
		for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; i++)
			tl_private_backing(&p, "/nonexistent-tl-fuzz", scratch[i], 4242, "wn%h01", backing,
					   sizeof backing);
	}
	return 0;
}
