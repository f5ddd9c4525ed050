/* err.c - see err.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

void tl_seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	if (!err || !len || err[0])     /* keep the first error: it is the cause */
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}
