/* node-errors.c: system errors worded as Node words them ("ENOENT", "no such file or directory"). */
#ifndef VPCNET_NODE_ERRORS_H
#define VPCNET_NODE_ERRORS_H

#include "buf.h"

const char *errno_name(int e);
void put_errno_text(struct buf *b, int e);

#endif
