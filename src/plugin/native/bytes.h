/* Text as bytes: the byte type, and the ASCII classes the JSON and HTTP readers test for. */
#ifndef VPCNET_BYTES_H
#define VPCNET_BYTES_H

#include <stdbool.h>

typedef unsigned char u8;

static inline bool is_digit(u8 c) { return c >= '0' && c <= '9'; }
static inline bool is_hex(u8 c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

#endif
