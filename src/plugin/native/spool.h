/* spool.c: the durable DEL spool (src/plugin/spool.ts). */
#ifndef VPCNET_SPOOL_H
#define VPCNET_SPOOL_H

#include <stddef.h>

#include "buf.h"

/* 0 once the request is durably in `dir`; -1 with Node's wording of the failure in `why`. */
int spool_del(const char *dir, const char *data, size_t len, struct buf *why);

#endif
