/* identity.c - arm hash and XRD_MONINFO (see identity.h); sites rely on the hash being the
 * same as tierlens.sources.slurm.spool.arm_for_job in Python. */
#include "identity.h"

#include <stdio.h>
#include <string.h>

unsigned int tl_fnv1a32(const char *s)
{
	unsigned int h = 2166136261u;
	for (; s && *s; s++) {
		h ^= (unsigned char) *s;
		h *= 16777619u;
	}
	return h;
}

int tl_moninfo(const char *existing, const char *identity, char *out, size_t outlen)
{
	size_t el = existing ? strlen(existing) : 0, il = strlen(identity);
	int n;

	if (el == 0)
		n = snprintf(out, outlen, "%s", identity);
	else if ((el == il && !strcmp(existing, identity))
		 || (el > il && existing[el - il - 1] == ',' && !strcmp(existing + el - il, identity)))
		n = snprintf(out, outlen, "%s", existing);
	else
		n = snprintf(out, outlen, "%s,%s", existing, identity);
	return (n < 0 || (size_t) n >= outlen) ? -1 : 0;
}
