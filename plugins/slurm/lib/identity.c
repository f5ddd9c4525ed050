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

/* Crockford base32 as print_sluid writes it; the value of a digit, or -1. */
static int cb32(char c)
{
	static const char map[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	const char *p = c ? strchr(map, c) : NULL;
	return p ? (int) (p - map) : -1;
}

int tl_valid_sluid(const char *s)
{
	int i, d1, d2, d3;

	if (!s || s[0] != 's' || strlen(s) != TL_SLUID_LEN - 1)
		return 0;
	for (i = 1; i < TL_SLUID_LEN - 1; i++)
		if (cb32(s[i]) < 0)
			return 0;
	/* 13 digits carry 65 bits: the first holds only the top 4 of the 64 */
	d1 = cb32(s[1]);
	d2 = cb32(s[2]);
	d3 = cb32(s[3]);
	if (d1 > 15)
		return 0;
	/* the top 12 bits are the cluster */
	return ((d1 << 8) | (d2 << 3) | (d3 >> 2)) != 0;
}

int tl_identity(const char *cluster, unsigned int job_id, const char *sluid, char *out, size_t outlen)
{
	int n;

	if (tl_valid_sluid(sluid))
		n = snprintf(out, outlen, "slurm.%s.%u.%s", cluster ? cluster : "", job_id, sluid);
	else
		n = snprintf(out, outlen, "slurm.%s.%u", cluster ? cluster : "", job_id);
	return (n < 0 || (size_t) n >= outlen) ? -1 : 0;
}

int tl_moninfo_swap(const char *existing, const char *old_id, const char *new_id, char *out, size_t outlen)
{
	size_t el = existing ? strlen(existing) : 0, ol = old_id ? strlen(old_id) : 0;
	int n;

	if (ol && el == ol && !strcmp(existing, old_id))
		n = snprintf(out, outlen, "%s", new_id);
	else if (ol && el > ol && existing[el - ol - 1] == ',' && !strcmp(existing + el - ol, old_id))
		n = snprintf(out, outlen, "%.*s%s", (int) (el - ol), existing, new_id);
	else
		return tl_moninfo(existing, new_id, out, outlen);
	return (n < 0 || (size_t) n >= outlen) ? -1 : 0;
}
