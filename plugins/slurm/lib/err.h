/*
 * err.h - the tierlens plugin's error strings: fixed-size, caller-owned, first cause kept.
 */
#ifndef TIERLENS_ERR_H
#define TIERLENS_ERR_H

#include <stddef.h>

#define TL_ERR_LEN 512

/* printf into err unless it already holds a message (the first error is the cause). */
void tl_seterr(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
